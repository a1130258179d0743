package experiments

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/fp8lab/fp8lab/attention"
)

// attnFileExact, query head by query head on every core, gives the bits of
// one attention.Reference call over all heads: GQA and MHA, sinks, a causal
// prefill with positions, a mask, V's head_dim apart from K's.
func TestAttnFileExactEqualsReference(t *testing.T) {
	for _, c := range []struct {
		dm     attnDims
		sinks  bool
		causal bool
		mask   bool
	}{
		{dm: attnDims{mq: 1, n: 3000, qh: 8, kvh: 2, d: 64, dv: 64}},
		{dm: attnDims{mq: 1, n: 2000, qh: 4, kvh: 4, d: 128, dv: 128}, sinks: true},
		{dm: attnDims{mq: 17, n: 500, qh: 6, kvh: 3, d: 64, dv: 64}, causal: true},
		{dm: attnDims{mq: 5, n: 300, qh: 2, kvh: 1, d: 128, dv: 64}, mask: true, sinks: true},
	} {
		t.Run(fmt.Sprintf("%+v_sinks%v_causal%v_mask%v", c.dm, c.sinks, c.causal, c.mask), func(t *testing.T) {
			r := rand.New(rand.NewPCG(5, uint64(c.dm.n)))
			fill := func(n int, mu float64) []float32 {
				x := make([]float32, n)
				for i := range x {
					x[i] = float32(mu + 2*r.NormFloat64())
				}
				return x
			}
			dm := c.dm
			in := &attnFileInputs{attnDims: dm, q: fill(dm.mq*dm.qh*dm.d, 0), k: fill(dm.n*dm.kvh*dm.d, 0), v: fill(dm.n*dm.kvh*dm.dv, 0.5)}
			cfg := attention.Config{HeadDim: dm.d, VDim: dm.dv, QHeads: dm.qh, KVHeads: dm.kvh, Causal: c.causal}
			if c.sinks {
				for range dm.qh {
					cfg.Sinks = append(cfg.Sinks, 3*r.NormFloat64())
				}
			}
			if c.mask {
				cfg.Mask = make([]bool, dm.mq*dm.n)
				for i := range cfg.Mask {
					cfg.Mask[i] = r.IntN(4) != 0
				}
				cfg.Mask[0] = false
			}
			want, err := attention.Reference(context.Background(), cfg, f64s(in.q), f64s(in.k), f64s(in.v), dm.mq, dm.n)
			if err != nil {
				t.Fatal(err)
			}
			got, err := attnFileExact(context.Background(), cfg, in)
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(want) {
				t.Fatalf("%d outputs, want %d", len(got), len(want))
			}
			for i := range want {
				if math.Float64bits(got[i]) != math.Float64bits(want[i]) {
					t.Fatalf("element %d: %v, Reference gives %v", i, got[i], want[i])
				}
			}
		})
	}
	t.Run("cancelled", func(t *testing.T) {
		dm := attnDims{mq: 1, n: 100, qh: 4, kvh: 2, d: 64, dv: 64}
		in := &attnFileInputs{attnDims: dm, q: make([]float32, 4*64), k: make([]float32, 100*2*64), v: make([]float32, 100*2*64)}
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		if _, err := attnFileExact(ctx, attention.Config{HeadDim: 64, QHeads: 4, KVHeads: 2}, in); !errors.Is(err, context.Canceled) {
			t.Fatalf("err = %v, want context.Canceled", err)
		}
	})
}
