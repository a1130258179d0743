package wgsl

import (
	"context"
	"fmt"
	"slices"

	"github.com/fp8lab/fp8lab/accum"
	"github.com/fp8lab/fp8lab/fp8"
)

// ScaledInput is a batch of steps of one block-scaled (or narrow-format)
// instruction: output i reads A[i*K:(i+1)*K], B likewise, the K/Block
// scales SA[i*K/Block:] and SB likewise (nil when the instruction is
// unscaled), and the FP32 accumulator C[i] (float32 bits).
type ScaledInput struct {
	K      int
	A, B   []uint8
	SA, SB []uint8
	C      []uint32
}

// scaledEmulation is an instruction that scaled.wgsl runs: one step of K
// elements with an FP32 accumulator, RZ to FP32.
type scaledEmulation struct {
	info   accum.InstrInfo
	a, b   fp8.Format
	scale  fp8.Format
	widen  bool
	consts []constDecl
	table  []uint32 // 3 × 256 entries: a, b, scale
}

// ScaledInstructions lists the accum instructions that [Runner.ScaledStep]
// runs: NVIDIA's kind::f8f6f4, mxf8f6f4, mxf4 and mxf4nvf4 with an FP32
// accumulator (tcgen05 on sm_100a, mma.sync on sm_120a), every operand
// format pair, FP6 included.
func ScaledInstructions() []string {
	var names []string
	for _, m := range accum.Instructions() {
		if _, err := scaledEmulationOf(m.Info()); err == nil {
			names = append(names, m.Name())
		}
	}
	return names
}

func scaledEmulationOf(info accum.InstrInfo) (*scaledEmulation, error) {
	narrow := func(f fp8.Format) bool {
		return f == fp8.FormatE2M1 || f == fp8.FormatE2M3 || f == fp8.FormatE3M2
	}
	e := &scaledEmulation{info: info}
	var err error
	if e.a, err = fp8.ParseFormat(info.A); err != nil {
		return nil, err
	}
	if e.b, err = fp8.ParseFormat(info.B); err != nil {
		return nil, err
	}
	eight := func(f fp8.Format) bool {
		return f == fp8.FormatE4M3 || f == fp8.FormatE5M2 || narrow(f)
	}
	switch {
	case info.Kind != accum.KindScaled && info.Kind != accum.KindTFDPA:
		return nil, fmt.Errorf("wgsl: %s is a %s instruction, not a (block-scaled) T-FDPA step", info.Name, info.Kind)
	case !eight(e.a) || !eight(e.b):
		return nil, fmt.Errorf("wgsl: %s reads %s x %s; the scaled kernel reads e4m3, e5m2, e2m1, e2m3, e3m2", info.Name, info.A, info.B)
	case info.C != "f32" || info.Rho != accum.RZFP32:
		return nil, fmt.Errorf("wgsl: %s accumulates in %s; the scaled kernel has an FP32 accumulator (RZ)", info.Name, info.C)
	case info.L != info.K || (info.K != 32 && info.K != 64):
		return nil, fmt.Errorf("wgsl: %s: K = %d, L = %d; the scaled kernel runs one step of 32 or 64 elements", info.Name, info.K, info.L)
	case info.F > 40:
		return nil, fmt.Errorf("wgsl: %s: F = %d is beyond the kernel's 64-bit sum", info.Name, info.F)
	}
	block := info.K
	if info.Scale != "" {
		if e.scale, err = fp8.ParseFormat(info.Scale); err != nil {
			return nil, err
		}
		block = info.Block
	}
	if block <= 0 || info.K%block != 0 {
		return nil, fmt.Errorf("wgsl: %s: block %d does not divide K = %d", info.Name, block, info.K)
	}
	e.widen = info.Group == 0
	e.table = make([]uint32, 3*256)
	for i, f := range []fp8.Format{e.a, e.b, e.scale} {
		if f == fp8.FormatInvalid {
			continue
		}
		for c := 0; c < 256; c++ {
			e.table[i*256+c] = scaledEntry(f, uint32(c), i < 2 && e.widen && narrow(f))
		}
	}
	fs := 0
	if e.scale != fp8.FormatInvalid {
		fs = e.scale.FracBits()
	}
	e.consts = []constDecl{cU32("K", info.K), cU32("F", info.F), cI32("EZERO", info.EZero),
		cU32("FA", e.a.FracBits()), cU32("FB", e.b.FracBits()), cU32("FS", fs),
		cBool("SCALED", info.Scale != ""), cU32("BLOCK", block), cU32("GROUP", info.Group), cU32("WG", convertWG)}
	e.consts = append(e.consts, blockStepConsts("K", "F", "EZERO", "FA", "FB", "FS", "SCALED", "BLOCK", "GROUP")...)
	return e, nil
}

// scaledEntry is the table entry of a code: flags | (e+2048)<<16 | m, with
// accum's decoding (FP4/FP6 subnormals widened to the e4m3 values they
// equal when widen is set).
func scaledEntry(f fp8.Format, code uint32, widen bool) uint32 {
	p := f.Decompose(code & (1<<f.CodeBits() - 1))
	var flags uint32
	if p.Neg {
		flags |= 1 << 28
	}
	switch p.Class {
	case fp8.NaN:
		return flags | 1<<31
	case fp8.Inf:
		return flags | 1<<30
	case fp8.Zero:
		return flags | 1<<29
	}
	m, e := p.M, p.E
	if widen {
		for m < 1<<uint(f.FracBits()) {
			m <<= 1
			e--
		}
	}
	return flags | uint32(e+2048)<<16 | uint32(m)
}

// ScaledStep runs one step of the named instruction for every output of
// in on the GPU (scaled.wgsl) and returns d as float32 bits, bit for bit
// accum's Instruction.Step: MMA-Sim's ST-FDPA (each product's exponent plus
// its block's two scale exponents, ue4m3 significands multiplied in) and
// GST-FDPA (FP4 groups of 16 summed exactly), e_zero for zero terms, a zero
// sum +0, the canonical NaN 0x7fffffff. Instructions: [ScaledInstructions].
func (r *Runner) ScaledStep(ctx context.Context, name string, in ScaledInput) ([]uint32, error) {
	m, err := accum.LookupInstruction(name)
	if err != nil {
		return nil, err
	}
	e, err := scaledEmulationOf(m.Info())
	if err != nil {
		return nil, err
	}
	n := len(in.C)
	K := e.info.K
	if in.K != K {
		return nil, fmt.Errorf("wgsl: %s takes K = %d elements, the input has %d", name, K, in.K)
	}
	if len(in.A) != n*K || len(in.B) != n*K {
		return nil, fmt.Errorf("wgsl: %d outputs need %d codes of a and of b, got %d and %d", n, n*K, len(in.A), len(in.B))
	}
	nsc := 1
	if e.info.Scale != "" {
		nsc = K / e.info.Block
		if len(in.SA) != n*nsc || len(in.SB) != n*nsc {
			return nil, fmt.Errorf("wgsl: %d outputs need %d scales of a and of b, got %d and %d", n, n*nsc, len(in.SA), len(in.SB))
		}
	}
	if n == 0 {
		return nil, nil
	}
	widen := func(x []uint8) []uint32 {
		w := make([]uint32, len(x))
		for i, v := range x {
			w[i] = uint32(v)
		}
		return w
	}
	s := make([]uint32, 2*n*nsc)
	if e.info.Scale != "" {
		for i := 0; i < n; i++ {
			for j := 0; j < nsc; j++ {
				s[2*i*nsc+j] = uint32(in.SA[i*nsc+j])
				s[2*i*nsc+nsc+j] = uint32(in.SB[i*nsc+j])
			}
		}
	}
	if err := r.lock(); err != nil {
		return nil, err
	}
	defer r.mu.Unlock()
	var bufs []buffer
	defer func() {
		for _, b := range bufs {
			r.be.free(b)
		}
	}()
	for _, u := range []struct {
		label string
		data  []uint32
	}{{"scaled.tab", e.table}, {"scaled.a", widen(in.A)}, {"scaled.b", widen(in.B)}, {"scaled.s", s}, {"scaled.c", slices.Clone(in.C)}} {
		b, err := r.be.upload(u.label, u32Bytes(u.data))
		if err != nil {
			return nil, err
		}
		bufs = append(bufs, b)
	}
	out, err := r.be.alloc("scaled.d", uint64(4*n))
	if err != nil {
		return nil, err
	}
	bufs = append(bufs, out)
	k := &kernelSpec{file: "scaled", include: []string{"blockstep"}, entry: "step", consts: e.consts,
		storage: []access{readOnly, readOnly, readOnly, readOnly, readOnly, readWrite}}
	x, y, stride := grid(n, convertWG)
	if _, err := r.be.run(ctx, []call{{k: k, bufs: bufs, params: []uint32{uint32(n), stride, 0, 0}, x: x, y: y}}, false); err != nil {
		return nil, err
	}
	raw, err := r.be.read(ctx, out, uint64(4*n))
	if err != nil {
		return nil, err
	}
	return bytesU32(raw), nil
}

// blockStepConsts define the constants blockstep.wgsl (the block-scaled
// step shared by scaled.wgsl and attnblock.wgsl, included in their modules)
// reads, SK, SF, SEZERO, SFA, SFB, SFS, SSCALED, SBLOCK and SGROUP, as the
// including shader's constants of the given names.
func blockStepConsts(k, f, ezero, fa, fb, fs, scaled, block, group string) []constDecl {
	return []constDecl{{"SK", "u32", k}, {"SF", "u32", f}, {"SEZERO", "i32", ezero}, {"SFA", "u32", fa}, {"SFB", "u32", fb},
		{"SFS", "u32", fs}, {"SSCALED", "bool", scaled}, {"SBLOCK", "u32", block}, {"SGROUP", "u32", group}}
}
