package golden

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/fp8lab/fp8lab/accum"
	"github.com/fp8lab/fp8lab/fp8"
)

// KhattakC says what a GPU added as C in one Khattak & Mikaitis set.
type KhattakC int

// The handlings of c.
const (
	// KhattakCLoaded: the c file's float32 is the FP32 accumulator C.
	KhattakCLoaded KhattakC = iota + 1
	// KhattakCHalf: the c file's float32 rounded to nearest even FP16
	// (__float2half) is the FP16 accumulator C.
	KhattakCHalf
	// KhattakCZero: the c file is not used; C = +0.
	KhattakCZero
)

// String describes the handling.
func (c KhattakC) String() string {
	switch c {
	case KhattakCLoaded:
		return "c loaded (FP32)"
	case KhattakCHalf:
		return "c rounded to FP16 (RNE, __float2half)"
	case KhattakCZero:
		return "c not used (C = 0)"
	}
	return fmt.Sprintf("KhattakC(%d)", int(c))
}

// KhattakRun says how the sets of some GPUs for one input and output format
// were produced, as the CUDA harnesses (shared/golden/khattak/CUDA) and the
// data show, and which accum model reproduces them.
type KhattakRun struct {
	GPUs        []string
	Format, Out string // as the set names them: fp16/bf16/tf32/E4M3/E5M2, fp32/fp16
	Harness     string // the CUDA file
	Instruction string // the instruction that ran (for wmma: what it compiles to)
	K           int    // elements of that instruction; the lines fill the first ones, the rest are +0
	C           KhattakC
	Model       string
	// Undetermined lists what these outputs cannot tell apart: the model
	// takes one choice (from the sources its Info names), and every other
	// choice listed gives the same N/N (TestKhattakAmbiguities checks
	// each).
	Undetermined string
	// Compare names models whose counts are printed beside (not checks):
	// the instruction a harness names where the data show another ran.
	Compare []KhattakCompare
}

// KhattakCompare is a model run with some c handling for comparison only.
type KhattakCompare struct {
	Model string
	C     KhattakC
	Why   string
}

// The harness files.
const (
	harnessWMMA  = "wmma_fp16_bf16_tf32_input.cu"
	harnessFP8   = "mma_fp8_output_fp32.cu"
	harnessFP8H  = "mma_fp8_output_fp16.cu"
	undetZeroPad = "the lines fill K elements 0-%d only, so the later elements (+0) cannot show whether a step holds %s elements"
	undetEZero   = "e_zero: -20, -21, -22 and -133 give the same"
)

// KhattakRuns is the mapping of every published set onto a model.
//
// Evidence from the harnesses (shared/golden/khattak/CUDA):
//
//   - wmma_fp16_bf16_tf32_input.cu: one wmma::mma_sync of shape m16n16k16
//     (fp16, bf16) or m16n16k8 (tf32); host_reset zero-fills A, B and C,
//     the a line fills row 0 of A (row-major, ld 16), the b line column 0 of
//     B (col-major), c[0] is C[0][0] and d = C[0][0] after the MMA. It reads
//     fma_size values per line: 4 on V100, 8 (fp16, bf16) or 4 (tf32) on
//     A100/A2/Ada/L40S, 16 (fp16, bf16) or 4 (tf32) on H100/H200/B200.
//     C is loaded (load_matrix_sync) when the c line is exactly 32
//     characters (every published c line is); for the FP16 output c is
//     converted with __float2half (RNE) into a half accumulator fragment.
//     wmma compiles to the mma.sync class of HMMA instructions (HMMA.884
//     steps on sm_70), never to wgmma or tcgen05; the SASS was not
//     inspected here (no such GPU): the K split of each model is from the
//     sources its Info names, and these outputs cannot check it where the
//     lines are zero-padded.
//   - mma_fp8_output_fp32.cu: inline PTX
//     mma.sync.aligned.m16n8k32.row.col.f32.{e4m3,e5m2}.{e4m3,e5m2}.f32;
//     thread t of the group holds A row 0 K 4t..4t+3 (a_fp8[0..3]) and
//     16+4t..16+4t+3 (a_fp8[8..11]), B the same K in b_fp8[0..3], [4..7],
//     so the 32 values of a line are K 0..31 in order; thread 0 puts c
//     in c[0] = C[0][0]; D[0] of thread 0 is written.
//   - mma_fp8_output_fp16.cu: the same with .f16 accumulators; c[0] =
//     __float2half(c); the low half of D's first register is written.
//
// The H100 and H200 FP8 -> fp32 outputs do not fit that harness: mma.sync
// with c loaded (sm90.mma.sync.*) gives 0/5000, with C = 0 3203/5000
// (e5m2, TestKhattakAmbiguities); wgmma with c loaded 0/5000 and 2/5000.
// They are the wgmma model with C = 0 (5000/5000), which is what the
// authors' own
// check, model_validation/Validate_TC_models.m, assumes for those sets:
// "C=zeros(size(C)); % D= AB+D where D is zero for fp8 with WGMMA". The
// harness that produced them is not published.
var KhattakRuns = []KhattakRun{
	{GPUs: []string{"V100"}, Format: "fp16", Out: "fp32", Harness: harnessWMMA, Instruction: "wmma m16n16k16 (sm_70: chained m8n8k4 HMMA.884 steps)",
		K: 16, C: KhattakCLoaded, Model: "sm70.mma.f16.f32", Undetermined: fmt.Sprintf(undetZeroPad, 3, "4 or more")},
	{GPUs: []string{"V100"}, Format: "fp16", Out: "fp16", Harness: harnessWMMA, Instruction: "wmma m16n16k16, f16 accumulator (sm_70 mma m8n8k4)",
		K: 16, C: KhattakCHalf, Model: "sm70.mma.f16.f16", Undetermined: "F: 23, 24 and 25 give the same; " + undetEZero + "; " + fmt.Sprintf(undetZeroPad, 3, "4 or more")},
	{GPUs: []string{"A100", "A2", "Ada", "L40S"}, Format: "fp16", Out: "fp32", Harness: harnessWMMA, Instruction: "wmma m16n16k16 (mma.sync m16n8k16, HMMA.16816)",
		K: 16, C: KhattakCLoaded, Model: "sm80.mma.sync.f16.f32", Undetermined: fmt.Sprintf(undetZeroPad, 7, "8 or 16")},
	{GPUs: []string{"A100", "A2", "Ada", "L40S"}, Format: "bf16", Out: "fp32", Harness: harnessWMMA, Instruction: "wmma m16n16k16 (mma.sync m16n8k16, HMMA.16816)",
		K: 16, C: KhattakCLoaded, Model: "sm80.mma.sync.bf16.f32", Undetermined: fmt.Sprintf(undetZeroPad, 7, "8 or 16")},
	{GPUs: []string{"A100", "A2", "Ada", "L40S"}, Format: "fp16", Out: "fp16", Harness: harnessWMMA, Instruction: "wmma m16n16k16, f16 accumulator (mma.sync m16n8k16 .f16)",
		K: 16, C: KhattakCHalf, Model: "sm80.mma.sync.f16.f16", Undetermined: "F: A100 needs F >= 24, A2/Ada/L40S also fit F = 23; " + undetEZero + "; " + fmt.Sprintf(undetZeroPad, 7, "8 or 16")},
	{GPUs: []string{"A100", "A2", "Ada", "L40S"}, Format: "tf32", Out: "fp32", Harness: harnessWMMA, Instruction: "wmma m16n16k8 tf32 (mma.sync m16n8k8)",
		K: 8, C: KhattakCLoaded, Model: "sm80.mma.sync.tf32.f32", Undetermined: fmt.Sprintf(undetZeroPad, 3, "4 or 8")},
	{GPUs: []string{"H100", "H200"}, Format: "fp16", Out: "fp32", Harness: harnessWMMA, Instruction: "wmma m16n16k16 (mma.sync m16n8k16, one HMMA.16816)",
		K: 16, C: KhattakCLoaded, Model: "sm90.wgmma.f16.f32"},
	{GPUs: []string{"H100", "H200"}, Format: "bf16", Out: "fp32", Harness: harnessWMMA, Instruction: "wmma m16n16k16 (mma.sync m16n8k16, one HMMA.16816)",
		K: 16, C: KhattakCLoaded, Model: "sm90.wgmma.bf16.f32"},
	{GPUs: []string{"H100", "H200"}, Format: "fp16", Out: "fp16", Harness: harnessWMMA, Instruction: "wmma m16n16k16, f16 accumulator (mma.sync m16n8k16 .f16)",
		K: 16, C: KhattakCHalf, Model: "sm90.mma.sync.f16.f16", Undetermined: "F: H100 fits 23-25, H200 24-25; " + undetEZero},
	{GPUs: []string{"H100", "H200"}, Format: "tf32", Out: "fp32", Harness: harnessWMMA, Instruction: "wmma m16n16k8 tf32 (mma.sync m16n8k8)",
		K: 8, C: KhattakCLoaded, Model: "sm90.mma.sync.tf32.f32", Undetermined: fmt.Sprintf(undetZeroPad, 3, "4 or 8")},
	{GPUs: []string{"B200"}, Format: "fp16", Out: "fp32", Harness: harnessWMMA, Instruction: "wmma m16n16k16 (mma.sync m16n8k16, HMMA.16816)",
		K: 16, C: KhattakCLoaded, Model: "sm100.mma.sync.f16.f32"},
	{GPUs: []string{"B200"}, Format: "bf16", Out: "fp32", Harness: harnessWMMA, Instruction: "wmma m16n16k16 (mma.sync m16n8k16, HMMA.16816)",
		K: 16, C: KhattakCLoaded, Model: "sm100.mma.sync.bf16.f32"},
	{GPUs: []string{"B200"}, Format: "fp16", Out: "fp16", Harness: harnessWMMA, Instruction: "wmma m16n16k16, f16 accumulator (mma.sync m16n8k16 .f16)",
		K: 16, C: KhattakCHalf, Model: "sm100.mma.sync.f16.f16", Undetermined: undetEZero},
	{GPUs: []string{"B200"}, Format: "tf32", Out: "fp32", Harness: harnessWMMA, Instruction: "wmma m16n16k8 tf32 (mma.sync m16n8k8)",
		K: 8, C: KhattakCLoaded, Model: "sm100.mma.sync.tf32.f32", Undetermined: fmt.Sprintf(undetZeroPad, 3, "4 or 8")},

	{GPUs: []string{"Ada", "L40S"}, Format: "E4M3", Out: "fp32", Harness: harnessFP8, Instruction: "mma.sync m16n8k32 e4m3 f32 (native on sm_89)",
		K: 32, C: KhattakCLoaded, Model: "sm89.mma.sync.e4m3.f32", Undetermined: "e_zero (-131 to -133 give the same)"},
	{GPUs: []string{"Ada", "L40S"}, Format: "E5M2", Out: "fp32", Harness: harnessFP8, Instruction: "mma.sync m16n8k32 e5m2 f32 (native on sm_89)",
		K: 32, C: KhattakCLoaded, Model: "sm89.mma.sync.e5m2.f32", Undetermined: "e_zero (-131 to -133 give the same)"},
	{GPUs: []string{"Ada"}, Format: "E4M3", Out: "fp16", Harness: harnessFP8H, Instruction: "mma.sync m16n8k32 e4m3 f16 (native on sm_89)",
		K: 32, C: KhattakCHalf, Model: "sm89.mma.sync.e4m3.f16", Undetermined: undetEZero},
	{GPUs: []string{"Ada"}, Format: "E5M2", Out: "fp16", Harness: harnessFP8H, Instruction: "mma.sync m16n8k32 e5m2 f16 (native on sm_89)",
		K: 32, C: KhattakCHalf, Model: "sm89.mma.sync.e5m2.f16", Undetermined: undetEZero},

	{GPUs: []string{"H100", "H200"}, Format: "E4M3", Out: "fp32", Harness: "not published (" + harnessFP8 + " issues mma.sync with c: the outputs reject it)",
		Instruction: "wgmma m64nNk32 e4m3 f32 with C = 0", K: 32, C: KhattakCZero, Model: "sm90.wgmma.e4m3.f32",
		Undetermined: "whether the kernel passed C = 0 or scale-d = 0 (the same step)",
		Compare:      []KhattakCompare{{"sm90.mma.sync.e4m3.f32", KhattakCLoaded, "the instruction of " + harnessFP8 + ", c loaded"}}},
	{GPUs: []string{"H100", "H200"}, Format: "E5M2", Out: "fp32", Harness: "not published (" + harnessFP8 + " issues mma.sync with c: the outputs reject it)",
		Instruction: "wgmma m64nNk32 e5m2 f32 with C = 0", K: 32, C: KhattakCZero, Model: "sm90.wgmma.e5m2.f32",
		Undetermined: "whether the kernel passed C = 0 or scale-d = 0 (the same step)",
		Compare:      []KhattakCompare{{"sm90.mma.sync.e5m2.f32", KhattakCLoaded, "the instruction of " + harnessFP8 + ", c loaded"}}},
	{GPUs: []string{"H100", "H200"}, Format: "E4M3", Out: "fp16", Harness: harnessFP8H, Instruction: "mma.sync m16n8k32 e4m3 f16 (emulated by ptxas on HMMA.16816.F16)",
		K: 32, C: KhattakCHalf, Model: "sm90.mma.sync.e4m3.f16", Undetermined: "F: 23 to 26 give the same; " + undetEZero},
	{GPUs: []string{"H100", "H200"}, Format: "E5M2", Out: "fp16", Harness: harnessFP8H, Instruction: "mma.sync m16n8k32 e5m2 f16 (emulated by ptxas on HMMA.16816.F16)",
		K: 32, C: KhattakCHalf, Model: "sm90.mma.sync.e5m2.f16", Undetermined: "F: 23 to 26 give the same; " + undetEZero},

	{GPUs: []string{"B200"}, Format: "E4M3", Out: "fp32", Harness: harnessFP8, Instruction: "mma.sync m16n8k32 e4m3 f32 (emulated by ptxas on HMMA.16816)",
		K: 32, C: KhattakCLoaded, Model: "sm100.mma.sync.e4m3.f32",
		Undetermined: "which K elements each FP16 step takes (k mod 4 in {0,1}, K 0-15, even k, k mod 8 < 4, k mod 16 < 8 all give the same) and F (23 to 26)",
		Compare:      []KhattakCompare{{"sm100.tcgen05.f8f6f4.f32", KhattakCLoaded, "the native Blackwell FP8 step (tcgen05), c loaded"}}},
	{GPUs: []string{"B200"}, Format: "E5M2", Out: "fp32", Harness: harnessFP8, Instruction: "mma.sync m16n8k32 e5m2 f32 (emulated by ptxas on HMMA.16816)",
		K: 32, C: KhattakCLoaded, Model: "sm100.mma.sync.e5m2.f32",
		Undetermined: "which K elements each FP16 step takes (k mod 4 in {0,1}, K 0-15 and even k give the same) and F (23 to 26)"},
	{GPUs: []string{"B200"}, Format: "E4M3", Out: "fp16", Harness: harnessFP8H, Instruction: "mma.sync m16n8k32 e4m3 f16 (emulated by ptxas on HMMA.16816.F16)",
		K: 32, C: KhattakCHalf, Model: "sm100.mma.sync.e4m3.f16", Undetermined: "F: 23 to 26 give the same; " + undetEZero},
	{GPUs: []string{"B200"}, Format: "E5M2", Out: "fp16", Harness: harnessFP8H, Instruction: "mma.sync m16n8k32 e5m2 f16 (emulated by ptxas on HMMA.16816.F16)",
		K: 32, C: KhattakCHalf, Model: "sm100.mma.sync.e5m2.f16", Undetermined: "F: 23 to 26 give the same; " + undetEZero},
}

// LookupKhattakRun returns the run that produced a set.
func LookupKhattakRun(gpu, format, out string) (*KhattakRun, error) {
	for i := range KhattakRuns {
		r := &KhattakRuns[i]
		if r.Format == format && r.Out == out && slices.Contains(r.GPUs, gpu) {
			return r, nil
		}
	}
	return nil, fmt.Errorf("no known Khattak & Mikaitis run for %s %s -> %s", gpu, format, out)
}

// khattakFormat is the accum input format of a set's format name.
func khattakFormat(name string) (fp8.Format, error) {
	switch name {
	case "fp16":
		return fp8.FormatFP16, nil
	case "bf16":
		return fp8.FormatBF16, nil
	case "tf32":
		return fp8.FormatTF32, nil
	case "E4M3":
		return fp8.FormatE4M3, nil
	case "E5M2":
		return fp8.FormatE5M2, nil
	}
	return 0, fmt.Errorf("unknown input format %q", name)
}

// khattakCode converts one published input (float32 bits) as the harness
// does: __float2half, __float2bfloat16 (RNE), the float itself for tf32
// (the tensor core ignores its 13 low bits) and __nv_cvt_float_to_fp8 with
// __NV_SATFINITE. Every published input is exact in its format, so no
// conversion rounds (TestKhattakInputsExact checks it).
func khattakCode(f fp8.Format, x uint32) uint32 {
	if f == fp8.FormatTF32 {
		return x
	}
	return f.Encode(math.Float32frombits(x), fp8.SatFinite)
}

// khattakOne computes one dot product of a set with model m and c handling h.
func khattakOne(m accum.Model, f fp8.Format, h KhattakC, a, b []uint32, c uint32) (float32, error) {
	cv := math.Float32frombits(c)
	switch h {
	case KhattakCZero:
		cv = 0
	case KhattakCHalf:
		cv = fp8.FP16(fp8.FP16FromFloat32(cv)).Float32()
	}
	if w, ok := m.(accum.Wide); ok && f.CodeBits() == 32 {
		var ab, bb [MaxKhattakK]uint32
		for i := range a {
			ab[i], bb[i] = khattakCode(f, a[i]), khattakCode(f, b[i])
		}
		return w.Step32(ab[:len(a)], bb[:len(a)], cv), nil
	}
	st, ok := m.(accum.Stepper)
	if !ok || f.CodeBits() == 32 {
		return 0, fmt.Errorf("model %s cannot run one instruction on %v inputs", m.Name(), f)
	}
	var ab, bb [MaxKhattakK]uint16
	for i := range a {
		ab[i], bb[i] = uint16(khattakCode(f, a[i])), uint16(khattakCode(f, b[i]))
	}
	return st.Step(ab[:len(a)], bb[:len(a)], cv), nil
}

// KhattakCount runs every dot product of s through the named model with c
// handling h and returns the check (Name left empty).
func KhattakCount(ctx context.Context, s *KhattakSet, model string, h KhattakC, maxMismatches int) (Check, error) {
	var chk Check
	m, err := accum.Lookup(model)
	if err != nil {
		return chk, err
	}
	f, err := khattakFormat(s.Format)
	if err != nil {
		return chk, fmt.Errorf("%s: %w", s.Dir, err)
	}
	if in := m.Info().In; in != f {
		return chk, fmt.Errorf("%s: model %s reads %v, the set holds %v", s.Dir, model, in, f)
	}
	if k := m.Info().K; len(s.A[0]) > k {
		return chk, fmt.Errorf("%s: %d values per line for %s of K = %d", s.Dir, len(s.A[0]), model, k)
	}
	if out := m.Info().Step.OutFormat().String(); (out == "f16") != (s.Out == "fp16") {
		return chk, fmt.Errorf("%s: model %s accumulates in %s, the set's results are %s", s.Dir, model, out, s.Out)
	}
	for r := range s.A {
		if r%1024 == 0 && ctx.Err() != nil {
			return chk, ctx.Err()
		}
		d, err := khattakOne(m, f, h, s.A[r], s.B[r], s.C[r])
		if err != nil {
			return chk, fmt.Errorf("%s: %w", s.Dir, err)
		}
		chk.Total++
		switch {
		case sameBits(s.D[r], d):
			chk.Equal++
		case len(chk.Mismatches) < maxMismatches:
			chk.Mismatches = append(chk.Mismatches, Mismatch{Line: r + 1,
				Inputs:   fmt.Sprintf("a=%s b=%s c=%08x", hexWords(s.A[r]), hexWords(s.B[r]), s.C[r]),
				Expected: s.D[r], Got: math.Float32bits(d)})
		}
	}
	return chk, nil
}

func hexWords(v []uint32) string {
	var b strings.Builder
	for i, x := range v {
		if i > 0 {
			b.WriteByte(' ')
		}
		fmt.Fprintf(&b, "%08x", x)
	}
	return b.String()
}

// VerifyKhattak runs one set through the model of its run (KhattakRuns)
// and returns a report: one check named "GPU format -> model", and notes
// for the run's instruction, K, c handling, what the data leave
// undetermined, the comparison models and the zero results.
func VerifyKhattak(ctx context.Context, s *KhattakSet, opt Options) (*Report, error) {
	run, err := LookupKhattakRun(s.GPU, s.Format, s.Out)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", s.DPath, err)
	}
	chk, err := KhattakCount(ctx, s, run.Model, run.C, opt.maxMismatches())
	if err != nil {
		return nil, err
	}
	chk.Name = fmt.Sprintf("%s %s → %s (%s out)", s.GPU, s.Format, run.Model, s.Out)
	rep := &Report{Path: s.DPath, Model: run.Model,
		Kind: fmt.Sprintf("Khattak & Mikaitis %s %s -> %s: %s, K = %d (lines fill %d), %s; harness %s",
			s.GPU, s.Format, s.Out, run.Instruction, run.K, len(s.A[0]), run.C, run.Harness),
		Checks: []Check{chk}}
	if run.Undetermined != "" {
		rep.Notes = append(rep.Notes, "not determined by these outputs: "+run.Undetermined)
	}
	for _, cmp := range run.Compare {
		c, err := KhattakCount(ctx, s, cmp.Model, cmp.C, 0)
		if err != nil {
			return nil, err
		}
		rep.Notes = append(rep.Notes, fmt.Sprintf("for comparison (not a check): %s, %s: %d/%d (%s)", cmp.Model, cmp.C, c.Equal, c.Total, cmp.Why))
	}
	var zeros, negZeros int
	for _, d := range s.D {
		if d&0x7fffffff == 0 {
			zeros++
			if d != 0 {
				negZeros++
			}
		}
	}
	if zeros > 0 {
		rep.Notes = append(rep.Notes, fmt.Sprintf("zero results: %d (+0: %d, -0: %d)", zeros, zeros-negZeros, negZeros))
	}
	return rep, nil
}
