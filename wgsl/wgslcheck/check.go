// Package wgslcheck checks the kernels of package wgsl bit for bit: against
// the H200 capture files of package accum/golden (CheckCaptures), against
// accum on random batches of every emulated tensor-core model (CheckRandom)
// and block-scaled instruction (CheckScaled), against package fp8 on every
// narrow format (CheckNarrow), and the attention simulator's decode against
// attention.Run (CheckSimDecode). Each returns one Check per file, model,
// format or configuration; a Check that is not OK is a failure of the
// kernel (or of the model), never an error: errors are the device's or the
// input files'. cmd/gpucheck and the gpu-accum experiment report them. The
// verification lives here, not in package wgsl (the GPU runtime), which
// does not read the captures.
package wgslcheck

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"path/filepath"
	"strings"

	"github.com/fp8lab/fp8lab/accum"
	"github.com/fp8lab/fp8lab/accum/golden"
	"github.com/fp8lab/fp8lab/fp8"
	"github.com/fp8lab/fp8lab/wgsl"
)

// Check is the outcome of one bit-exactness check: Total results, of which
// EqualHW equal the hardware capture (-1 when there is none) and EqualModel
// equal the Go model (accum or fp8).
type Check struct {
	Name       string `json:"name"`
	Total      int    `json:"total"`
	EqualHW    int    `json:"equal_hw"`
	EqualModel int    `json:"equal_model"`
}

// OK reports whether every result was equal.
func (c Check) OK() bool {
	return c.EqualModel == c.Total && (c.EqualHW < 0 || c.EqualHW == c.Total)
}

func sameF32(got float32, want float32) bool {
	if math.IsNaN(float64(want)) {
		return math.Float32bits(got) == accum.NaN32
	}
	return math.Float32bits(got) == math.Float32bits(want)
}

// modelChain is what Chain computes, with accum: accum.Chain of each row.
func modelChain(m accum.Model, in wgsl.ChainInput, promote int) []float32 {
	out := make([]float32, len(in.C))
	a, b := make([]uint16, in.K), make([]uint16, in.K)
	for i := range out {
		for k := 0; k < in.K; k++ {
			a[k], b[k] = uint16(in.A[i*in.K+k]), uint16(in.B[i*in.K+k])
		}
		out[i] = accum.Chain(m, a, b, in.C[i], promote)
	}
	return out
}

// CheckCaptures runs the H200 capture files of dir (see package
// accum/golden) through the GPU: every record whose model is emulated (one
// Check per file, against the H200's d and against accum; the chain kernel's
// FP8 models, and the bf16/f16 steps with c through the simulator's 16-bit
// step), the long
// contractions' every32 and every128 outputs, and the conversion tables
// (the encoder at every range boundary ±2 ulps, the decoder on all codes).
func CheckCaptures(ctx context.Context, r *wgsl.Runner, dir string) ([]Check, error) {
	files, err := golden.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var checks []Check
	for _, f := range files {
		switch f.Kind {
		case golden.KindRecords:
			rf := f.Records
			e, err := wgsl.LookupEmulation(rf.Model)
			if err != nil {
				continue // not emulated
			}
			var got, want []float32
			if e.Bits == 16 {
				// 16-bit models: the simulator's step (tfdpa_step16), on
				// step-with-c records of whole steps.
				if rf.Kind != golden.StepWithC || rf.L > 32 || rf.L%e.L != 0 {
					continue
				}
				if got, err = records16(ctx, r, rf); err != nil {
					return nil, err
				}
				m := accum.MustLookup(rf.Model)
				for _, rec := range rf.Records {
					want = append(want, m.Dot(rec.A, rec.B, math.Float32frombits(rec.C)))
				}
			} else {
				in, promote := recordsInput(rf)
				if got, err = r.Chain(ctx, rf.Model, in, promote); err != nil {
					return nil, err
				}
				want = modelChain(accum.MustLookup(rf.Model), in, promote)
			}
			c := Check{Name: filepath.Base(rf.Path) + " (" + rf.Model + ")", Total: len(got)}
			for i, rec := range rf.Records {
				if math.Float32bits(got[i]) == rec.D {
					c.EqualHW++
				}
				if sameF32(got[i], want[i]) {
					c.EqualModel++
				}
			}
			checks = append(checks, c)
		case golden.KindLong:
			lf := f.Long
			in := longInput(lf)
			for _, promote := range []int{32, 128} {
				got, err := r.Chain(ctx, lf.Model, in, promote)
				if err != nil {
					return nil, err
				}
				want := modelChain(accum.MustLookup(lf.Model), in, promote)
				c := Check{Name: fmt.Sprintf("%s every%d", filepath.Base(lf.Path), promote), Total: len(got)}
				for i, o := range lf.Outputs {
					hw := o.Every32
					if promote == 128 {
						hw = o.Every128
					}
					if math.Float32bits(got[i]) == hw {
						c.EqualHW++
					}
					if sameF32(got[i], want[i]) {
						c.EqualModel++
					}
				}
				checks = append(checks, c)
			}
		case golden.KindConvert:
			cs, err := checkConversions(ctx, r, f.Convert)
			if err != nil {
				return nil, err
			}
			checks = append(checks, cs...)
		}
	}
	return checks, nil
}

// recordsInput lays out a record file's records as chain rows, with the
// promotion that makes a chain of one instruction compute the record:
// d = fadd(step(a, b, 0), c) is a step from zero promoted into c.
func recordsInput(rf *golden.RecordFile) (in wgsl.ChainInput, promote int) {
	in.K = rf.L
	for _, rec := range rf.Records {
		for k := range rec.A {
			in.A, in.B = append(in.A, uint8(rec.A[k])), append(in.B, uint8(rec.B[k]))
		}
		in.C = append(in.C, math.Float32frombits(rec.C))
	}
	if rf.Kind == golden.FaddAfterStep {
		promote = 32
	}
	return in, promote
}

// records16 runs the records of a step-with-c capture file of a 16-bit
// model through tfdpa_step16 (Chain on 16-bit codes, one step-with-c a row)
// and returns d for each record.
func records16(ctx context.Context, r *wgsl.Runner, rf *golden.RecordFile) ([]float32, error) {
	in := wgsl.ChainInput{K: rf.L}
	n := len(rf.Records)
	in.A16, in.B16 = make([]uint16, n*rf.L), make([]uint16, n*rf.L)
	for i, rec := range rf.Records {
		if len(rec.A) > rf.L || len(rec.B) > rf.L {
			return nil, fmt.Errorf("wgslcheck: %s line %d: %d and %d codes, more than L = %d", rf.Path, rec.Line, len(rec.A), len(rec.B), rf.L)
		}
		copy(in.A16[i*rf.L:], rec.A) // missing elements are +0
		copy(in.B16[i*rf.L:], rec.B)
		in.C = append(in.C, math.Float32frombits(rec.C))
	}
	return r.Chain(ctx, rf.Model, in, 0)
}

// longInput lays out a long-contraction file's outputs as chain rows from
// c = 0.
func longInput(lf *golden.LongFile) wgsl.ChainInput {
	in := wgsl.ChainInput{K: lf.K}
	for _, o := range lf.Outputs {
		in.A, in.B = append(in.A, lf.A[o.I]...), append(in.B, lf.B[o.J]...)
		in.C = append(in.C, 0)
	}
	return in
}

// checkConversions runs the conversion tables of cf through the WGSL
// encoder (every range boundary ±2 ulps) and decoder (every code).
func checkConversions(ctx context.Context, r *wgsl.Runner, cf *golden.ConvertFile) ([]Check, error) {
	var checks []Check
	for _, cv := range cf.Conversions {
		format, sat, err := golden.ConversionFormat(cv.Name)
		if err != nil {
			return nil, err
		}
		signs := []uint32{0}
		if strings.HasPrefix(cv.Name, "torch ") {
			signs = append(signs, 1<<31)
		}
		var xs []float32
		for _, rg := range cv.Ranges {
			for d := int64(-2); d <= 2; d++ {
				if b := int64(rg.Start) + d; b >= 0 && b <= 0x7fffffff {
					for _, s := range signs {
						xs = append(xs, math.Float32frombits(uint32(b)|s))
					}
				}
			}
		}
		got, err := r.EncodeFP8(ctx, format, sat, xs)
		if err != nil {
			return nil, err
		}
		c := Check{Name: "encode " + cv.Name, Total: len(xs)}
		for i, x := range xs {
			if got[i] == cv.CodeFor(math.Float32bits(x)) {
				c.EqualHW++
			}
			if got[i] == uint8(format.Encode(x, sat)) {
				c.EqualModel++
			}
		}
		checks = append(checks, c)
	}
	codes := make([]uint8, 256)
	for i := range codes {
		codes[i] = uint8(i)
	}
	for _, dt := range cf.Decodes {
		format, err := golden.DecodeFormat(dt.Name)
		if err != nil {
			return nil, err
		}
		got, err := r.DecodeFP8(ctx, format, codes)
		if err != nil {
			return nil, err
		}
		c := Check{Name: "decode " + dt.Name, Total: 256}
		for i := range codes {
			if got[i] == dt.Bits[i] {
				c.EqualHW++
			}
			want := math.Float32bits(fp8.E4M3(i).Float32())
			if format == fp8.FormatE5M2 {
				want = math.Float32bits(fp8.E5M2(i).Float32())
			}
			if got[i] == want {
				c.EqualModel++
			}
		}
		checks = append(checks, c)
	}
	return checks, nil
}

// CheckRandom runs random batches through every emulated model with 8-bit
// codes (rows dot products per length and input kind; K from 1 to 4096,
// promotion never, every 32 and every 128) and compares with accum, one
// Check per model.
func CheckRandom(ctx context.Context, r *wgsl.Runner, seed uint64, rows int) ([]Check, error) {
	var checks []Check
	for _, model := range wgsl.Emulations() {
		if e, err := wgsl.LookupEmulation(model); err != nil || e.Bits != 8 {
			continue // the 16-bit step: CheckCaptures and CheckSimDecode
		}
		m := accum.MustLookup(model)
		e5m2 := m.Info().In == fp8.FormatE5M2
		c := Check{Name: model, EqualHW: -1}
		for kind := 0; kind < 4; kind++ {
			for _, K := range []int{1, 32, 33, 100, 1000, 4096} {
				for _, promote := range []int{0, 32, 128} {
					rng := rand.New(rand.NewPCG(seed, uint64(kind)<<40|uint64(K)<<8|uint64(promote)))
					in := wgsl.ChainInput{K: K, A: make([]uint8, rows*K), B: make([]uint8, rows*K), C: make([]float32, rows)}
					for i := range in.A {
						in.A[i], in.B[i] = randomCode(rng, kind, e5m2), randomCode(rng, kind, e5m2)
					}
					for i := range in.C {
						in.C[i] = float32(math.Ldexp(rng.Float64()*2-1, rng.IntN(40)-20))
						if rng.IntN(5) == 0 {
							in.C[i] = 0
						}
					}
					got, err := r.Chain(ctx, model, in, promote)
					if err != nil {
						return nil, err
					}
					want := modelChain(m, in, promote)
					for i := range got {
						c.Total++
						if sameF32(got[i], want[i]) {
							c.EqualModel++
						}
					}
				}
			}
		}
		checks = append(checks, c)
	}
	return checks, nil
}

// randomCode draws an FP8 code: kind 0 any code (NaN and inf included), 1
// finite with 20% zeros, 2 a few binades, 3 normal(0,1) quantized.
func randomCode(rng *rand.Rand, kind int, e5m2 bool) uint8 {
	switch kind {
	case 0:
		return uint8(rng.UintN(256))
	case 1:
		if rng.IntN(5) == 0 {
			return uint8(rng.IntN(2)) << 7
		}
		for {
			c := uint8(rng.UintN(256))
			if e5m2 && c&0x7c != 0x7c || !e5m2 && c&0x7f != 0x7f {
				return c
			}
		}
	case 2:
		return uint8(rng.IntN(2))<<7 | uint8(0x30+rng.IntN(24))
	}
	if e5m2 {
		return uint8(fp8.EncodeE5M2(float32(rng.NormFloat64()), fp8.SatFinite))
	}
	return uint8(fp8.EncodeE4M3(float32(rng.NormFloat64()), fp8.SatFinite))
}
