package wgslcheck

import (
	"context"
	"fmt"

	"github.com/fp8lab/fp8lab/attention"
	"github.com/fp8lab/fp8lab/internal/simcase"
	"github.com/fp8lab/fp8lab/wgsl"
)

// CheckSimDecode runs every case of simcase.Cases(maxTokens) through SimDecode
// and attention.Run and counts the outputs equal bit for bit (one Check
// per case; no hardware capture: EqualHW is -1).
func CheckSimDecode(ctx context.Context, r *wgsl.Runner, seed uint64, maxTokens int) ([]Check, error) {
	var checks []Check
	for i, c := range simcase.Cases(maxTokens) {
		q, qs, kv, err := simcase.Inputs(c, seed+uint64(i))
		if err != nil {
			return nil, err
		}
		got, err := r.SimDecode(ctx, c.Cfg, q, qs, kv)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", c.Name, err)
		}
		want, err := attention.Run(ctx, c.Cfg, q, qs, kv)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", c.Name, err)
		}
		ck := Check{Name: fmt.Sprintf("attention decode %s, %d tokens", c.Name, c.Tokens), Total: len(got), EqualHW: -1}
		for j := range got {
			if sameF32(float32(got[j]), float32(want[j])) {
				ck.EqualModel++
			}
		}
		checks = append(checks, ck)
	}
	return checks, nil
}
