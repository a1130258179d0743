package main

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"unsafe"

	"github.com/fp8lab/fp8lab/accum"
	"github.com/fp8lab/fp8lab/fp8"
	"github.com/fp8lab/fp8lab/sim"
)

// modelJSON describes a Model or an Instruction for the Python side.
type modelJSON struct {
	Name string `json:"name"`
	// Kind is "model" (accum.Model: 16-bit codes of one format, c and d
	// FP32 values) or "instruction" (accum.Instruction: codes of A and B,
	// optional block scales, c and d bit patterns of C).
	Kind   string `json:"kind"`
	Family string `json:"family"`
	A      string `json:"a"`
	B      string `json:"b"`
	C      string `json:"c"`
	K      int    `json:"k"`
	L      int    `json:"l,omitempty"`
	F      int    `json:"f,omitempty"`
	Rho    string `json:"rho,omitempty"`
	EZero  int    `json:"e_zero,omitempty"`
	Scale  string `json:"scale,omitempty"`
	Block  int    `json:"block,omitempty"`
	Step   bool   `json:"step"`
	// Variants are the reasons of the documented peer variants, in the
	// order fp8lab_instr's variant argument numbers them (from 1).
	Variants []string `json:"variants,omitempty"`
	Doc      string   `json:"doc"`
	Source   string   `json:"source"`
}

type formatJSON struct {
	Name     string  `json:"name"`
	Bits     int     `json:"bits"`
	Signed   bool    `json:"signed"`
	Inf      bool    `json:"inf"`
	FracBits int     `json:"frac_bits"`
	Emin     int     `json:"emin"`
	Emax     int     `json:"emax"`
	Max      float64 `json:"max"`
}

// infoJSON is what fp8lab_info returns: the build, every model and
// instruction, every format.
func infoJSON() ([]byte, error) {
	b := sim.Build()
	out := struct {
		Version   string       `json:"version"`
		Revision  string       `json:"revision"`
		GoVersion string       `json:"go_version"`
		Platform  string       `json:"platform"`
		Models    []modelJSON  `json:"models"`
		Formats   []formatJSON `json:"formats"`
		// FP4EminReason is accum.ReasonFP4Emin: a variant whose reason
		// contains it counts only on records a peer file lists as
		// e2m1-emin-sensitive (accum/golden's rule).
		FP4EminReason string `json:"fp4_emin_reason"`
	}{Version: b.Version, Revision: b.Revision, GoVersion: b.GoVersion, Platform: b.Platform, FP4EminReason: accum.ReasonFP4Emin}
	for _, m := range accum.Models() {
		in := m.Info()
		if in.In == fp8.FormatTF32 {
			// A tf32 Model reads 16-bit codes (bf16 values); the
			// instruction of the same name reads full tf32 operands.
			if ins, err := accum.LookupInstruction(in.Name); err == nil {
				out.Models = append(out.Models, instrJSON(ins))
				continue
			}
		}
		_, step := m.(accum.Stepper)
		f := in.In.String()
		c := "f32"
		if in.Kind != accum.KindIEEE {
			c = in.Step.OutFormat().String()
		}
		out.Models = append(out.Models, modelJSON{Name: in.Name, Kind: "model", Family: string(in.Kind), A: f, B: f, C: c,
			K: in.K, L: in.Step.L, F: in.Step.F, Rho: ruleName(in), EZero: in.Step.EZero, Step: step, Doc: in.Doc, Source: in.Source})
	}
	for _, m := range accum.Instructions() {
		out.Models = append(out.Models, instrJSON(m))
	}
	for _, f := range fp8.Formats() {
		out.Formats = append(out.Formats, formatJSON{Name: f.String(), Bits: f.CodeBits(), Signed: f.Signed(), Inf: f.HasInf(),
			FracBits: f.FracBits(), Emin: f.Emin(), Emax: f.Emax(), Max: f.MaxValue()})
	}
	return json.Marshal(out)
}

func ruleName(in accum.Info) string {
	if in.Kind == accum.KindIEEE {
		return ""
	}
	return in.Step.Rho.String()
}

func instrJSON(m accum.Instruction) modelJSON {
	in := m.Info()
	j := modelJSON{Name: in.Name, Kind: "instruction", Family: string(in.Kind), A: in.A, B: in.B, C: in.C, K: in.K,
		L: in.L, F: in.F, EZero: in.EZero, Scale: in.Scale, Block: in.Block, Step: true, Doc: in.Doc, Source: in.Source}
	if in.L > 0 {
		j.Rho = in.Rho.String()
	}
	if pv, ok := m.(accum.PeerVarianter); ok {
		for _, v := range pv.PeerVariants() {
			j.Variants = append(j.Variants, v.Reason)
		}
	}
	return j
}

// checkCodes returns an error naming the first code of x (rows of k) that
// is not a code of format f. Codes are OR-reduced a block at a time (one
// operation an element), and only a block with a bad code is searched; ctx
// is looked at between blocks.
func checkCodes[T accum.Code](ctx context.Context, what string, x []T, k int, f fp8.Format) error {
	return checkWidth(ctx, what, x, k, f.String(), f.CodeBits())
}

func checkWidth[T accum.Code](ctx context.Context, what string, x []T, k int, name string, bits int) error {
	var zero T
	if bits >= 8*int(unsafe.Sizeof(zero)) {
		return nil // every value of T is a code
	}
	const block = 1 << 16
	for lo := 0; lo < len(x); lo += block {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		hi := min(lo+block, len(x))
		var or T
		for _, v := range x[lo:hi] {
			or |= v
		}
		if uint64(or)>>bits == 0 {
			continue
		}
		for i := lo; i < hi; i++ {
			if uint64(x[i])>>bits != 0 {
				return fmt.Errorf("%s[%d, %d] = %#x is not a %s code (%d bits)", what, i/max(k, 1), i%max(k, 1), uint64(x[i]), name, bits)
			}
		}
	}
	return nil
}

// chainModel computes rows output elements of the model named name:
// out[r] = accum.Chain(m, a[r], b[r], c[r], promote), or with step the one
// instruction Stepper.Step(a[r], b[r], c[r]) (k at most the model's K).
// a and b hold rows × k codes of the model's input format, row major; c
// holds rows FP32 accumulators (nil: +0). In gemm mode a holds rows codes
// rows, b cols rows, and out[r·cols + j] is row r of a against row j of b
// with c[r·cols + j].
func chainModel[T accum.Code](ctx context.Context, name string, a, b []T, rows, cols, k int, gemm bool, c, out []float32, promote int, step bool, threads int) error {
	m, err := accum.Lookup(name)
	if err != nil {
		return err
	}
	in := m.Info()
	if err := checkShapes(len(a), len(b), len(c), len(out), rows, cols, k, gemm); err != nil {
		return err
	}
	if err := checkCodes(ctx, "a", a, k, in.In); err != nil {
		return err
	}
	if err := checkCodes(ctx, "b", b, k, in.In); err != nil {
		return err
	}
	var st accum.Stepper
	if step {
		var ok bool
		if st, ok = m.(accum.Stepper); !ok {
			return fmt.Errorf("model %s has no single-instruction step (an IEEE baseline): use the chain", name)
		}
		if k > in.K {
			return fmt.Errorf("one instruction of %s takes at most K = %d elements, got %d", name, in.K, k)
		}
		if promote != 0 {
			return fmt.Errorf("promotion %d given for a single instruction of %s: promotion applies to chains", promote, name)
		}
	} else if err := accum.CheckPromotion(m, promote); err != nil {
		return err
	}
	n := rows
	if gemm {
		n = rows * cols
	}
	return parallelRows(ctx, n, threads, func(lo, hi int) error {
		ba, bb := make([]uint16, k), make([]uint16, k)
		for r := lo; r < hi; r++ {
			ia, ib := r, r
			if gemm {
				ia, ib = r/cols, r%cols
			}
			xa, xb := ba, bb
			xa = widen16(xa, a[ia*k:ia*k+k])
			xb = widen16(xb, b[ib*k:ib*k+k])
			var cr float32
			if c != nil {
				cr = c[r]
			}
			if st != nil {
				out[r] = st.Step(xa, xb, cr)
			} else {
				out[r] = accum.Chain(m, xa, xb, cr, promote)
			}
		}
		return nil
	})
}

// widen16 returns x as uint16 codes: x itself when it is []uint16, else
// buf filled with x.
func widen16[T accum.Code](buf []uint16, x []T) []uint16 {
	switch y := any(x).(type) {
	case []uint16:
		return y
	case []uint8:
		buf = buf[:len(y)]
		for i, v := range y {
			buf[i] = uint16(v)
		}
		return buf
	}
	for i, v := range x {
		buf[i] = uint16(v)
	}
	return buf
}

func checkShapes(na, nb, nc, nout, rows, cols, k int, gemm bool) error {
	if rows < 0 || cols < 0 || k < 0 {
		return fmt.Errorf("negative shape: %d rows, %d columns, K = %d", rows, cols, k)
	}
	nOut, wantB := rows, rows*k
	if gemm {
		nOut, wantB = rows*cols, cols*k
	}
	switch {
	case na != rows*k:
		return fmt.Errorf("a holds %d codes, want %d (%d rows × K = %d)", na, rows*k, rows, k)
	case nb != wantB:
		return fmt.Errorf("b holds %d codes, want %d", nb, wantB)
	case nc != 0 && nc != nOut:
		return fmt.Errorf("c holds %d values, want %d (one per output)", nc, nOut)
	case nout != nOut:
		return fmt.Errorf("out holds %d values, want %d", nout, nOut)
	}
	return nil
}

// peerFormat returns the fp8 format of a peer format name (f64 has none:
// FormatInvalid and 64 bits).
func peerBits(name string) int {
	switch name {
	case "f64":
		return 64
	case "f32", "tf32":
		return 32
	case "f16", "bf16":
		return 16
	}
	if f, err := fp8.ParseFormat(name); err == nil {
		return f.CodeBits()
	}
	return 64
}

func checkBits[T accum.Code](ctx context.Context, what string, x []T, k int, format string) error {
	return checkWidth(ctx, what, x, k, format, peerBits(format))
}

// chainInstr computes rows output elements of the instruction named name:
// out[r] = accum.ChainCodes(m, a[r], b[r], sa[r], sb[r], c[r], promote) or,
// with step, one instruction m.Step (variant v ≥ 1: the v-th documented
// peer variant's step instead). a and b hold rows × k codes of the
// instruction's A and B formats; sa and sb rows × ⌈k/Block⌉ scale codes
// (nil when unscaled); c and out rows bit patterns of the C format.
func chainInstr[T accum.Code](ctx context.Context, name string, a, b []T, rows, k int, sa, sb []uint8, c, out []uint64, promote int, step bool, variant int, threads int) error {
	m, err := accum.LookupInstruction(name)
	if err != nil {
		return err
	}
	in := m.Info()
	if err := checkShapes(len(a), len(b), len(c), len(out), rows, 0, k, false); err != nil {
		return err
	}
	if err := checkBits(ctx, "a", a, k, in.A); err != nil {
		return err
	}
	if err := checkBits(ctx, "b", b, k, in.B); err != nil {
		return err
	}
	if c != nil {
		if err := checkBits(ctx, "c", c, 1, in.C); err != nil {
			return err
		}
	}
	nsc := 0
	if in.Scale != "" {
		nsc = (k + in.Block - 1) / in.Block
		if len(sa) != rows*nsc || len(sb) != rows*nsc {
			return fmt.Errorf("%s takes one %s scale per %d elements: %d scales per row, want scale arrays of %d, got %d and %d",
				name, in.Scale, in.Block, nsc, rows*nsc, len(sa), len(sb))
		}
		sf, _ := fp8.ParseFormat(in.Scale)
		if err := checkCodes(ctx, "scale_a", sa, nsc, sf); err != nil {
			return err
		}
		if err := checkCodes(ctx, "scale_b", sb, nsc, sf); err != nil {
			return err
		}
	} else if len(sa) != 0 || len(sb) != 0 {
		return fmt.Errorf("%s is not block-scaled: give no scales", name)
	}
	stepFn := m.Step
	if variant != 0 {
		pv, ok := m.(accum.PeerVarianter)
		if !ok || variant < 1 || variant > len(pv.PeerVariants()) {
			return fmt.Errorf("%s has no peer variant %d", name, variant)
		}
		if !step {
			return fmt.Errorf("peer variants are single instructions: use step")
		}
		stepFn = pv.PeerVariants()[variant-1].Step
	}
	if step {
		if k > in.K {
			return fmt.Errorf("one instruction of %s takes at most K = %d elements, got %d", name, in.K, k)
		}
		if promote != 0 {
			return fmt.Errorf("promotion %d given for a single instruction of %s: promotion applies to chains", promote, name)
		}
	}
	return parallelRows(ctx, rows, threads, func(lo, hi int) error {
		wa, wb := make([]uint64, k), make([]uint64, k)
		for r := lo; r < hi; r++ {
			xa, xb := a[r*k:r*k+k], b[r*k:r*k+k]
			var xsa, xsb []uint8
			if nsc > 0 {
				xsa, xsb = sa[r*nsc:r*nsc+nsc], sb[r*nsc:r*nsc+nsc]
			}
			var cr uint64
			if c != nil {
				cr = c[r]
			}
			if step {
				for i := range xa {
					wa[i], wb[i] = uint64(xa[i]), uint64(xb[i])
				}
				out[r] = stepFn(wa, wb, xsa, xsb, cr)
				continue
			}
			d, err := accum.ChainCodes(m, xa, xb, xsa, xsb, cr, promote)
			if err != nil {
				return err
			}
			out[r] = d
		}
		return nil
	})
}

// f32bits is math.Float32bits for the tests.
func f32bits(x float32) uint64 { return uint64(math.Float32bits(x)) }
