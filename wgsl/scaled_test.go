package wgsl

import (
	"context"
	"math"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fp8lab/fp8lab/accum"
	"github.com/fp8lab/fp8lab/accum/golden"
)

// The block-scaled and narrow-format steps in WGSL equal accum's
// instructions on random inputs (specials, zero and NaN scales included),
// every format pair of kind::f8f6f4 / mxf8f6f4 and every FP4 kind.
func TestScaledSteps(t *testing.T) {
	r := testGPU(t)
	names := ScaledInstructions()
	if len(names) < 60 {
		t.Fatalf("%d scaled instructions, want the 25 f8f6f4 pairs x (tcgen05, tcgen05 mx, sm120 mx) and the FP4 kinds", len(names))
	}
	checks, err := r.CheckScaled(context.Background(), 1, 2048)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range checks {
		if !c.OK() {
			t.Errorf("%s: %d/%d equal to accum", c.Name, c.EqualModel, c.Total)
		}
	}
	t.Logf("%d instructions x 2048 random steps, all equal to accum", len(checks))
	// Instructions the kernel does not run are refused.
	for _, name := range []string{"sm100.tcgen05.f8f6f4.e4m3.e4m3.f16", "sm80.mma.sync.tf32.f32"} {
		if _, err := r.ScaledStep(context.Background(), name, ScaledInput{K: 32}); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}

// The MMA-Sim peer records of the block-scaled instructions through the
// GPU: every record the named model reproduces, the GPU reproduces too.
func TestScaledPeerRecords(t *testing.T) {
	r := testGPU(t)
	dir := filepath.Join("..", "..", "shared", "golden", "mmasim")
	files, err := filepath.Glob(filepath.Join(dir, "*.tsv.gz"))
	if err != nil || len(files) == 0 {
		t.Skipf("no peer records in %s (%v)", dir, err)
	}
	supported := map[string]bool{}
	for _, n := range ScaledInstructions() {
		supported[n] = true
	}
	total := 0
	for _, path := range files {
		base := filepath.Base(path)
		if !strings.HasPrefix(base, "tcgen05_") && !strings.HasPrefix(base, "mma_sync_sm120_") {
			continue
		}
		f, err := golden.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		pf := f.Peer
		name, err := golden.PeerModel(pf)
		if err != nil {
			t.Fatalf("%s: %v", base, err)
		}
		if !supported[name] {
			continue // f16 accumulators
		}
		m, _ := accum.LookupInstruction(name)
		K := m.Info().K
		in := ScaledInput{K: K}
		var want []uint32
		for _, rec := range pf.Records {
			if len(rec.A) != K {
				continue
			}
			d := uint32(m.Step(rec.A, rec.B, rec.SA, rec.SB, rec.C))
			if d != uint32(rec.D) && !(math.IsNaN(float64(math.Float32frombits(d))) && math.IsNaN(float64(math.Float32frombits(uint32(rec.D))))) {
				continue // a documented peer deviation: the model, not the record, is the reference here
			}
			for k := 0; k < K; k++ {
				in.A = append(in.A, uint8(rec.A[k]))
				in.B = append(in.B, uint8(rec.B[k]))
			}
			in.SA = append(in.SA, rec.SA...)
			in.SB = append(in.SB, rec.SB...)
			in.C = append(in.C, uint32(rec.C))
			want = append(want, uint32(rec.D))
		}
		if len(want) == 0 {
			t.Errorf("%s: no record to check", base)
			continue
		}
		got, err := r.ScaledStep(context.Background(), name, in)
		if err != nil {
			t.Fatalf("%s: %v", base, err)
		}
		bad := 0
		for i := range got {
			if !sameF32(math.Float32frombits(got[i]), math.Float32frombits(want[i])) {
				if bad++; bad <= 3 {
					t.Errorf("%s record %d: GPU %#08x, MMA-Sim %#08x", base, i, got[i], want[i])
				}
			}
		}
		total += len(want)
		t.Logf("%s (%s): %d/%d records equal on the GPU", base, name, len(want)-bad, len(want))
	}
	if total == 0 {
		t.Fatal("no block-scaled peer record checked")
	}
}
