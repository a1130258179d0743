package wgsl

import (
	"context"
	"encoding/binary"
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"

	"github.com/fp8lab/fp8lab/accum"
	"github.com/fp8lab/fp8lab/fp8"
)

// Emulation describes how tfdpa.wgsl runs one of accum's models.
type Emulation struct {
	// Model is the accum model name, e.g. "sm90.wgmma.e4m3.f32".
	Model string
	// In is the input format (e4m3 or e5m2; bf16 or f16 for the
	// 16-bit step, tfdpa_step16).
	In fp8.Format
	// Bits is the width of an input code: 8 (4 codes a u32 word, read
	// through the code table) or 16 (2 codes a word, decoded in the step,
	// exponents as i32).
	Bits int
	// L, F and the fraction bits FB of the result (23 for RZ-FP32, 13 for
	// RZ-E8M13) of one step; for the mma.sync emulation, one FP16 half
	// step.
	L, F, FB int
	// MMASync is the mma.sync emulation (accum's KindEmulation, sm90 and
	// sm100): two half steps (k mod 4 in {0,1}, then {2,3}) from +0 and an
	// FP32 add of C.
	MMASync bool

	ezero int
	eb    int
	pack  bool // the 8-bit step's PACK form (tfdpa_step.wgsl): F = 13
	table [256]uint32
}

// Emulations lists the accum models the WGSL T-FDPA kernel runs, sorted:
// every model one of [StepShapes]' rows accepts (see [LookupEmulation]).
// Which models those are is decided from each model's parameters alone
// (its kind, input format, K, and its step's L, F, rounding, e_zero and
// format), never from its name.
func Emulations() []string {
	var names []string
	for _, m := range accum.Models() {
		if _, err := emulationOf(m); err == nil {
			names = append(names, m.Name())
		}
	}
	sort.Strings(names)
	return names
}

// LookupEmulation returns how the WGSL kernel runs the named accum model,
// or an error saying why it cannot: an unknown name (accum's error), or the
// parameter of the model that no row of [StepShapes] accepts.
func LookupEmulation(model string) (*Emulation, error) {
	m, err := accum.Lookup(model)
	if err != nil {
		return nil, err
	}
	return emulationOf(m)
}

// StepShape is one kind of step tfdpa.wgsl runs, as the accum model
// parameters it accepts. The rows of [StepShapes] are the whole rule: a
// model is emulated when a row accepts its parameters.
type StepShape struct {
	Name string
	// Kind is the accum model kind.
	Kind accum.Kind
	// In lists the input formats (the model's Info().In).
	In []fp8.Format
	// StepIn is the format the step reads (Info().Step.In): In itself when
	// invalid (FormatInvalid), FP16 for the mma.sync emulation.
	StepIn fp8.Format
	// K lists the instruction lengths, L the products of one step.
	K, L []int
	// Rho lists the final conversions of a step.
	Rho []accum.Rounding
	// MaxF is the most fraction bits kept; MinF2M, when set, requires F >=
	// 2·(fraction bits of In) (the 16-bit step's product shift).
	MaxF   int
	MinF2M bool
	// Bits is the width of an input code in the kernel's words (8 or 16).
	Bits int
	// MMASync runs two FP16 half steps (k mod 4 in {0,1}, then {2,3}) from
	// +0 and an FP32 add of c (accum's compiler emulation).
	MMASync bool
}

// StepShapes are the steps the WGSL T-FDPA kernel has: tfdpa_step over
// 8-bit codes, the mma.sync emulation on it, and tfdpa_step16 over 16-bit
// codes (the attention simulator's bf16/f16 step).
var StepShapes = []StepShape{
	{Name: "8-bit T-FDPA step", Kind: accum.KindTFDPA, In: []fp8.Format{fp8.FormatE4M3, fp8.FormatE5M2},
		K: []int{32}, L: []int{16, 32}, Rho: []accum.Rounding{accum.RZFP32, accum.RZE8M13}, MaxF: 25, Bits: 8},
	{Name: "mma.sync emulation (two FP16 half steps and an FP32 add of c)", Kind: accum.KindEmulation,
		In: []fp8.Format{fp8.FormatE4M3, fp8.FormatE5M2}, StepIn: fp8.FormatFP16,
		K: []int{32}, L: []int{16}, Rho: []accum.Rounding{accum.RZFP32}, MaxF: 25, Bits: 8, MMASync: true},
	{Name: "16-bit T-FDPA step", Kind: accum.KindTFDPA, In: []fp8.Format{fp8.FormatBF16, fp8.FormatFP16},
		K: []int{16, 32}, L: []int{8, 16}, Rho: []accum.Rounding{accum.RZFP32, accum.RZE8M13}, MaxF: 25, MinF2M: true, Bits: 16},
}

// check returns nil when s accepts info, else the first parameter it does
// not accept.
func (s *StepShape) check(info accum.Info) error {
	p := info.Step
	stepIn := s.StepIn
	if stepIn == fp8.FormatInvalid {
		stepIn = info.In
	}
	switch {
	case info.Kind != s.Kind:
		return fmt.Errorf("it is a %s, not a %s", info.Kind, s.Kind)
	case !slices.Contains(s.In, info.In):
		return fmt.Errorf("it reads %v, not one of %v", info.In, s.In)
	case p.In != stepIn:
		return fmt.Errorf("its step reads %v, not %v", p.In, stepIn)
	case !slices.Contains(s.K, info.K):
		return fmt.Errorf("K = %d is not one of %v", info.K, s.K)
	case !slices.Contains(s.L, p.L) || info.K%p.L != 0:
		return fmt.Errorf("L = %d is not one of %v dividing K = %d", p.L, s.L, info.K)
	case !slices.Contains(s.Rho, p.Rho):
		return fmt.Errorf("it rounds %v, not %v", p.Rho, s.Rho)
	case p.F > s.MaxF:
		return fmt.Errorf("F = %d is above %d", p.F, s.MaxF)
	case s.MinF2M && p.F < 2*info.In.FracBits():
		return fmt.Errorf("F = %d is below 2·%d, the product's fraction bits", p.F, info.In.FracBits())
	}
	return nil
}

// emulationOf returns how the kernel runs m: by the first row of
// StepShapes that accepts m's parameters, or an error naming, for the rows
// of m's kind and input format (else for every row), what they do not
// accept.
func emulationOf(m accum.Model) (*Emulation, error) {
	info := m.Info()
	var why []string
	for i := range StepShapes {
		s := &StepShapes[i]
		err := s.check(info)
		if err == nil {
			return newEmulation(info, s)
		}
		if info.Kind == s.Kind && slices.Contains(s.In, info.In) {
			why = append(why, s.Name+": "+err.Error())
		}
	}
	if len(why) == 0 {
		for i := range StepShapes {
			why = append(why, StepShapes[i].Name+": "+StepShapes[i].check(info).Error())
		}
	}
	return nil, fmt.Errorf("wgsl: model %s (%v) is not run by the WGSL T-FDPA kernel: %s", info.Name, info, strings.Join(why, "; "))
}

// newEmulation fills the emulation of a model that row s accepts: the
// kernel's constants and, for 8-bit codes, the code table.
func newEmulation(info accum.Info, s *StepShape) (*Emulation, error) {
	p := info.Step
	name := info.Name
	e := &Emulation{Model: name, In: info.In, Bits: s.Bits, MMASync: s.MMASync, L: p.L, F: p.F, ezero: p.EZero}
	switch p.Rho {
	case accum.RZFP32:
		e.FB = 23
	case accum.RZE8M13:
		e.FB = 13
	}
	mbits := e.In.FracBits()
	if s.Bits == 16 {
		// The step reads exactly L codes (attention's chains cover whole
		// instructions), so every element is a term, a zero code a zero
		// term of exponent EZERO. Each sign's part of the sum: L products
		// below 2^(2(mbits+1)) shifted by F - 2·mbits, and c's term below
		// 2^(24 + F - 23), in 32 bits.
		maxSig := uint64(1)<<(mbits+1) - 1
		sumMax := uint64(e.L)*(maxSig*maxSig)<<uint(e.F-2*mbits) + uint64(1)<<uint(24+max(e.F-23, 0))
		if sumMax >= 1<<32 {
			return nil, fmt.Errorf("wgsl: model %s: a step's sum (< %d) does not fit 32 bits", name, sumMax)
		}
		return e, nil // the 16-bit step sums each sign apart
	}
	// The mma.sync emulation reads the FP8 codes as its FP16 step does:
	// normalized where the input's subnormals are normal numbers of the
	// step's format (e4m3 in FP16), as they are (e5m2 has FP16's range).
	normalize := s.MMASync && info.In.Emin()-mbits >= p.In.Emin()
	// Exponent fields of nonzero codes, as the step reads them.
	minE := e.In.Emin()
	if normalize {
		minE -= mbits
	}
	e.eb = 32 - minE
	maxSig := 1<<(mbits+1) - 1
	psh := e.F - 2*mbits
	sumMax := uint64(e.L)*uint64(maxSig*maxSig)<<uint(psh) + uint64(1)<<uint(24+max(e.F-23, 0))
	if sumMax >= 1<<32 {
		return nil, fmt.Errorf("wgsl: model %s: a step's sum (< %d) does not fit 32 bits", name, sumMax)
	}
	// pack: each term, shifted left by 8 to hold its exponent sum in the
	// low byte (and one's-complemented when negative), fits an i32, and so
	// does the sum; otherwise each sign's part is summed apart in u32,
	// which sumMax < 2^32 makes exact.
	e.pack = sumMax < 1<<31 && (uint64(maxSig*maxSig)<<uint(psh)+1)<<8 < 1<<31
	for c := 0; c < 256; c++ {
		d := e.In.Decompose(uint32(c))
		var t uint32
		if d.Neg {
			t |= 1 << 31
		}
		switch d.Class {
		case fp8.NaN:
			t |= 1<<30 | 1<<29
		case fp8.Inf:
			t |= 1 << 30
		case fp8.Finite:
			m, ex := d.M, d.E
			if normalize {
				for m < 1<<uint(mbits) {
					m <<= 1
					ex--
				}
			}
			be := ex + e.eb
			if be < 32 || be > 63 {
				return nil, fmt.Errorf("wgsl: model %s: code %#02x has exponent %d outside the table's frame", name, c, ex)
			}
			t |= uint32(m)<<8 | uint32(be)
		}
		e.table[c] = t
	}
	return e, nil
}

// chainWG is the workgroup size of the chain kernel.
const chainWG = 64

// words returns the u32 words one step reads of each operand and the
// codes of each word that belong to the step.
func (e *Emulation) words() (wps, lpw int) {
	switch {
	case e.Bits == 16:
		return e.L / 2, 2
	case e.MMASync:
		return 8, 2
	}
	return e.L / 4, 4
}

func (e *Emulation) consts() []constDecl {
	mbits := e.In.FracBits()
	wps, lpw := e.words()
	spec := e.In.Spec()
	return []constDecl{
		cU32("WG", chainWG), cU32("L", e.L), cU32("WPS", wps), cU32("LPW", lpw), cU32("NX", wps*lpw),
		cU32("F", e.F), cU32("FB", e.FB), cU32("PSH", e.F-2*mbits),
		cU32("CL", max(e.F-23, 0)), cU32("CR", max(23-e.F, 0)),
		cI32("EB2", 2*e.eb), cI32("EZERO", e.ezero), cBool("PACK", e.pack), cBool("MMA_SYNC", e.MMASync),
		cU32("CB", e.Bits), cU32("CPW", 32/e.Bits),
		cU32("IN_MBITS", mbits), cU32("IN_EMASK", 1<<spec.ExpBits-1), cI32("IN_BIAS", spec.Bias),
	}
}

// loopBudget is the number of loop iterations one invocation may run in one
// dispatch. lavapipe ends every loop of an invocation, silently, once the
// invocation has run about 65535 iterations in all its loops together (seen
// here: a loop after a nested 1000 x 100 loop ran 2 iterations); the kernels
// stay well below.
const loopBudget = 40000

// instrPerDispatch is how many 32-element instructions one invocation of
// the chain kernel runs per dispatch, counting the worst case of every loop
// (no unrolling assumed; the slow paths of specials and exact zeros taken at
// every step).
func (e *Emulation) instrPerDispatch() int {
	wps, lpw := e.words()
	steps := 32 / e.L
	if e.MMASync {
		steps = 2
	}
	perStep := wps + wps*lpw + wps*lpw + 32 + 1 // pass 1, pass 2, a slow path, the loop itself
	return max(1, loopBudget/(steps*perStep+2))
}

// ChainInput is a batch of n dot products of K codes each for
// [Runner.Chain].
type ChainInput struct {
	// K is the length of every dot product.
	K int
	// A and B hold n rows of K codes each, row-major: output i is row i of
	// A times row i of B. They hold the codes of a model with 8-bit inputs
	// (e4m3, e5m2); A16 and B16 hold those of a model with 16-bit inputs
	// (bf16, f16), and the other pair is then empty.
	A, B     []uint8
	A16, B16 []uint16
	// C holds the n initial accumulators.
	C []float32
}

// Chain computes, on the GPU, out[i] = accum.Chain(model, A[i], B[i], C[i],
// promote) for the n rows of in, bit for bit (NaN results are the canonical
// 0x7fffffff; accum may return another NaN pattern where Go's own FP32 add
// propagates an input NaN). promote is 0 (the chain runs from C[i] through
// the whole K loop) or a positive multiple of 32 (the chain restarts from +0
// every promote elements and is added to an FP32 register that starts at
// C[i]); as in accum.Chain, a promotion interval that covers the whole K
// with C[i] = ±0 runs the chain from C[i]. model is one of [Emulations];
// one with 16-bit inputs reads in.A16 and in.B16, and K must then be a
// multiple of its step's L (the 16-bit step reads whole steps).
//
// K may be up to 2^24: the K loop is split across dispatches with the
// accumulators carried in a buffer, so that no invocation runs into
// lavapipe's loop limit.
func (r *Runner) Chain(ctx context.Context, model string, in ChainInput, promote int) ([]float32, error) {
	e, err := LookupEmulation(model)
	if err != nil {
		return nil, err
	}
	n, err := in.check(e)
	if err != nil {
		return nil, err
	}
	if promote < 0 || promote%32 != 0 {
		return nil, fmt.Errorf("wgsl: promotion interval %d is not 0 or a positive multiple of 32", promote)
	}
	// Outputs whose chain runs from c (accum.Chain's first case) and those
	// promoted, each group in its own run.
	var direct, promoted []int
	for i := 0; i < n; i++ {
		if promote == 0 || promote >= in.K && in.C[i] == 0 {
			direct = append(direct, i)
		} else {
			promoted = append(promoted, i)
		}
	}
	out := make([]float32, n)
	for _, g := range []struct {
		rows    []int
		promote int
	}{{direct, 0}, {promoted, promote}} {
		if len(g.rows) == 0 {
			continue
		}
		sub := in
		if len(g.rows) != n {
			sub = in.rows(g.rows)
		}
		res, err := r.chain(ctx, e, sub, g.promote, 0, false)
		if err != nil {
			return nil, err
		}
		for j, i := range g.rows {
			out[i] = res.out[j]
		}
	}
	return out, nil
}

// emulation returns how the chain kernel runs the named model over 8-bit
// codes (ChainInput.A and B: BenchChain's inputs).
func emulation(name string) (*Emulation, error) {
	e, err := LookupEmulation(name)
	if err == nil && e.Bits != 8 {
		return nil, fmt.Errorf("wgsl: model %s reads %v: 16-bit codes, not the 8-bit codes of ChainInput.A and B", name, e.In)
	}
	return e, err
}

func (in ChainInput) check(e *Emulation) (int, error) {
	if in.K <= 0 || in.K > 1<<24 {
		return 0, fmt.Errorf("wgsl: K = %d is outside 1..2^24", in.K)
	}
	n := len(in.C)
	na, nb, other, field := len(in.A), len(in.B), len(in.A16)+len(in.B16), "A and B"
	if e.Bits == 16 {
		na, nb, other, field = len(in.A16), len(in.B16), len(in.A)+len(in.B), "A16 and B16"
		if in.K%e.L != 0 {
			return 0, fmt.Errorf("wgsl: model %s: K = %d is not a multiple of its step's L = %d", e.Model, in.K, e.L)
		}
	}
	if other != 0 {
		return 0, fmt.Errorf("wgsl: model %s reads %d-bit codes from %s; the other codes are set", e.Model, e.Bits, field)
	}
	if na != n*in.K || nb != n*in.K {
		return 0, fmt.Errorf("wgsl: %d accumulators need %d codes in %s, got %d and %d", n, n*in.K, field, na, nb)
	}
	return n, nil
}

func (in ChainInput) rows(idx []int) ChainInput {
	s := ChainInput{K: in.K, C: make([]float32, 0, len(idx))}
	for _, i := range idx {
		if in.A16 != nil {
			s.A16 = append(s.A16, in.A16[i*in.K:(i+1)*in.K]...)
			s.B16 = append(s.B16, in.B16[i*in.K:(i+1)*in.K]...)
		} else {
			s.A = append(s.A, in.A[i*in.K:(i+1)*in.K]...)
			s.B = append(s.B, in.B[i*in.K:(i+1)*in.K]...)
		}
		s.C = append(s.C, in.C[i])
	}
	return s
}

// packRows packs n rows of K codes into u32 words, 4 codes a word (code k
// in bits 8(k mod 4)..), each row padded with zero codes to rowWords words.
func packRows(codes []uint8, n, K, rowWords int) []byte {
	b := make([]byte, 4*n*rowWords)
	for i := 0; i < n; i++ {
		copy(b[4*i*rowWords:], codes[i*K:(i+1)*K])
	}
	return b
}

// packRows16 packs n rows of K 16-bit codes into u32 words, 2 codes a word
// (code k in bits 16(k mod 2)..), each row padded with zero codes to
// rowWords words.
func packRows16(codes []uint16, n, K, rowWords int) []byte {
	w := make([]uint32, n*rowWords)
	for i := 0; i < n; i++ {
		for k, c := range codes[i*K : (i+1)*K] {
			w[i*rowWords+k/2] |= uint32(c) << (16 * (k % 2))
		}
	}
	return u32Bytes(w)
}

type chainResult struct {
	out    []float32
	timing Timing
}

// chain runs the kernel over in (pairs of rows) or, with gemmN > 0, over
// the n = len(in.C) outputs of a GEMM whose A has n/gemmN rows and B gemmN
// rows (in.A and in.B then hold those rows). With timed, the K loop's
// dispatches are timed.
func (r *Runner) chain(ctx context.Context, e *Emulation, in ChainInput, promote, gemmN int, timed bool) (chainResult, error) {
	n := len(in.C)
	rowsA, rowsB := n, n
	if gemmN > 0 {
		rowsA, rowsB = n/gemmN, gemmN
	}
	if e.Bits == 16 {
		rowWords := (in.K + 1) / 2
		return r.chainPacked(ctx, e, packRows16(in.A16, rowsA, in.K, rowWords), packRows16(in.B16, rowsB, in.K, rowWords), rowWords, in.K, in.C, promote, gemmN, timed)
	}
	rowWords := (in.K + 3) / 4
	return r.chainPacked(ctx, e, packRows(in.A, rowsA, in.K, rowWords), packRows(in.B, rowsB, in.K, rowWords), rowWords, in.K, in.C, promote, gemmN, timed)
}

// chainPacked is chain over rows already packed into words of the
// emulation's codes (rowWords words a row): the 16-bit step's tests pack 2
// codes a word.
func (r *Runner) chainPacked(ctx context.Context, e *Emulation, pa, pb []byte, rowWords, K int, C []float32, promote, gemmN int, timed bool) (chainResult, error) {
	if err := r.lock(); err != nil {
		return chainResult{}, err
	}
	defer r.mu.Unlock()
	pc, err := r.prepareChainLocked(e, pa, pb, rowWords, K, C, promote, gemmN)
	if err != nil {
		return chainResult{}, err
	}
	defer pc.free()
	t, err := r.be.run(ctx, pc.calls, timed)
	if err != nil {
		return chainResult{}, err
	}
	out, err := pc.read(ctx)
	return chainResult{out: out, timing: t}, err
}

// preparedChain is one chain's buffers on the device and its dispatches,
// so that a benchmark can run the same dispatches again and again without
// packing and uploading between them (a GPU left idle between repetitions
// clocks down). Each run continues from the state the last one left: the
// same work, but only the first run's result is the chain's.
type preparedChain struct {
	r        *Runner
	calls    []call
	bufs     []buffer
	state    buffer
	n        int
	promote  int
	initial  []byte
	released bool
}

// prepareChainLocked uploads the code table, the packed rows and the
// initial state, and lays out the K loop's dispatches. r.mu must be held
// for as long as the prepared chain is used.
func (r *Runner) prepareChainLocked(e *Emulation, pa, pb []byte, rowWords, K int, C []float32, promote, gemmN int) (*preparedChain, error) {
	n := len(C)
	pc := &preparedChain{r: r, n: n, promote: promote}
	tab := make([]byte, 4*256)
	for i, t := range e.table {
		binary.LittleEndian.PutUint32(tab[4*i:], t)
	}
	state := make([]uint32, 2*n)
	for i, c := range C {
		if promote == 0 {
			state[2*i+1] = math.Float32bits(c)
		} else {
			state[2*i] = math.Float32bits(c)
		}
	}
	pc.initial = u32Bytes(state)
	for _, u := range []struct {
		name string
		data []byte
	}{{"tfdpa.table", tab}, {"tfdpa.A", pa}, {"tfdpa.B", pb}, {"tfdpa.state", pc.initial}} {
		b, err := r.be.upload(u.name, u.data)
		if err != nil {
			pc.free()
			return nil, err
		}
		pc.bufs = append(pc.bufs, b)
	}
	pc.state = pc.bufs[3]
	per := e.instrPerDispatch() * 32
	if r.maxInstr > 0 {
		per = r.maxInstr * 32
	}
	x, y, stride := grid(n, chainWG)
	ks := &kernelSpec{file: "tfdpa", include: []string{"tfdpa_step"}, entry: "chain", consts: e.consts(), storage: []access{readOnly, readOnly, readOnly, readWrite}}
	for k := 0; k < K; k += per {
		pc.calls = append(pc.calls, call{k: ks, bufs: pc.bufs, params: []uint32{uint32(n), uint32(K), uint32(rowWords), uint32(k), uint32(min(k+per, K)),
			uint32(promote), uint32(gemmN), stride}, x: x, y: y})
	}
	return pc, nil
}

// reset puts the initial state back (a fresh upload into a new state
// buffer), so that the next run computes the chain itself again.
func (pc *preparedChain) reset() error {
	b, err := pc.r.be.upload("tfdpa.state", pc.initial)
	if err != nil {
		return err
	}
	pc.r.be.free(pc.state)
	pc.bufs[3], pc.state = b, b // every call's bufs is pc.bufs itself
	return nil
}

// read returns the chain's outputs from the state buffer.
func (pc *preparedChain) read(ctx context.Context) ([]float32, error) {
	raw, err := pc.r.be.read(ctx, pc.state, uint64(8*pc.n))
	if err != nil {
		return nil, err
	}
	st := bytesU32(raw)
	out := make([]float32, pc.n)
	for i := range out {
		if pc.promote == 0 {
			out[i] = math.Float32frombits(st[2*i+1])
		} else {
			out[i] = math.Float32frombits(st[2*i])
		}
	}
	return out, nil
}

// free releases the device buffers (once).
func (pc *preparedChain) free() {
	if pc.released {
		return
	}
	pc.released = true
	for _, b := range pc.bufs {
		pc.r.be.free(b)
	}
}

// Step runs one 32-element instruction of model per row on the GPU:
// out[i] = Stepper.Step(A[i], B[i], C[i]), bit for bit with accum. in.K
// must be 32 (use Chain, which equals Model.Dot, for shorter rows).
func (r *Runner) Step(ctx context.Context, model string, in ChainInput) ([]float32, error) {
	if in.K != 32 {
		return nil, fmt.Errorf("wgsl: one instruction has 32 elements, not %d", in.K)
	}
	return r.Chain(ctx, model, in, 0)
}
