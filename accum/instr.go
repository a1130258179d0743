package accum

import (
	"fmt"
	"math"
	"strings"
)

// Instruction is a matrix instruction whose operands do not fit Model's
// 16-bit codes of one format: a and b of different formats (kind::f8f6f4
// with FP4), block scales (MX, NVFP4), 32- and 64-bit operands (TF32, AMD
// f32/xf32/f64). Every Instruction is named after its PTX or AMD ISA
// instruction and listed by Instructions (and `lab list models`) with the
// source of its arithmetic.
type Instruction interface {
	// Name is the model name, for example "sm100.tcgen05.mxf8f6f4.e4m3.e4m3.f32".
	Name() string
	// Info describes the instruction, its parameters and their source.
	Info() InstrInfo
	// Step computes d = D[i][j] of one instruction from len(a) <= K
	// elements (missing elements are +0). a and b hold codes of Info().A and
	// Info().B (tf32 and f32 as float32 bit patterns, f64 as float64 bit
	// patterns); sa and sb hold len(a)/Block scale codes (nil when the
	// instruction is unscaled); c and the result are bit patterns of
	// Info().C (f16, f32 or f64). Step never panics on any code value; it
	// panics only when len(b) != len(a) or a scale slice is too short (a
	// programming error).
	Step(a, b []uint64, sa, sb []uint8, c uint64) uint64
}

// InstrInfo describes an Instruction.
type InstrInfo struct {
	Name string
	Kind Kind
	// A, B, C name the formats of a, b and c/d as the peer-record files do:
	// e4m3, e5m2, e2m1, e2m3, e3m2, e4m3fnuz, e5m2fnuz, f16, bf16, tf32,
	// f32, f64.
	A, B, C string
	// K is the number of elements of one instruction.
	K int
	// Scale is the scale format (ue8m0, ue4m3; "" when unscaled) and Block
	// the elements per scale factor.
	Scale string
	Block int
	// Params are the step parameters where the kind has them (F, L,
	// e_zero, rho; zero otherwise).
	F, L, EZero int
	Rho         Rounding
	// Group is the number of products summed exactly before alignment (16
	// for the FP4 k = 64 instructions; 0 when every product is a term).
	Group int
	// Doc is one line on what the instruction computes; Source says where
	// the arithmetic comes from and what verified it.
	Doc, Source string
}

// String gives the parameters in one line.
func (i InstrInfo) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s K=%d", i.Kind, i.K)
	if i.L > 0 {
		fmt.Fprintf(&b, " L=%d F=%d rho=%s e_zero=%d", i.L, i.F, i.Rho, i.EZero)
	}
	if i.Group > 0 {
		fmt.Fprintf(&b, " G=%d", i.Group)
	}
	fmt.Fprintf(&b, " a=%s b=%s c/d=%s", i.A, i.B, i.C)
	if i.Scale != "" {
		fmt.Fprintf(&b, " scales %s per %d elements", i.Scale, i.Block)
	}
	return b.String()
}

// The kinds of Instruction arithmetic.
const (
	KindScaled   Kind = "block-scaled T-FDPA"              // scale exponents added per block (ST-FDPA), or FP4 groups of 16 (GST-FDPA)
	KindFMAChain Kind = "FMA chain"                        // AMD f32/f64: one IEEE fused multiply-add per element
	KindPairwise Kind = "pairwise FP32 tree"               // AMD CDNA1/2 f16/bf16
	KindAMDFDPA  Kind = "AMD fused dot (round down) + RNE" // AMD CDNA3 f16/bf16/xf32/fp8
)

// PeerVariant is the same instruction computed with a documented peer rule
// that the named model does not follow (see docs/evidence.md): the verifier
// counts a record that differs from the model but equals a variant as a
// documented deviation with the variant's Reason, never as a match.
type PeerVariant struct {
	Reason string
	Step   func(a, b []uint64, sa, sb []uint8, c uint64) uint64
}

// PeerVarianter is an Instruction with documented peer variants, in the
// order the verifier tries them.
type PeerVarianter interface {
	PeerVariants() []PeerVariant
}

// LookupInstruction returns the named instruction (a row of the table
// listed AsInstruction), or an error listing the known names.
func LookupInstruction(name string) (Instruction, error) {
	if m, ok := cat().instrs[name]; ok {
		return m, nil
	}
	return nil, fmt.Errorf("unknown instruction model %q; known: %s", name, strings.Join(InstructionNames(), ", "))
}

// InstructionNames returns every instruction name, sorted, apart from those
// of rows that are also a Model of the same name (Names lists those).
func InstructionNames() []string { return append([]string(nil), cat().instrNames...) }

// Instructions returns the instructions of InstructionNames, sorted by name.
func Instructions() []Instruction {
	c := cat()
	ms := make([]Instruction, len(c.instrNames))
	for i, n := range c.instrNames {
		ms[i] = c.instrs[n]
	}
	return ms
}

// InstrChain returns one output element of a kernel's K loop over len(a)
// elements with instruction m, each instruction's d feeding the next as c.
// With promote = N > 0 the loop is cut into blocks of N elements whose
// chains start from +0 and are added, each with one round-to-nearest-even
// add, to a register of m's output format that starts at c (FP32 for f32
// and f16 outputs, FP64 for f64). N must be 0 or a multiple of K; sa and sb
// hold len(a)/Block scales (nil when unscaled). It is the reference of
// ChainCodes.
func InstrChain(m Instruction, a, b []uint64, sa, sb []uint8, c uint64, promote int) (uint64, error) {
	in := m.Info()
	if len(b) != len(a) {
		return 0, errorf("chain: %d elements of a, %d of b", len(a), len(b))
	}
	if promote > 0 && in.C == "f16" {
		return 0, errorf("promotion of %s's f16 results is not modelled (no kernel promotes an f16 accumulator)", in.Name)
	}
	if err := checkChain(in, len(a), sa, sb, promote); err != nil {
		return 0, err
	}
	d, _ := kLoop(len(a), promote, c, func(i, j int, c uint64) (uint64, bool) {
		for k := i; k < j; k += in.K {
			h := min(k+in.K, j)
			var xa, xb []uint8
			if in.Scale != "" {
				xa, xb = sa[k/in.Block:(h+in.Block-1)/in.Block], sb[k/in.Block:(h+in.Block-1)/in.Block]
			}
			c = m.Step(a[k:h], b[k:h], xa, xb, c)
		}
		return c, true
	}, addFor(in.C))
	return d, nil
}

// checkChain returns an error unless promote is 0 or a positive multiple
// of in.K and sa and sb hold the scales of n elements.
func checkChain(in InstrInfo, n int, sa, sb []uint8, promote int) error {
	if promote < 0 || promote > 0 && promote%in.K != 0 {
		return errorf("promotion interval %d is not 0 or a positive multiple of %s's K = %d", promote, in.Name, in.K)
	}
	if in.Scale != "" {
		k := (n + in.Block - 1) / in.Block
		if len(sa) < k || len(sb) < k {
			return errorf("chain: %d elements need %d scales each, have %d and %d", n, k, len(sa), len(sb))
		}
	}
	return nil
}

// kLoop is the K loop of every chain (Chain, InstrChain, ChainCodes): with
// promote == 0, run(0, n, c): one chain over the n elements from c; with
// promote = N > 0, the elements cut into blocks of N, each block's chain
// run(i, j, +0) added to a register that starts at c with add. ok is false
// when a run says its path cannot compute its block (the caller then takes
// another path).
func kLoop(n, promote int, c uint64, run func(i, j int, c uint64) (uint64, bool), add func(acc, d uint64) uint64) (uint64, bool) {
	if promote == 0 {
		return run(0, n, c)
	}
	acc := c
	for i := 0; i < n; i += promote {
		d, ok := run(i, min(i+promote, n), 0)
		if !ok {
			return 0, false
		}
		acc = add(acc, d)
	}
	return acc, true
}

// addFor returns the promotion add of an accumulator format: FP64 for
// f64, FP32 otherwise.
func addFor(f string) func(acc, d uint64) uint64 {
	if f == "f64" {
		return func(acc, d uint64) uint64 { return addRNE("f64", acc, d) }
	}
	return func(acc, d uint64) uint64 { return addRNE("f32", acc, d) }
}

// addRNE adds two values of format f (f32 or f64) with round to nearest
// even.
func addRNE(f string, acc, d uint64) uint64 {
	if f == "f64" {
		return math.Float64bits(math.Float64frombits(acc) + math.Float64frombits(d))
	}
	return uint64(math.Float32bits(math.Float32frombits(uint32(acc)) + math.Float32frombits(uint32(d))))
}
