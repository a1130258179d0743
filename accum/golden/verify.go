package golden

import (
	"context"
	"fmt"
	"math"
	"runtime"
	"strings"
	"sync"

	"github.com/fp8lab/fp8lab/accum"
	"github.com/fp8lab/fp8lab/fp8"
)

// Check is one comparison of a verified file: Equal of Total outputs were
// bit-exact; Mismatches holds the first differing ones.
type Check struct {
	Name       string
	Total      int64
	Equal      int64
	Mismatches []Mismatch
	// Deviated counts the outputs (of peer records only) that differ for a
	// named, documented reason, listed per reason in Deviations.
	Deviated   int64
	Deviations []Deviation
}

// OK reports whether every output was bit-exact or a documented peer
// deviation.
func (c Check) OK() bool { return c.Equal+c.Deviated == c.Total }

// Mismatch is an output that differs: where it is, its inputs, and the
// expected and computed bits.
type Mismatch struct {
	Line     int    // line of the capture file (0 for swept inputs)
	Inputs   string // the inputs, in hex
	Expected uint32
	Got      uint32
	// Digits is 0 for float32 outputs (Expected, Got); 4 (f16) or 16 (f64)
	// when the outputs are in Expected64 and Got64 (peer records).
	Digits            int
	Expected64, Got64 uint64
}

// Report is the result of verifying one capture file.
type Report struct {
	Path   string
	Model  string // the model named by the file, or "fp8 conversions"
	Kind   string // what the records are
	Checks []Check
	// Notes are informative lines (for example the cuBLAS columns of a
	// long-contraction file as relative errors); they are not checks.
	Notes []string
}

// OK reports whether every check of the report passed.
func (r *Report) OK() bool {
	for _, c := range r.Checks {
		if !c.OK() {
			return false
		}
	}
	return true
}

// Options controls Verify.
type Options struct {
	// Exhaustive checks every one of the 2^32 float32 inputs of each
	// conversion (negatives through the sign rule of the capture),
	// instead of every range boundary ±2 ulps.
	Exhaustive bool
	// MaxMismatches is how many differing outputs a check keeps (default 5).
	MaxMismatches int
}

func (o Options) maxMismatches() int {
	if o.MaxMismatches <= 0 {
		return 5
	}
	return o.MaxMismatches
}

// Verify runs every record of f through the model it names (package accum,
// package fp8 for conversions) and compares bit for bit.
func Verify(ctx context.Context, f *File, opt Options) (*Report, error) {
	switch f.Kind {
	case KindRecords:
		return verifyRecords(ctx, f.Records, opt)
	case KindLong:
		return verifyLong(ctx, f.Long, opt)
	case KindConvert:
		return verifyConvert(ctx, f.Convert, opt)
	case KindPeer:
		return verifyPeer(ctx, f.Peer, opt)
	}
	return nil, fmt.Errorf("%s: unknown kind of file", f.Path)
}

func (c *Check) add(ok bool, m Mismatch, max int) {
	c.Total++
	if ok {
		c.Equal++
	} else if len(c.Mismatches) < max {
		c.Mismatches = append(c.Mismatches, m)
	}
}

func hexCodes(codes []uint16, digits int) string {
	var b strings.Builder
	for _, c := range codes {
		fmt.Fprintf(&b, "%0*x", digits, c)
	}
	return b.String()
}

// sameBits compares float32 outputs bit for bit (every NaN equal to every
// NaN: records with non-finite d are left out of the captures anyway).
func sameBits(want uint32, got float32) bool {
	g := math.Float32bits(got)
	if g == want {
		return true
	}
	return math.IsNaN(float64(got)) && math.IsNaN(float64(math.Float32frombits(want)))
}

func verifyRecords(ctx context.Context, f *RecordFile, opt Options) (*Report, error) {
	m, err := accum.Lookup(f.Model)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", f.Path, err)
	}
	st, ok := m.(accum.Stepper)
	if !ok {
		return nil, fmt.Errorf("%s: model %s has no single-instruction step", f.Path, f.Model)
	}
	if in := m.Info().In.String(); in != f.AFormat {
		return nil, fmt.Errorf("%s: model %s reads %s, the file holds %s", f.Path, f.Model, in, f.AFormat)
	}
	if k := m.Info().K; f.L > k {
		return nil, fmt.Errorf("%s: records of %d elements for an instruction of K = %d", f.Path, f.L, k)
	}
	rep := &Report{Path: f.Path, Model: f.Model, Kind: f.Kind.String()}
	chk := Check{Name: "records"}
	digits := CodeDigits(f.AFormat)
	for i, r := range f.Records {
		if i%1024 == 0 && ctx.Err() != nil {
			return nil, ctx.Err()
		}
		c := math.Float32frombits(r.C)
		var d float32
		switch f.Kind {
		case StepWithC:
			d = st.Step(r.A, r.B, c)
		case FaddAfterStep:
			d = float32(st.Step(r.A, r.B, 0) + c)
		default:
			return nil, fmt.Errorf("%s: unknown record kind", f.Path)
		}
		chk.add(sameBits(r.D, d), Mismatch{Line: r.Line,
			Inputs:   fmt.Sprintf("a=%s b=%s c=%08x", hexCodes(r.A, digits), hexCodes(r.B, digits), r.C),
			Expected: r.D, Got: math.Float32bits(d)}, opt.maxMismatches())
	}
	rep.Checks = append(rep.Checks, chk)
	return rep, nil
}

func widen(c []uint8) []uint16 {
	out := make([]uint16, len(c))
	for i, x := range c {
		out[i] = uint16(x)
	}
	return out
}

// LongResult holds, for one output of a long-contraction file, what the
// model computes and what the kernels gave.
type LongResult struct {
	Out                      LongOutput
	Never, Every32, Every128 float32 // the model's chains
	Exact                    float64 // accum.ExactDot of the inputs (the captured Ref should equal it)
}

// LongResults runs every output of f through the model: a chain that never
// leaves the tensor core, and promotion every 32 and every 128 elements; and
// computes the exact dot product. Outputs are computed on every core.
func LongResults(ctx context.Context, f *LongFile) ([]LongResult, error) {
	m, err := accum.Lookup(f.Model)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", f.Path, err)
	}
	a := make([][]uint16, len(f.A))
	b := make([][]uint16, len(f.B))
	for i := range f.A {
		a[i] = widen(f.A[i])
	}
	for j := range f.B {
		b[j] = widen(f.B[j])
	}
	res := make([]LongResult, len(f.Outputs))
	err = parallel(ctx, len(f.Outputs), func(k int) {
		o := f.Outputs[k]
		x, y := a[o.I], b[o.J]
		res[k] = LongResult{Out: o,
			Never:    accum.Chain(m, x, y, 0, 0),
			Every32:  accum.Chain(m, x, y, 0, 32),
			Every128: accum.Chain(m, x, y, 0, 128),
			Exact:    accum.ExactDot(m.Info().In, x, y, 0)}
	})
	return res, err
}

func relErr(got float64, ref float64) float64 {
	if ref == 0 {
		return math.Abs(got)
	}
	return math.Abs(got-ref) / math.Abs(ref)
}

func verifyLong(ctx context.Context, f *LongFile, opt Options) (*Report, error) {
	res, err := LongResults(ctx, f)
	if err != nil {
		return nil, err
	}
	rep := &Report{Path: f.Path, Model: f.Model, Kind: fmt.Sprintf("long contraction, K = %d", f.K)}
	c32 := Check{Name: "every32"}
	c128 := Check{Name: "every128"}
	var eNever, e128, eFast, eCublas float64
	var fastIsNever, cublasIs128 int
	for _, r := range res {
		in := fmt.Sprintf("row %d . column %d", r.Out.I, r.Out.J)
		c32.add(sameBits(r.Out.Every32, r.Every32), Mismatch{Line: r.Out.Line, Inputs: in, Expected: r.Out.Every32, Got: math.Float32bits(r.Every32)}, opt.maxMismatches())
		c128.add(sameBits(r.Out.Every128, r.Every128), Mismatch{Line: r.Out.Line, Inputs: in, Expected: r.Out.Every128, Got: math.Float32bits(r.Every128)}, opt.maxMismatches())
		eNever += relErr(float64(r.Never), r.Out.Ref)
		e128 += relErr(float64(r.Every128), r.Out.Ref)
		eFast += relErr(float64(math.Float32frombits(r.Out.CublasFast)), r.Out.Ref)
		eCublas += relErr(float64(math.Float32frombits(r.Out.Cublas)), r.Out.Ref)
		if sameBits(r.Out.CublasFast, r.Never) {
			fastIsNever++
		}
		if sameBits(r.Out.Cublas, r.Every128) {
			cublasIs128++
		}
	}
	n := float64(len(res))
	rep.Checks = append(rep.Checks, c32, c128)
	rep.Notes = append(rep.Notes,
		fmt.Sprintf("mean relative error vs exact: model never %.3e, model every128 %.3e | cublas_fast %.3e, cublas %.3e",
			eNever/n, e128/n, eFast/n, eCublas/n),
		fmt.Sprintf("cublas_fast equals the model's never-promoted chain in %d/%d outputs, cublas equals every128 in %d/%d (cuBLASLt's K order is undocumented: not a check)",
			fastIsNever, len(res), cublasIs128, len(res)))
	return rep, nil
}

// parallel runs fn(0..n-1) over GOMAXPROCS goroutines.
func parallel(ctx context.Context, n int, fn func(i int)) error {
	workers := min(runtime.GOMAXPROCS(0), n)
	var wg sync.WaitGroup
	var mu sync.Mutex
	next := 0
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				mu.Lock()
				i := next
				next++
				mu.Unlock()
				if i >= n {
					return
				}
				fn(i)
			}
		}()
	}
	wg.Wait()
	return ctx.Err()
}

// ConversionFormat says which fp8 conversion a section of the conversion
// file names: the target format from its name, NoSat for the torch casts
// (they are the nosat conversions), and the saturation CUDA's
// __nv_cvt_float_to_fp8 names.
func ConversionFormat(name string) (fp8.Format, fp8.Saturation, error) {
	var f fp8.Format
	switch {
	case strings.Contains(name, "E4M3") || strings.Contains(name, "e4m3"):
		f = fp8.FormatE4M3
	case strings.Contains(name, "E5M2") || strings.Contains(name, "e5m2"):
		f = fp8.FormatE5M2
	default:
		return 0, 0, fmt.Errorf("conversion %q: no fp8 format in its name", name)
	}
	switch {
	case strings.HasPrefix(name, "torch "):
		return f, fp8.NoSat, nil
	case strings.Contains(name, "__NV_SATFINITE"):
		return f, fp8.SatFinite, nil
	case strings.Contains(name, "__NV_NOSAT"):
		return f, fp8.NoSat, nil
	}
	return 0, 0, fmt.Errorf("conversion %q: unknown saturation", name)
}

// Converter returns the fp8 conversion that a section of the conversion
// file names (see ConversionFormat).
func Converter(name string) (func(x float32) uint8, error) {
	f, sat, err := ConversionFormat(name)
	if err != nil {
		return nil, err
	}
	if f == fp8.FormatE4M3 {
		return func(x float32) uint8 { return uint8(fp8.EncodeE4M3(x, sat)) }, nil
	}
	return func(x float32) uint8 { return uint8(fp8.EncodeE5M2(x, sat)) }, nil
}

// DecodeFormat returns the format a decode section names ("e4m3fn",
// "e4m3" or "e5m2").
func DecodeFormat(name string) (fp8.Format, error) {
	switch name {
	case "e4m3fn", "e4m3":
		return fp8.FormatE4M3, nil
	case "e5m2":
		return fp8.FormatE5M2, nil
	}
	return 0, fmt.Errorf("decode table %q: unknown format", name)
}

// Decoder returns the decode function a decode section names.
func Decoder(name string) (func(c uint8) uint32, error) {
	f, err := DecodeFormat(name)
	if err != nil {
		return nil, err
	}
	if f == fp8.FormatE4M3 {
		return func(c uint8) uint32 { return math.Float32bits(fp8.E4M3(c).Float32()) }, nil
	}
	return func(c uint8) uint32 { return math.Float32bits(fp8.E5M2(c).Float32()) }, nil
}

func verifyConvert(ctx context.Context, f *ConvertFile, opt Options) (*Report, error) {
	rep := &Report{Path: f.Path, Model: "fp8 conversions", Kind: "float32 -> fp8 range file and decode tables"}
	for i := range f.Conversions {
		cv := &f.Conversions[i]
		conv, err := Converter(cv.Name)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", f.Path, err)
		}
		var chk Check
		if opt.Exhaustive {
			chk, err = ExhaustiveConversion(ctx, cv, conv, opt.maxMismatches())
			if err != nil {
				return nil, err
			}
		} else {
			chk = boundaryConversion(cv, conv, opt.maxMismatches())
		}
		rep.Checks = append(rep.Checks, chk)
	}
	for _, d := range f.Decodes {
		dec, err := Decoder(d.Name)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", f.Path, err)
		}
		chk := Check{Name: "decode " + d.Name + ": all 256 codes"}
		for c := 0; c < 256; c++ {
			got := dec(uint8(c))
			chk.add(got == d.Bits[c], Mismatch{Inputs: fmt.Sprintf("code %02x", c), Expected: d.Bits[c], Got: got}, opt.maxMismatches())
		}
		rep.Checks = append(rep.Checks, chk)
	}
	return rep, nil
}

// boundaryConversion checks every range start ±2 ulps, both signs, plus the
// extremes.
func boundaryConversion(cv *Conversion, conv func(float32) uint8, max int) Check {
	chk := Check{Name: cv.Name + ": every range boundary ±2 ulps, both signs"}
	try := func(bits uint32) {
		want := cv.CodeFor(bits)
		got := conv(math.Float32frombits(bits))
		chk.add(got == want, Mismatch{Inputs: fmt.Sprintf("x=%08x", bits), Expected: uint32(want), Got: uint32(got)}, max)
	}
	starts := []uint32{0, 0x7fffffff, 0x7f800000}
	for _, r := range cv.Ranges {
		starts = append(starts, r.Start)
	}
	seen := map[uint32]bool{}
	for _, s := range starts {
		for d := int64(-2); d <= 2; d++ {
			x := int64(s) + d
			if x < 0 || x > 0x7fffffff || seen[uint32(x)] {
				continue
			}
			seen[uint32(x)] = true
			try(uint32(x))
			try(uint32(x) | 1<<31)
		}
	}
	return chk
}

// ExhaustiveConversion checks conv on all 2^32 float32 bit patterns: the
// positive ones against the ranges, the negative ones against the positive
// code with bit 7 set (the sign rule of the capture). It spreads the work
// over every core.
func ExhaustiveConversion(ctx context.Context, cv *Conversion, conv func(float32) uint8, max int) (Check, error) {
	chk := Check{Name: cv.Name + ": all 2^32 float32 inputs"}
	const chunks = 256
	results := make([]Check, chunks)
	err := parallel(ctx, chunks, func(k int) {
		lo := uint32(k) << 23 // 2^31 / 256 patterns per chunk
		hi := lo + 1<<23
		c := &results[k]
		// The range holding lo, then walk forward.
		ri := 0
		for ri+1 < len(cv.Ranges) && cv.Ranges[ri+1].Start <= lo {
			ri++
		}
		for x := lo; x < hi; {
			end := hi
			if ri+1 < len(cv.Ranges) && cv.Ranges[ri+1].Start < end {
				end = cv.Ranges[ri+1].Start
			}
			want := cv.Ranges[ri].Code
			for ; x < end; x++ {
				gp := conv(math.Float32frombits(x))
				gn := conv(math.Float32frombits(x | 1<<31))
				if gp == want && gn == want|0x80 {
					c.Equal += 2
					c.Total += 2
					continue
				}
				c.add(gp == want, Mismatch{Inputs: fmt.Sprintf("x=%08x", x), Expected: uint32(want), Got: uint32(gp)}, max)
				c.add(gn == want|0x80, Mismatch{Inputs: fmt.Sprintf("x=%08x", x|1<<31), Expected: uint32(want | 0x80), Got: uint32(gn)}, max)
			}
			if x == end && end != hi {
				ri++
			}
		}
	})
	if err != nil {
		return chk, err
	}
	for _, r := range results {
		chk.Total += r.Total
		chk.Equal += r.Equal
		for _, m := range r.Mismatches {
			if len(chk.Mismatches) < max {
				chk.Mismatches = append(chk.Mismatches, m)
			}
		}
	}
	return chk, nil
}
