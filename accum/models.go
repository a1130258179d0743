package accum

import (
	"fmt"
	"math"

	"github.com/fp8lab/fp8lab/fp8"
)

// mmaSyncEmu is an FP8 mma.sync m16n8k32 that ptxas emulates on the FP16
// tensor core (the rows of kind KindEmulation in the table):
// an exact fp8 -> f16 unpack, two chained FP16 HMMA.16816 steps (Step: L =
// 16 with In = f16) over the K elements with k mod 4 in {0,1} and then
// {2,3}, the first from +0, and one round-to-nearest-even add of C: an
// FP32 FADD when Step rounds RZ-FP32, an FP16 HADD when it rounds RNE-FP16
// (the FP16 accumulator; c is then read as the FP16 nearest to it)
// (tensorcore-numerics.md §3.2).
type mmaSyncEmu struct {
	info Info
	in   fp8.Format // the FP8 format of a and b
	fast *tableStep // nil for an FP16 accumulator
	ref  Params
}

// newMMASyncEmu returns the emulated mma.sync named name over FP8 inputs in,
// whose FP16 HMMA step has the parameters step (In is set to f16).
func newMMASyncEmu(name string, in fp8.Format, step Params, doc, source string) (*mmaSyncEmu, error) {
	step.In = fp8.FormatFP16
	if err := step.Validate(); err != nil || step.L != 16 || (in != fp8.FormatE4M3 && in != fp8.FormatE5M2) {
		return nil, fmt.Errorf("the emulation is an FP16 step of L = 16 over e4m3 or e5m2 (L = %d, %s, %v)", step.L, in, err)
	}
	m := &mmaSyncEmu{
		info: Info{Name: name, Kind: KindEmulation, In: in, K: 32, Step: step, Doc: doc, Source: source},
		in:   in,
		ref:  step,
	}
	if fastPathApplies(step) {
		// The tables read the FP8 codes as FP16 reads their values: an
		// e4m3 subnormal is a normal FP16 number (its true exponent); e5m2
		// has FP16's exponent range, so its own reading is FP16's.
		fp := step
		fp.In = in
		m.fast = newTableStep(fp, in == fp8.FormatE4M3)
	}
	return m, nil
}

func (m *mmaSyncEmu) Name() string { return m.info.Name }
func (m *mmaSyncEmu) Info() Info   { return m.info }

// Step runs one emulated instruction over up to 32 elements.
func (m *mmaSyncEmu) Step(a, b []uint16, c float32) float32 {
	var lo, hi [2][16]uint16
	nl, nh := 0, 0
	for k := range a {
		if k&2 == 0 {
			lo[0][nl], lo[1][nl] = a[k], b[k]
			nl++
		} else {
			hi[0][nh], hi[1][nh] = a[k], b[k]
			nh++
		}
	}
	if m.ref.Rho == RNEFP16 {
		t := m.half16(lo[0][:nl], lo[1][:nl], 0)
		t = m.half16(hi[0][:nh], hi[1][:nh], t)
		return hadd16(uint32(fp8.FP16FromFloat32(c)), t)
	}
	t := m.half(lo[0][:nl], lo[1][:nl], 0)
	t = m.half(hi[0][:nh], hi[1][:nh], t)
	return float32(c + t)
}

// f16 returns the FP16 codes of FP8 codes (exact).
func (m *mmaSyncEmu) f16(a, b []uint16) (ab, bb [16]uint32) {
	for i := range a {
		ab[i] = uint32(fp8.FP16FromFloat32(float32(m.in.Value(uint32(a[i])))))
		bb[i] = uint32(fp8.FP16FromFloat32(float32(m.in.Value(uint32(b[i])))))
	}
	return
}

func (m *mmaSyncEmu) half(a, b []uint16, c float32) float32 {
	if d, ok := m.fast.step(a, b, c); ok {
		return d
	}
	ab, bb := m.f16(a, b)
	return math.Float32frombits(m.ref.Step(ab[:len(a)], bb[:len(a)], math.Float32bits(c)))
}

// half16 is one HMMA step with an FP16 accumulator: c and the result are
// FP16 codes.
func (m *mmaSyncEmu) half16(a, b []uint16, c uint32) uint32 {
	ab, bb := m.f16(a, b)
	return m.ref.Step(ab[:len(a)], bb[:len(a)], c)
}

// hadd16 adds two FP16 codes with one round to nearest even (an HADD) and
// returns the FP16 result as float32: NaN for a NaN or inf - inf, +0 for
// an exact zero sum.
func hadd16(x, y uint32) float32 {
	f := fp8.FormatFP16
	px, py := f.Decompose(x), f.Decompose(y)
	switch {
	case px.Class == fp8.NaN || py.Class == fp8.NaN || (px.Class == fp8.Inf && py.Class == fp8.Inf && px.Neg != py.Neg):
		return math.Float32frombits(NaN32)
	case px.Class == fp8.Inf:
		return fp8.FP16(x).Float32()
	case py.Class == fp8.Inf:
		return fp8.FP16(y).Float32()
	}
	// Both finite: multiples of 2^-24 below 2^16, summed exactly.
	s := int64(f.Value(x)*(1<<24)) + int64(f.Value(y)*(1<<24))
	if s == 0 {
		return 0
	}
	return fp8.FP16(round(RNEFP16, s, -24)).Float32()
}

// Dot chains instructions of 32 elements, each adding its result to the
// running accumulator with one FADD (or HADD) (the accumulator never enters
// the tensor core).
func (m *mmaSyncEmu) Dot(a, b []uint16, c float32) float32 {
	b = sameLen(a, b)
	i := 0
	if s := m.fast; s != nil && s.ent != nil && m.ref.Rho != RNEFP16 {
		i, c = m.dotAsm(a, b, c)
	}
	for ; i < len(a); i += 32 {
		j := min(i+32, len(a))
		c = m.Step(a[i:j], b[i:j], c)
	}
	return c
}

// dotAsm is Dot's whole instructions through the assembly chain kernel
// (the FP32 accumulator, where the CPU runs it): each instruction's two
// HMMA steps, its elements with k mod 4 in {0, 1} and then {2, 3}, are
// one chainGG call of two 16-element steps from +0, and its result is
// added to c as Step adds it. It returns how far it got (the start of the
// first instruction holding a NaN or inf, or of a partial one at the end,
// which Dot runs through Step) and c.
func (m *mmaSyncEmu) dotAsm(a, b []uint16, c float32) (int, float32) {
	s := m.fast
	f, fb := int32(s.f), int32(s.fb)
	var x, y [32]uint16
	i := 0
	for ; i+32 <= len(a); i += 32 {
		p, q := a[i:i+32], b[i:i+32]
		for k := 0; k < 8; k++ {
			x[2*k], x[2*k+1], x[16+2*k], x[17+2*k] = p[4*k], p[4*k+1], p[4*k+2], p[4*k+3]
			y[2*k], y[2*k+1], y[16+2*k], y[17+2*k] = q[4*k], q[4*k+1], q[4*k+2], q[4*k+3]
		}
		t, done := chainGG(s.ent, &x[0], &y[0], 2, 16, f, fb, s.ezero, 0)
		if done < 32 {
			break
		}
		c += t
	}
	return i, c
}

// Chain returns one output element of a kernel's K loop over len(a)
// elements with model m. With promote == 0 the accumulator starts at c and
// stays in the model's chain for the whole loop (m.Dot). With promote = N > 0
// the loop is cut into blocks of N elements: each block's chain starts from
// +0 and its result is added to an FP32 register, which starts at c, with one
// round-to-nearest-even add (DeepGEMM, CUTLASS GmmaFP8Accumulation, Triton
// max_num_imprecise_acc, vLLM's two-level FlashAttention). N should be a
// multiple of the model's K (see CheckPromotion). As for Model.Dot, len(b)
// must equal len(a) (Chain panics otherwise).
func Chain(m Model, a, b []uint16, c float32, promote int) float32 {
	b = sameLen(a, b)
	if promote <= 0 || promote >= len(a) && c == 0 {
		return m.Dot(a, b, c)
	}
	d, _ := kLoop(len(a), promote, uint64(math.Float32bits(c)), func(i, j int, c uint64) (uint64, bool) {
		return uint64(math.Float32bits(m.Dot(a[i:j], b[i:j], math.Float32frombits(uint32(c))))), true
	}, addFor("f32"))
	return math.Float32frombits(uint32(d))
}

// CheckPromotion returns an error unless promote is 0 (never) or a positive
// multiple of the model's instruction size K.
func CheckPromotion(m Model, promote int) error {
	k := m.Info().K
	switch {
	case promote < 0:
		return errorf("promotion interval %d is negative (0 means never)", promote)
	case promote > 0 && k > 0 && promote%k != 0:
		return errorf("promotion interval %d is not a multiple of %s's K = %d", promote, m.Name(), k)
	}
	return nil
}
