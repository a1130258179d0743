package accum

import (
	"fmt"
	"strings"
)

// Sources of the parameters (tensorcore-numerics.md §1).
const (
	srcH200     = "verified bit for bit on an NVIDIA H200 (../shared/golden/h200, tensorcore-numerics.md §5.1)"
	srcMMASim   = "MMA-Sim (Xie et al., arXiv 2511.10909) and Khattak & Mikaitis (arXiv 2512.07004); not run on hardware here"
	srcBlackwel = "MMA-Sim nv_ptx tcgen05mma (F = 25), Khattak & Mikaitis B200TC.m, DeepGEMM issue #176; no B200 was available"

	srcMMASimRecords = "MMA-Sim (Xie et al., arXiv 2511.10909), microsoft/MMA-Sim@c785138; bit-exact on its peer records ../shared/golden/mmasim (%s) apart from the documented peer deviations; no hardware record here"
	srcNewEZero      = "; zero terms read a fixed e_zero = %d (the rule of the H200 captures on Hopper; the value of the newer MMA-Sim, peichenxie/MMA-Sim fdpa.py)"
	srcFP6           = "FP6 operands from the PTX ISA (kind::f8f6f4/mxf8f6f4 accept e2m3 and e3m2, read as e4m3 values like FP4); MMA-Sim has no FP6: UNVERIFIED, no record of any kind"
	srcAMDOld        = "MMA-Sim (Xie et al., arXiv 2511.10909), microsoft/MMA-Sim@c785138 simulator/amd.py; bit-exact on its peer records ../shared/golden/mmasim (%s); no hardware record here. The newer MMA-Sim (peichenxie/MMA-Sim) revised %s; that revision is not the named model (accum.NewerMMASimAMD counts the records it changes, docs/evidence.md)"

	// emuDoc is the middle of the doc of an emulated FP8 mma.sync.
	emuDoc = ", emulated by ptxas: unpack to f16, 2 x HMMA.16816 (k mod 4 in {0,1}, then {2,3}) from +0, "
)

// srcKM is the source line of a model verified on Khattak & Mikaitis'
// outputs (shared/golden/khattak: V100, A100, A2, Ada, L40S, H100, H200,
// B200): the GPUs and sets, then where the undetermined parameters come
// from. Which set each row reproduces, and how the instruction, K and the
// handling of c were read from the CUDA harnesses, is in
// accum/golden/khattak_map.go and docs/khattak.md; where those outputs
// cannot tell parameters apart, the value comes from the peer models:
// MMA-Sim (Xie et al., arXiv 2511.10909) and Khattak & Mikaitis' MATLAB
// models (arXiv 2512.07004, north-numerical-computing/MATLAB-tensor-core @
// b12b5a70).
func srcKM(sets, params string) string {
	return "Khattak & Mikaitis " + sets + " outputs (5000 records each), hardware; " + params
}

// kmAlso is the Evidence of a row that Khattak & Mikaitis' outputs verify
// besides its Source.
func kmAlso(sets string) string {
	return "bit-exact on Khattak & Mikaitis " + sets + " outputs (5000 records each), hardware"
}

// tableRows is the table of instructions: the literal rows of
// literalRows, then the regular families generated from their parameters
// (f8f6f4Rows: every operand pair of kind::f8f6f4 and mxf8f6f4; fp4Rows:
// the FP4 k = 64 kinds; amdRows: CDNA v_mfma).
func tableRows() []Row {
	rows := literalRows()
	rows = append(rows, f8f6f4Rows()...)
	rows = append(rows, fp4Rows()...)
	return append(rows, amdRows()...)
}

// literalRows are the NVIDIA instructions that are not members of a
// regular family.
func literalRows() []Row {
	const (
		f32, f16             = "f32", "f16"
		model, instr         = AsModel, AsInstruction
		tfdpa, emu           = KindTFDPA, KindEmulation
		hmma32, hmma16       = RZFP32, RNEFP16
		hopperFP8, hopperF16 = RZE8M13, RZFP32
	)
	return []Row{
		// Volta.
		{Name: "sm70.mma.f16.f32", Arch: "sm70", Kind: tfdpa, A: "f16", B: "f16", C: f32, K: 4, L: 4, F: 23, Rho: RZFP32, EZero: -131, Lists: model,
			Doc: "Volta mma m8n8k4 f16 -> f32: 4-wide steps, F = 23", Source: srcMMASim, Evidence: kmAlso("V100 fp16 -> fp32")},
		// FP16 accumulators: the FP32-output step rounded to nearest even
		// FP16 (e_zero 3 - F as MMA-Sim; the outputs do not fix it).
		{Name: "sm70.mma.f16.f16", Arch: "sm70", Kind: tfdpa, A: "f16", B: "f16", C: f16, K: 4, L: 4, F: 23, Rho: RNEFP16, EZero: -20, Lists: model,
			Doc:    "Volta mma m8n8k4 f16 -> f16 accumulator: 4-wide steps rounded to nearest even FP16",
			Source: srcKM("V100 fp16 -> fp16", "F and e_zero from MMA-Sim")},

		// Ampere (and Ada's 16-bit and TF32 mma.sync).
		{Name: "sm80.mma.sync.f16.f32", Arch: "sm80", Kind: tfdpa, A: "f16", B: "f16", C: f32, K: 16, L: 8, F: 24, Rho: RZFP32, EZero: -132, Lists: model,
			Doc: "Ampere mma.sync m16n8k16 f16 -> f32: two chained 8-wide steps", Source: srcMMASim, Evidence: kmAlso("A100, A2, Ada and L40S fp16 -> fp32")},
		{Name: "sm80.mma.sync.bf16.f32", Arch: "sm80", Kind: tfdpa, A: "bf16", B: "bf16", C: f32, K: 16, L: 8, F: 24, Rho: RZFP32, EZero: -132, Lists: model,
			Doc: "Ampere mma.sync m16n8k16 bf16 -> f32: two chained 8-wide steps", Source: srcMMASim, Evidence: kmAlso("A100, A2, Ada and L40S bf16 -> fp32")},
		{Name: "sm80.mma.sync.f16.f16", Arch: "sm80", Kind: tfdpa, A: "f16", B: "f16", C: f16, K: 16, L: 8, F: 24, Rho: RNEFP16, EZero: -21, Lists: model,
			Doc:    "Ampere/Ada mma.sync m16n8k16 f16 -> f16 accumulator: two chained 8-wide steps rounded to nearest even FP16",
			Source: srcKM("A100, A2, Ada and L40S fp16 -> fp16", "e_zero from MMA-Sim")},
		// TF32 mma.sync m16n8k8 (wmma m16n16k8): L = 4 on Ampere/Ada, 8 on
		// Hopper/Blackwell (MMA-Sim L_max = 16 or 32 bytes; A100TC.m,
		// AdaTC.m fma = 4; H100TC.m, B200TC.m fma = 8). The Ampere row is
		// also an Instruction (full tf32 operands), which the peer records
		// verify.
		{Name: "sm80.mma.sync.tf32.f32", Arch: "sm80", Kind: tfdpa, A: "tf32", B: "tf32", C: f32, K: 8, L: 4, F: 24, Rho: RZFP32, EZero: -132, Lists: model | instr,
			Doc:      "Ampere/Ada mma.sync m16n8k8 tf32 -> f32: two chained 4-wide steps, F = 24 (m16n8k4 is one such step); as an Instruction, operands are read as TF32 (the 13 low bits of each float32 ignored)",
			Source:   srcKM("A100, A2, Ada and L40S tf32 -> fp32", "L and e_zero from MMA-Sim and A100TC.m/AdaTC.m"),
			Evidence: fmt.Sprintf(srcMMASimRecords, "mma_sync_sm80_tf32_m16n8k8, mma_sync_sm80_tf32_m16n8k4") + fmt.Sprintf(srcNewEZero, -132)},

		// Ada FP8 mma.sync m16n8k32.
		{Name: "sm89.mma.sync.e4m3.f32", Arch: "sm89", Kind: tfdpa, A: "e4m3", B: "e4m3", C: f32, K: 32, L: 16, F: 13, Rho: RZE8M13, EZero: -132, Lists: model,
			Doc: "Ada mma.sync m16n8k32 e4m3 -> f32: two chained 16-wide steps (K 0-15, 16-31), e8m13", Source: srcMMASim, Evidence: kmAlso("Ada and L40S E4M3 -> fp32")},
		{Name: "sm89.mma.sync.e5m2.f32", Arch: "sm89", Kind: tfdpa, A: "e5m2", B: "e5m2", C: f32, K: 32, L: 16, F: 13, Rho: RZE8M13, EZero: -132, Lists: model,
			Doc:    "Ada mma.sync m16n8k32 e5m2 -> f32: two chained 16-wide steps (K 0-15, 16-31), e8m13",
			Source: srcKM("Ada and L40S E5M2 -> fp32", "F, L, e_zero from MMA-Sim and AdaTC.m")},
		{Name: "sm89.mma.sync.e4m3.f16", Arch: "sm89", Kind: tfdpa, A: "e4m3", B: "e4m3", C: f16, K: 32, L: 16, F: 13, Rho: RNEFP16, EZero: -132, Lists: model,
			Doc:    "Ada mma.sync m16n8k32 e4m3 -> f16 accumulator: two chained 16-wide steps, each rounded to nearest even FP16",
			Source: srcKM("Ada E4M3 -> fp16", "e_zero -132 from AdaTC.m (the outputs do not fix it)")},
		{Name: "sm89.mma.sync.e5m2.f16", Arch: "sm89", Kind: tfdpa, A: "e5m2", B: "e5m2", C: f16, K: 32, L: 16, F: 13, Rho: RNEFP16, EZero: -132, Lists: model,
			Doc:    "Ada mma.sync m16n8k32 e5m2 -> f16 accumulator: two chained 16-wide steps, each rounded to nearest even FP16",
			Source: srcKM("Ada E5M2 -> fp16", "e_zero -132 from AdaTC.m (the outputs do not fix it)")},

		// Hopper wgmma.
		{Name: "sm90.wgmma.e4m3.f32", Arch: "sm90", Kind: tfdpa, A: "e4m3", B: "e4m3", C: f32, K: 32, L: 32, F: 13, Rho: hopperFP8, EZero: -133, Lists: model,
			Doc:    "Hopper wgmma m64nNk32 e4m3 x e4m3 -> f32: one 32-wide step, 14 significant bits kept (e8m13, 'FP22')",
			Source: srcH200, Evidence: kmAlso("H100 and H200 E4M3 -> fp32 (C = 0)")},
		{Name: "sm90.wgmma.e5m2.f32", Arch: "sm90", Kind: tfdpa, A: "e5m2", B: "e5m2", C: f32, K: 32, L: 32, F: 13, Rho: hopperFP8, EZero: -133, Lists: model,
			Doc: "Hopper wgmma m64nNk32 e5m2 x e5m2 -> f32: one 32-wide step, e8m13 output", Source: srcH200, Evidence: kmAlso("H100 and H200 E5M2 -> fp32 (C = 0)")},
		{Name: "sm90.wgmma.e4m3.f16", Arch: "sm90", Kind: tfdpa, A: "e4m3", B: "e4m3", C: f16, K: 32, L: 32, F: 13, Rho: RNEFP16, EZero: -133, Lists: model,
			Doc: "Hopper wgmma k32 e4m3 -> f16 accumulator: the same step rounded to nearest even FP16", Source: srcMMASim},
		{Name: "sm90.wgmma.f16.f32", Arch: "sm90", Kind: tfdpa, A: "f16", B: "f16", C: f32, K: 16, L: 16, F: 25, Rho: hopperF16, EZero: -133, Lists: model,
			Doc:    "Hopper wgmma m64nNk16 f16 -> f32 (also mma.sync m16n8k16: one HMMA.16816, L = 16)",
			Source: srcH200, Evidence: kmAlso("H100 and H200 fp16 -> fp32 (mma.sync m16n8k16)")},
		{Name: "sm90.wgmma.bf16.f32", Arch: "sm90", Kind: tfdpa, A: "bf16", B: "bf16", C: f32, K: 16, L: 16, F: 25, Rho: hopperF16, EZero: -133, Lists: model,
			Doc: "Hopper wgmma m64nNk16 bf16 -> f32", Source: srcH200, Evidence: kmAlso("H100 and H200 bf16 -> fp32 (mma.sync m16n8k16)")},
		{Name: "sm90.wgmma.tf32.f32", Arch: "sm90", Kind: tfdpa, A: "tf32", B: "tf32", C: f32, K: 8, L: 8, F: 25, Rho: RZFP32, EZero: -133, Lists: instr,
			Doc:    "Hopper wgmma m64nNk8 tf32 -> f32: one 8-wide step, F = 25; operands are read as TF32 (the 13 low bits of each float32 ignored)",
			Source: fmt.Sprintf(srcMMASimRecords, "wgmma_tf32") + fmt.Sprintf(srcNewEZero, -133)},
		// Hopper mma.sync.
		{Name: "sm90.mma.sync.tf32.f32", Arch: "sm90", Kind: tfdpa, A: "tf32", B: "tf32", C: f32, K: 8, L: 8, F: 25, Rho: RZFP32, EZero: -133, Lists: model,
			Doc:    "Hopper mma.sync m16n8k8 tf32 -> f32: one 8-wide step, F = 25",
			Source: srcKM("H100 and H200 tf32 -> fp32", "L and e_zero from MMA-Sim and H100TC.m")},
		{Name: "sm90.mma.sync.f16.f16", Arch: "sm90", Kind: tfdpa, A: "f16", B: "f16", C: f16, K: 16, L: 16, F: 25, Rho: RNEFP16, EZero: -22, Lists: model,
			Doc:    "Hopper mma.sync m16n8k16 f16 -> f16 accumulator: one 16-wide step rounded to nearest even FP16",
			Source: srcKM("H100 and H200 fp16 -> fp16", "F = 25 and e_zero from MMA-Sim")},
		// FP8 mma.sync m16n8k32 on sm_90 and sm_100: ptxas emulates it on
		// the FP16 tensor core (tensorcore-numerics.md §3.2); the
		// FP16-accumulator form runs HMMA.16816.F16 steps and adds C with
		// an FP16 add.
		{Name: "sm90.mma.sync.e4m3.f32", Arch: "sm90", Kind: emu, A: "e4m3", B: "e4m3", C: f32, K: 32, L: 16, F: 25, Rho: hmma32, EZero: -133, Lists: model,
			Doc:    "Hopper mma.sync m16n8k32 e4m3 -> f32, emulated by ptxas: F2FP unpack to f16, 2 x HMMA.16816 (k mod 4 in {0,1}, then {2,3}), FP32 FADD of C",
			Source: srcH200 + "; SASS read from CUDA 13.0 ptxas"},
		{Name: "sm90.mma.sync.e5m2.f32", Arch: "sm90", Kind: emu, A: "e5m2", B: "e5m2", C: f32, K: 32, L: 16, F: 25, Rho: hmma32, EZero: -133, Lists: model,
			Doc:    "Hopper mma.sync m16n8k32 e5m2 -> f32" + emuDoc + "FP32 FADD of C",
			Source: "H200 runs of 2026-11-29 (tensorcore-numerics.md §5.1: e5m2, 3 seeds x 512, no capture file kept); no Khattak & Mikaitis set uses it (their H100/H200 fp32 FP8 outputs are wgmma with C = 0)"},
		{Name: "sm90.mma.sync.e4m3.f16", Arch: "sm90", Kind: emu, A: "e4m3", B: "e4m3", C: f16, K: 32, L: 16, F: 25, Rho: hmma16, EZero: -22, Lists: model,
			Doc:    "Hopper mma.sync m16n8k32 e4m3 -> f16" + emuDoc + "FP16 HADD of C",
			Source: srcKM("H100 and H200 E4M3 -> fp16", "split and F from the H200 f32 emulation; e_zero from MMA-Sim")},
		{Name: "sm90.mma.sync.e5m2.f16", Arch: "sm90", Kind: emu, A: "e5m2", B: "e5m2", C: f16, K: 32, L: 16, F: 25, Rho: hmma16, EZero: -22, Lists: model,
			Doc:    "Hopper mma.sync m16n8k32 e5m2 -> f16" + emuDoc + "FP16 HADD of C",
			Source: srcKM("H100 and H200 E5M2 -> fp16", "split and F from the H200 f32 emulation; e_zero from MMA-Sim")},

		// Blackwell tcgen05 (kind::f8f6f4 is f8f6f4Rows).
		{Name: "sm100.tcgen05.f16.f32", Arch: "sm100", Kind: tfdpa, A: "f16", B: "f16", C: f32, K: 16, L: 16, F: 25, Rho: RZFP32, EZero: -133, Lists: model,
			Doc: "Blackwell tcgen05.mma kind::f16 with f16 inputs -> f32", Source: srcBlackwel},
		{Name: "sm100.tcgen05.tf32.f32", Arch: "sm100", Kind: tfdpa, A: "tf32", B: "tf32", C: f32, K: 8, L: 8, F: 25, Rho: RZFP32, EZero: -133, Lists: instr,
			Doc:    "Blackwell tcgen05.mma kind::tf32 -> f32: one 8-wide step, F = 25; operands are read as TF32 (the 13 low bits of each float32 ignored)",
			Source: fmt.Sprintf(srcMMASimRecords, "tcgen05_tf32") + fmt.Sprintf(srcNewEZero, -133)},
		// Blackwell legacy mma.sync (wmma compiles to HMMA.16816 on sm_100).
		{Name: "sm100.mma.sync.f16.f32", Arch: "sm100", Kind: tfdpa, A: "f16", B: "f16", C: f32, K: 16, L: 16, F: 25, Rho: RZFP32, EZero: -133, Lists: model,
			Doc:    "Blackwell mma.sync m16n8k16 f16 -> f32 (wmma m16n16k16): one 16-wide step, F = 25",
			Source: srcKM("B200 fp16 -> fp32", "e_zero from MMA-Sim and B200TC.m")},
		{Name: "sm100.mma.sync.bf16.f32", Arch: "sm100", Kind: tfdpa, A: "bf16", B: "bf16", C: f32, K: 16, L: 16, F: 25, Rho: RZFP32, EZero: -133, Lists: model,
			Doc:    "Blackwell mma.sync m16n8k16 bf16 -> f32 (wmma m16n16k16): one 16-wide step, F = 25",
			Source: srcKM("B200 bf16 -> fp32", "e_zero from MMA-Sim and B200TC.m")},
		{Name: "sm100.mma.sync.tf32.f32", Arch: "sm100", Kind: tfdpa, A: "tf32", B: "tf32", C: f32, K: 8, L: 8, F: 25, Rho: RZFP32, EZero: -133, Lists: model,
			Doc:    "Blackwell mma.sync m16n8k8 tf32 -> f32: one 8-wide step, F = 25",
			Source: srcKM("B200 tf32 -> fp32", "L and e_zero from MMA-Sim and B200TC.m")},
		{Name: "sm100.mma.sync.f16.f16", Arch: "sm100", Kind: tfdpa, A: "f16", B: "f16", C: f16, K: 16, L: 16, F: 25, Rho: RNEFP16, EZero: -22, Lists: model,
			Doc:    "Blackwell mma.sync m16n8k16 f16 -> f16 accumulator: one 16-wide step rounded to nearest even FP16",
			Source: srcKM("B200 fp16 -> fp16", "e_zero from MMA-Sim")},
		{Name: "sm100.mma.sync.e4m3.f32", Arch: "sm100", Kind: emu, A: "e4m3", B: "e4m3", C: f32, K: 32, L: 16, F: 25, Rho: hmma32, EZero: -133, Lists: model,
			Doc:    "Blackwell mma.sync m16n8k32 e4m3 -> f32" + emuDoc + "FP32 FADD of C",
			Source: srcKM("B200 E4M3 -> fp32", "split and F from the H200 emulation (the outputs do not fix them)")},
		{Name: "sm100.mma.sync.e5m2.f32", Arch: "sm100", Kind: emu, A: "e5m2", B: "e5m2", C: f32, K: 32, L: 16, F: 25, Rho: hmma32, EZero: -133, Lists: model,
			Doc:    "Blackwell mma.sync m16n8k32 e5m2 -> f32" + emuDoc + "FP32 FADD of C",
			Source: srcKM("B200 E5M2 -> fp32", "split and F from the H200 emulation (the outputs do not fix them)")},
		{Name: "sm100.mma.sync.e4m3.f16", Arch: "sm100", Kind: emu, A: "e4m3", B: "e4m3", C: f16, K: 32, L: 16, F: 25, Rho: hmma16, EZero: -22, Lists: model,
			Doc:    "Blackwell mma.sync m16n8k32 e4m3 -> f16" + emuDoc + "FP16 HADD of C",
			Source: srcKM("B200 E4M3 -> fp16", "split and F from the H200 emulation; e_zero from MMA-Sim")},
		{Name: "sm100.mma.sync.e5m2.f16", Arch: "sm100", Kind: emu, A: "e5m2", B: "e5m2", C: f16, K: 32, L: 16, F: 25, Rho: hmma16, EZero: -22, Lists: model,
			Doc:    "Blackwell mma.sync m16n8k32 e5m2 -> f16" + emuDoc + "FP16 HADD of C",
			Source: srcKM("B200 E5M2 -> fp16", "split and F from the H200 emulation; e_zero from MMA-Sim")},
	}
}

// f8f6f4Formats are the operand formats of kind::f8f6f4 and mxf8f6f4.
var f8f6f4Formats = []string{"e4m3", "e5m2", "e2m1", "e2m3", "e3m2"}

func isFP6(f string) bool { return f == "e2m3" || f == "e3m2" }

// f8f6f4Rows are sm_100a tcgen05.mma kind::f8f6f4 (no scales; f32 and f16
// accumulators) and kind::mxf8f6f4 (block 32, ue8m0), and sm_120a mma.sync
// kind::mxf8f6f4, for every operand pair. The e4m3 × e4m3 -> f32 row is
// also the Model sm100.tcgen05.f8f6f4.f32 (16-bit codes), attention's
// Blackwell FP8 instruction.
func f8f6f4Rows() []Row {
	var rows []Row
	for _, a := range f8f6f4Formats {
		for _, b := range f8f6f4Formats {
			src := func(file string) string {
				if isFP6(a) || isFP6(b) {
					return srcFP6
				}
				return fmt.Sprintf(srcMMASimRecords, file) + fmt.Sprintf(srcNewEZero, -133)
			}
			for _, out := range []string{"f32", "f16"} {
				r := Row{
					Name: fmt.Sprintf("sm100.tcgen05.f8f6f4.%s.%s.%s", a, b, out), Arch: "sm100", Kind: KindTFDPA, A: a, B: b, C: out,
					K: 32, L: 32, F: 25, EZero: -133, Rho: RZFP32, Lists: AsInstruction,
					Doc:    fmt.Sprintf("Blackwell tcgen05.mma kind::f8f6f4 %s x %s -> %s: one 32-wide step, F = 25", a, b, out),
					Source: src(fmt.Sprintf("tcgen05_f8f6f4_%s_%s_%s", a, b, out)),
				}
				if out == "f16" {
					r.Rho = RNEFP16
				}
				if a == "e4m3" && b == "e4m3" && out == "f32" {
					r.Lists |= AsModel
					r.Short = "sm100.tcgen05.f8f6f4.f32"
					r.Evidence = "F = 25 as MMA-Sim nv_ptx tcgen05mma, Khattak & Mikaitis B200TC.m and DeepGEMM issue #176 give it; no B200 was available"
				}
				rows = append(rows, r)
			}
			rows = append(rows, Row{
				Name: fmt.Sprintf("sm100.tcgen05.mxf8f6f4.%s.%s.f32", a, b), Arch: "sm100", Kind: KindScaled, A: a, B: b, C: "f32",
				K: 32, L: 32, F: 25, EZero: -133, Rho: RZFP32, Scale: "ue8m0", Block: 32, Lists: AsInstruction,
				Doc:    fmt.Sprintf("Blackwell tcgen05.mma kind::mxf8f6f4.block_scale.scale_vec::1X %s x %s -> f32: one 32-wide step, each product's exponent plus the two ue8m0 scale exponents, F = 25", a, b),
				Source: src(fmt.Sprintf("tcgen05_mxf8f6f4_%s_%s", a, b)),
			}, Row{
				Name: fmt.Sprintf("sm120.mma.sync.mxf8f6f4.%s.%s.f32", a, b), Arch: "sm120", Kind: KindScaled, A: a, B: b, C: "f32",
				K: 32, L: 32, F: 25, EZero: -133, Rho: RZFP32, Scale: "ue8m0", Block: 32, Lists: AsInstruction,
				Doc:    fmt.Sprintf("RTX Blackwell mma.sync m16n8k32 kind::mxf8f6f4.block_scale.scale_vec::1X %s x %s -> f32: the arithmetic of sm_100a's (MMA-Sim); e_zero assumed = sm_100a's", a, b),
				Source: src(fmt.Sprintf("mma_sync_sm120_mxf8f6f4_%s_%s", a, b)),
			})
		}
	}
	return rows
}

// fp4Rows are the FP4 k = 64 kinds of sm_100a tcgen05.mma and sm_120a
// mma.sync: kind::mxf4 (block 32, ue8m0) and kind::mxf4nvf4 (block 16,
// ue8m0 or ue4m3), groups of 16 products summed exactly (GST-FDPA, F = 35).
func fp4Rows() []Row {
	var rows []Row
	for _, arch := range []struct{ prefix, file, doc string }{
		{"sm100.tcgen05", "tcgen05", "Blackwell tcgen05.mma"},
		{"sm120.mma.sync", "mma_sync_sm120", "RTX Blackwell mma.sync m16n8k64"},
	} {
		for _, v := range []struct {
			kind, scale string
			block       int
			file        string
		}{
			{"mxf4", "ue8m0", 32, "mxf4_ue8m0_b32"},
			{"mxf4nvf4", "ue8m0", 16, "mxf4nvf4_ue8m0_b16"},
			{"mxf4nvf4", "ue4m3", 16, "mxf4nvf4_ue4m3_b16"},
		} {
			name := fmt.Sprintf("%s.%s.f32", arch.prefix, v.kind)
			if v.kind == "mxf4nvf4" {
				name = fmt.Sprintf("%s.%s.%s.f32", arch.prefix, v.kind, v.scale)
			}
			sm, _, _ := strings.Cut(arch.prefix, ".")
			rows = append(rows, Row{
				Name: name, Arch: sm, Kind: KindScaled, A: "e2m1", B: "e2m1", C: "f32",
				K: 64, L: 64, F: 35, EZero: -139, Rho: RZFP32, Scale: v.scale, Block: v.block, Group: 16, Lists: AsInstruction,
				Doc: fmt.Sprintf("%s kind::%s e2m1 x e2m1 -> f32, %s scales per %d elements: each group of 16 products summed exactly, times its two scales, is one term; F = 35",
					arch.doc, v.kind, v.scale, v.block),
				Source: fmt.Sprintf(srcMMASimRecords, arch.file+"_"+v.file) + fmt.Sprintf(srcNewEZero, -139) + " (an all-zero group or a zero scale)",
			})
		}
	}
	return rows
}

// amdRows are AMD CDNA1-3 v_mfma: K, the operand formats and the group of
// each instruction; the arithmetic of each kind is amdInstr's (Row says why
// it is not the T-FDPA step).
func amdRows() []Row {
	var rows []Row
	for _, t := range []struct {
		name, a, b, c string
		k, grp        int
		kind          Kind
		file, doc     string
		newer         string
	}{
		{"cdna1.mfma.f32.f32", "f32", "f32", "f32", 4, 0, KindFMAChain, "cdna1_v_mfma_f32_16x16x4f32", "CDNA1 v_mfma_f32_16x16x4f32: an FP32 FMA chain", "nothing for f32"},
		{"cdna2.mfma.f32.f32", "f32", "f32", "f32", 4, 0, KindFMAChain, "cdna2_v_mfma_f32_16x16x4f32", "CDNA2 v_mfma_f32_16x16x4f32: an FP32 FMA chain", "nothing for f32"},
		{"cdna3.mfma.f32.f32", "f32", "f32", "f32", 4, 0, KindFMAChain, "cdna3_v_mfma_f32_16x16x4_f32", "CDNA3 v_mfma_f32_16x16x4_f32: an FP32 FMA chain", "nothing for f32"},
		{"cdna2.mfma.f64.f64", "f64", "f64", "f64", 4, 0, KindFMAChain, "cdna2_v_mfma_f64_16x16x4f64", "CDNA2 v_mfma_f64_16x16x4f64: an FP64 FMA chain", "nothing for f64"},
		{"cdna3.mfma.f64.f64", "f64", "f64", "f64", 4, 0, KindFMAChain, "cdna3_v_mfma_f64_16x16x4_f64", "CDNA3 v_mfma_f64_16x16x4_f64: an FP64 FMA chain", "nothing for f64"},
		{"cdna1.mfma.f16.f32", "f16", "f16", "f32", 16, 4, KindPairwise, "cdna1_v_mfma_f32_16x16x16f16", "CDNA1 v_mfma_f32_16x16x16f16: pairwise FP32 trees of 4 products, each added to c", "CDNA1 f16 to an exact 4-product dot with c rounded once (E-FDPA)"},
		{"cdna1.mfma.bf16.f32", "bf16", "bf16", "f32", 8, 2, KindPairwise, "cdna1_v_mfma_f32_16x16x8bf16", "CDNA1 v_mfma_f32_16x16x8bf16: pairwise FP32 trees of 2 products, each added to c", "CDNA1 bf16 to an exact 2-product dot with c rounded once (E-FDPA)"},
		{"cdna2.mfma.f16.f32", "f16", "f16", "f32", 16, 4, KindPairwise, "cdna2_v_mfma_f32_16x16x16f16", "CDNA2 v_mfma_f32_16x16x16f16: as CDNA1 with subnormal inputs, c and results flushed", "CDNA2 to flush-to-zero multiply-adds (FTZ_MUL_ADD, P = 4)"},
		{"cdna2.mfma.bf16.f32", "bf16", "bf16", "f32", 8, 2, KindPairwise, "cdna2_v_mfma_f32_16x16x8bf16", "CDNA2 v_mfma_f32_16x16x8bf16: pairs, flushed", "CDNA2 to flush-to-zero multiply-adds (FTZ_MUL_ADD, P = 2)"},
		{"cdna2.mfma.bf16_1k.f32", "bf16", "bf16", "f32", 16, 4, KindPairwise, "cdna2_v_mfma_f32_16x16x16bf16_1k", "CDNA2 v_mfma_f32_16x16x16bf16_1k: groups of 4, flushed", "CDNA2 to flush-to-zero multiply-adds (FTZ_MUL_ADD, P = 4)"},
		{"cdna3.mfma.f16.f32", "f16", "f16", "f32", 16, 8, KindAMDFDPA, "cdna3_v_mfma_f32_16x16x16_f16", "CDNA3 v_mfma_f32_16x16x16_f16: two groups of 8", "CDNA3 f16 (TR-FDPA: zero products ignored, the sum renormalised before rounding down to 31 bits)"},
		{"cdna3.mfma.bf16.f32", "bf16", "bf16", "f32", 16, 8, KindAMDFDPA, "cdna3_v_mfma_f32_16x16x16_bf16", "CDNA3 v_mfma_f32_16x16x16_bf16: two groups of 8", "CDNA3 bf16 (TR-FDPA, as for f16)"},
		{"cdna3.mfma.xf32.f32", "f32", "f32", "f32", 8, 4, KindAMDFDPA, "cdna3_v_mfma_f32_16x16x8_xf32", "CDNA3 v_mfma_f32_16x16x8_xf32: operands truncated to TF32, two groups of 4", "CDNA3 xf32 (TR-FDPA, as for f16)"},
		{"cdna3.mfma.fp8.fp8.f32", "e4m3fnuz", "e4m3fnuz", "f32", 32, 16, KindAMDFDPA, "cdna3_v_mfma_f32_16x16x32_fp8_fp8", "CDNA3 v_mfma_f32_16x16x32_fp8_fp8: two groups of 16, even and odd elements summed apart", "CDNA3 fp8 (GTR-FDPA: zero products ignored, renormalised sum)"},
		{"cdna3.mfma.fp8.bf8.f32", "e4m3fnuz", "e5m2fnuz", "f32", 32, 16, KindAMDFDPA, "cdna3_v_mfma_f32_16x16x32_fp8_bf8", "CDNA3 v_mfma_f32_16x16x32_fp8_bf8", "CDNA3 fp8 (GTR-FDPA)"},
		{"cdna3.mfma.bf8.fp8.f32", "e5m2fnuz", "e4m3fnuz", "f32", 32, 16, KindAMDFDPA, "cdna3_v_mfma_f32_16x16x32_bf8_fp8", "CDNA3 v_mfma_f32_16x16x32_bf8_fp8", "CDNA3 fp8 (GTR-FDPA)"},
		{"cdna3.mfma.bf8.bf8.f32", "e5m2fnuz", "e5m2fnuz", "f32", 32, 16, KindAMDFDPA, "cdna3_v_mfma_f32_16x16x32_bf8_bf8", "CDNA3 v_mfma_f32_16x16x32_bf8_bf8", "CDNA3 fp8 (GTR-FDPA)"},
	} {
		arch, _, _ := strings.Cut(t.name, ".")
		rows = append(rows, Row{Name: t.name, Arch: arch, Kind: t.kind, A: t.a, B: t.b, C: t.c, K: t.k, Group: t.grp, Lists: AsInstruction,
			Doc: t.doc, Source: fmt.Sprintf(srcAMDOld, t.file, t.newer)})
	}
	return rows
}
