package accum

import (
	"fmt"
	"math"
	"strings"

	"github.com/fp8lab/fp8lab/fp8"
)

// Model is a named way of accumulating dot products: a tensor-core
// instruction chained over K (the kernel keeps the accumulator inside the
// tensor core), or an IEEE baseline.
type Model interface {
	// Name is the PTX-style name, for example "sm90.wgmma.e4m3.f32".
	Name() string
	// Info describes the model, its parameters and their source.
	Info() Info
	// Dot returns one output element of a K loop over len(a) elements that
	// starts from the accumulator c: for a tensor-core model, a chain of
	// instructions of Info().K elements each (the last one zero-padded),
	// each instruction's rounded output feeding the next as c. a and b
	// hold codes of Info().In. len(b) must equal len(a): every model panics
	// otherwise, as for an index out of range (a programming error; the
	// inputs of a user are checked where they are read). A tf32 model
	// reads a 16-bit code x as the float32 pattern x<<16 (a bf16 value,
	// which tf32 holds exactly); its full inputs go through Wide.
	Dot(a, b []uint16, c float32) float32
}

// Kind says what family a model belongs to.
type Kind string

// The kinds of models.
const (
	KindTFDPA     Kind = "T-FDPA"             // one T-FDPA step per instruction, or several chained
	KindEmulation Kind = "compiler emulation" // mma.sync FP8 on sm90/sm100: two FP16 steps and an FP32 (or FP16) add
	KindIEEE      Kind = "IEEE baseline"      // CUDA-core style accumulation
)

// Info describes a model.
type Info struct {
	Name string
	Kind Kind
	// In is the input format of a and b.
	In fp8.Format
	// K is the number of elements of one instruction (0 for baselines).
	K int
	// Step holds the T-FDPA parameters of one hardware step (L <= K: an
	// instruction of K elements is K/L chained steps).
	Step Params
	// Doc is one line on what the model is.
	Doc string
	// Source names where the parameters come from and whether they were
	// verified on hardware.
	Source string
}

// String gives the parameters in one line.
func (i Info) String() string {
	if i.Kind == KindIEEE {
		return fmt.Sprintf("%s (%s, inputs %s)", i.Kind, i.Doc, i.In)
	}
	return fmt.Sprintf("%s K=%d L=%d F=%d rho=%s e_zero=%d inputs %s", i.Kind, i.K, i.Step.L, i.Step.F, i.Step.Rho, i.Step.EZero, i.In)
}

// Stepper is a model that also runs one instruction on its own.
type Stepper interface {
	Model
	// Step computes d = MMA(a, b, c) for one output element of one
	// instruction (len(a) <= K; missing elements are +0).
	Step(a, b []uint16, c float32) float32
}

// Lookup returns the named model (a row of the table listed AsModel, or an
// IEEE baseline), or an error listing the known names.
func Lookup(name string) (Model, error) {
	if m, ok := cat().models[name]; ok {
		return m, nil
	}
	return nil, fmt.Errorf("unknown accumulation model %q; known models: %s", name, strings.Join(Names(), ", "))
}

// MustLookup is Lookup for names fixed in the program; it panics on an
// unknown name (a programming error, never user input).
func MustLookup(name string) Model {
	m, err := Lookup(name)
	if err != nil {
		panic(err)
	}
	return m
}

// Names returns every model name, sorted.
func Names() []string { return append([]string(nil), cat().modelNames...) }

// Models returns every model, sorted by name.
func Models() []Model {
	c := cat()
	ms := make([]Model, len(c.modelNames))
	for i, n := range c.modelNames {
		ms[i] = c.models[n]
	}
	return ms
}

// tfdpa is a tensor-core instruction: K/L chained T-FDPA steps.
type tfdpa struct {
	info Info
	fast *tableStep // nil: reference path
	wide *wideStep  // tf32 inputs (32-bit codes): the fast path of Step32/Dot32
}

func (m *tfdpa) Name() string { return m.info.Name }
func (m *tfdpa) Info() Info   { return m.info }

// Step runs one instruction: K/L chained T-FDPA steps from c.
func (m *tfdpa) Step(a, b []uint16, c float32) float32 {
	L := m.info.Step.L
	for i := 0; i < m.info.K; i += L {
		lo, hi := min(i, len(a)), min(i+L, len(a))
		c = m.step(a[lo:hi], b[lo:hi], c)
	}
	return c
}

func (m *tfdpa) step(a, b []uint16, c float32) float32 {
	if m.fast != nil {
		if d, ok := m.fast.step(a, b, c); ok {
			return d
		}
	}
	return m.refStep(a, b, c)
}

// refStep runs one T-FDPA step through the reference implementation.
func (m *tfdpa) refStep(a, b []uint16, c float32) float32 {
	var ab, bb [64]uint32
	for i := range a {
		ab[i], bb[i] = code32(m.info.In, a[i]), code32(m.info.In, b[i])
	}
	return m.refStep32(ab[:len(a)], bb[:len(a)], c)
}

// refStep32 runs one T-FDPA step over codes of any width through the
// reference implementation.
func (m *tfdpa) refStep32(ab, bb []uint32, c float32) float32 {
	p := m.info.Step
	if p.Rho == RNEFP16 {
		h := fp8.FP16FromFloat32(c)
		d := p.Step(ab, bb, uint32(h))
		if d == NaN16 {
			return math.Float32frombits(NaN32)
		}
		return fp8.FP16(d).Float32()
	}
	return math.Float32frombits(p.Step(ab, bb, math.Float32bits(c)))
}

// Dot chains steps of L elements over the whole of a (a kernel's K loop
// without promotion: the accumulator never leaves the tensor core). Chaining
// instructions of K = n·L elements is the same chain of L-element steps.
func (m *tfdpa) Dot(a, b []uint16, c float32) float32 {
	L := m.info.Step.L
	b = sameLen(a, b)
	if d, ok := m.dotWasm(a, b, c); ok {
		return d // the js/wasm kernel, a chunk at a time: the same bits
	}
	for i := 0; i < len(a); i += L {
		if m.fast != nil {
			// Whole steps in one call, up to the first special, if any.
			var done int
			c, done = m.fast.chain(a[i:], b[i:], c, L)
			if i += done; i >= len(a) {
				break
			}
		}
		j := min(i+L, len(a))
		c = m.step(a[i:j], b[i:j], c)
	}
	return c
}

// sameLen returns b after checking that it is as long as a: Model.Dot's
// contract.
func sameLen(a, b []uint16) []uint16 {
	if len(b) != len(a) {
		panic(fmt.Sprintf("accum: Dot of %d and %d elements (the lengths must be equal)", len(a), len(b)))
	}
	return b
}

func newTFDPA(name string, in fp8.Format, k int, p Params, doc, source string) (*tfdpa, error) {
	p.In = in
	if err := p.Validate(); err != nil {
		return nil, err
	}
	if k < p.L || k%p.L != 0 {
		return nil, fmt.Errorf("K = %d is not a positive multiple of L = %d", k, p.L)
	}
	m := &tfdpa{info: Info{Name: name, Kind: KindTFDPA, In: in, K: k, Step: p, Doc: doc, Source: source}}
	if fastPathApplies(p) {
		m.fast = newTableStep(p, false)
	}
	if widePathApplies(p) {
		m.wide = &wideStep{f: p.F, fb: roundingFracBits(p.Rho), ezero: int32(p.EZero)}
	}
	return m, nil
}
