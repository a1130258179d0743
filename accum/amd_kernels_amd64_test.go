//go:build amd64 && !purego

package accum

import (
	"math/rand/v2"
	"testing"
)

// TestAMDAsmEqualsGo: each CDNA3 FDPA instruction gives the same bits
// through ChainCodes with its assembly kernels (fdpaSums16, xf32Sums4,
// fdpaPairs8) and with the pure-Go path (haveStepAsm off), on random codes
// with NaN, inf, zeros, subnormals and the largest magnitudes of both
// signs, mixed within groups, in chains of every length up to 3K+G.
func TestAMDAsmEqualsGo(t *testing.T) {
	if !haveStepAsm {
		t.Skip("no assembly kernel on this CPU")
	}
	r := rand.New(rand.NewPCG(67, 68))
	for _, name := range []string{
		"cdna3.mfma.f16.f32", "cdna3.mfma.bf16.f32", "cdna3.mfma.xf32.f32",
		"cdna3.mfma.fp8.fp8.f32", "cdna3.mfma.fp8.bf8.f32", "cdna3.mfma.bf8.bf8.f32",
	} {
		m0, err := LookupInstruction(name)
		if err != nil {
			t.Fatal(err)
		}
		am := m0.(*amdInstr)
		m, in := Instruction(am), am.info
		for n := 0; n <= 3*in.K+in.Group; n++ {
			for trial := range 12 {
				a, b := make([]uint64, n), make([]uint64, n)
				for i := range a {
					kind := trial % 6
					if trial >= 6 {
						kind = r.IntN(6)
					}
					a[i], b[i] = amdEdgeCode(r, in.A, kind), amdEdgeCode(r, in.B, kind)
				}
				c := amdEdgeCode(r, in.C, []int{0, 3, 4, 5}[trial%4])
				if trial == 11 {
					c = amdEdgeCode(r, in.C, 1)
				}
				promote := []int{0, in.K}[r.IntN(2)]
				haveStepAsm = true
				got, err := chainCodesOfWidth(m, codeBits[in.A], a, b, c, promote)
				haveStepAsm = false
				want, err2 := chainCodesOfWidth(m, codeBits[in.A], a, b, c, promote)
				haveStepAsm = true
				if err != nil || err2 != nil {
					t.Fatal(err, err2)
				}
				if got != want {
					t.Fatalf("%s n=%d: assembly %08x, Go %08x\na=%x\nb=%x\nc=%x promote=%d", name, n, got, want, a, b, c, promote)
				}
			}
		}
	}
}
