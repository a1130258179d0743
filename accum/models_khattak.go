package accum

import "github.com/fp8lab/fp8lab/fp8"

// The models below are the instructions behind Khattak & Mikaitis'
// published GPU outputs (shared/golden/khattak: V100, A100, A2, Ada, L40S,
// H100, H200, B200) that no model of models.go covered. Each is a row of
// parameters of a generic model: newTFDPA (K/L chained T-FDPA steps) or
// newMMASyncEmu (FP8 mma.sync emulated by ptxas on the FP16 tensor core).
// Which set each one reproduces, and how the instruction, K and the
// handling of c were read from the CUDA harnesses, is in
// accum/golden/khattak_map.go and docs/khattak.md.
//
// Where those outputs cannot tell parameters apart (docs/khattak.md lists
// each case), the value comes from the peer models: MMA-Sim (Xie et al.,
// arXiv 2511.10909) and Khattak & Mikaitis' MATLAB models (arXiv
// 2512.07004, north-numerical-computing/MATLAB-tensor-core @ b12b5a70).

// srcKM is the source line of a model verified on Khattak & Mikaitis'
// outputs: the GPUs and sets, then where the undetermined parameters come
// from.
func srcKM(sets, params string) string {
	return "Khattak & Mikaitis " + sets + " outputs (5000 records each), hardware; " + params
}

func init() {
	e4m3, e5m2, f16, bf16, tf32 := fp8.FormatE4M3, fp8.FormatE5M2, fp8.FormatFP16, fp8.FormatBF16, fp8.FormatTF32
	// FP16 HMMA.16816 steps of the sm_90/sm_100 mma.sync FP8 emulation.
	hmma32 := Params{L: 16, F: 25, Rho: RZFP32, EZero: -133}
	hmma16 := Params{L: 16, F: 25, Rho: RNEFP16, EZero: -22}
	blackwell16 := Params{L: 16, F: 25, Rho: RZFP32, EZero: -133}
	for _, m := range []*tfdpa{
		// Ada FP8 mma.sync m16n8k32: sm89.mma.sync.e4m3.f32's parameters for e5m2.
		newTFDPA("sm89.mma.sync.e5m2.f32", e5m2, 32, Params{L: 16, F: 13, Rho: RZE8M13, EZero: -132},
			"Ada mma.sync m16n8k32 e5m2 -> f32: two chained 16-wide steps (K 0-15, 16-31), e8m13",
			srcKM("Ada and L40S E5M2 -> fp32", "F, L, e_zero from MMA-Sim and AdaTC.m")),
		newTFDPA("sm89.mma.sync.e4m3.f16", e4m3, 32, Params{L: 16, F: 13, Rho: RNEFP16, EZero: -132},
			"Ada mma.sync m16n8k32 e4m3 -> f16 accumulator: two chained 16-wide steps, each rounded to nearest even FP16",
			srcKM("Ada E4M3 -> fp16", "e_zero -132 from AdaTC.m (the outputs do not fix it)")),
		newTFDPA("sm89.mma.sync.e5m2.f16", e5m2, 32, Params{L: 16, F: 13, Rho: RNEFP16, EZero: -132},
			"Ada mma.sync m16n8k32 e5m2 -> f16 accumulator: two chained 16-wide steps, each rounded to nearest even FP16",
			srcKM("Ada E5M2 -> fp16", "e_zero -132 from AdaTC.m (the outputs do not fix it)")),

		// Blackwell legacy mma.sync (wmma compiles to HMMA.16816 on sm_100).
		newTFDPA("sm100.mma.sync.f16.f32", f16, 16, blackwell16,
			"Blackwell mma.sync m16n8k16 f16 -> f32 (wmma m16n16k16): one 16-wide step, F = 25",
			srcKM("B200 fp16 -> fp32", "e_zero from MMA-Sim and B200TC.m")),
		newTFDPA("sm100.mma.sync.bf16.f32", bf16, 16, blackwell16,
			"Blackwell mma.sync m16n8k16 bf16 -> f32 (wmma m16n16k16): one 16-wide step, F = 25",
			srcKM("B200 bf16 -> fp32", "e_zero from MMA-Sim and B200TC.m")),

		// TF32 mma.sync m16n8k8 (wmma m16n16k8): L = 4 on Ampere/Ada, 8 on
		// Hopper/Blackwell (MMA-Sim L_max = 16 or 32 bytes; A100TC.m,
		// AdaTC.m fma = 4; H100TC.m, B200TC.m fma = 8).
		newTFDPA("sm80.mma.sync.tf32.f32", tf32, 8, Params{L: 4, F: 24, Rho: RZFP32, EZero: -132},
			"Ampere/Ada mma.sync m16n8k8 tf32 -> f32: two chained 4-wide steps, F = 24",
			srcKM("A100, A2, Ada and L40S tf32 -> fp32", "L and e_zero from MMA-Sim and A100TC.m/AdaTC.m")),
		newTFDPA("sm90.mma.sync.tf32.f32", tf32, 8, Params{L: 8, F: 25, Rho: RZFP32, EZero: -133},
			"Hopper mma.sync m16n8k8 tf32 -> f32: one 8-wide step, F = 25",
			srcKM("H100 and H200 tf32 -> fp32", "L and e_zero from MMA-Sim and H100TC.m")),
		newTFDPA("sm100.mma.sync.tf32.f32", tf32, 8, Params{L: 8, F: 25, Rho: RZFP32, EZero: -133},
			"Blackwell mma.sync m16n8k8 tf32 -> f32: one 8-wide step, F = 25",
			srcKM("B200 tf32 -> fp32", "L and e_zero from MMA-Sim and B200TC.m")),

		// FP16 accumulators: the FP32-output step rounded to nearest even
		// FP16 (e_zero 3 - F as MMA-Sim; the outputs do not fix it).
		newTFDPA("sm70.mma.f16.f16", f16, 4, Params{L: 4, F: 23, Rho: RNEFP16, EZero: -20},
			"Volta mma m8n8k4 f16 -> f16 accumulator: 4-wide steps rounded to nearest even FP16",
			srcKM("V100 fp16 -> fp16", "F and e_zero from MMA-Sim")),
		newTFDPA("sm80.mma.sync.f16.f16", f16, 16, Params{L: 8, F: 24, Rho: RNEFP16, EZero: -21},
			"Ampere/Ada mma.sync m16n8k16 f16 -> f16 accumulator: two chained 8-wide steps rounded to nearest even FP16",
			srcKM("A100, A2, Ada and L40S fp16 -> fp16", "e_zero from MMA-Sim")),
		newTFDPA("sm90.mma.sync.f16.f16", f16, 16, Params{L: 16, F: 25, Rho: RNEFP16, EZero: -22},
			"Hopper mma.sync m16n8k16 f16 -> f16 accumulator: one 16-wide step rounded to nearest even FP16",
			srcKM("H100 and H200 fp16 -> fp16", "F = 25 and e_zero from MMA-Sim")),
		newTFDPA("sm100.mma.sync.f16.f16", f16, 16, Params{L: 16, F: 25, Rho: RNEFP16, EZero: -22},
			"Blackwell mma.sync m16n8k16 f16 -> f16 accumulator: one 16-wide step rounded to nearest even FP16",
			srcKM("B200 fp16 -> fp16", "e_zero from MMA-Sim")),
	} {
		register(m)
	}

	// FP8 mma.sync m16n8k32 on sm_90 and sm_100: ptxas emulates it on the
	// FP16 tensor core (tensorcore-numerics.md §3.2); the FP16-accumulator
	// form runs HMMA.16816.F16 steps and adds C with an FP16 add.
	const emuDoc = ", emulated by ptxas: unpack to f16, 2 x HMMA.16816 (k mod 4 in {0,1}, then {2,3}) from +0, "
	for _, r := range []struct {
		name string
		in   fp8.Format
		step Params
		doc  string
		src  string
	}{
		{"sm90.mma.sync.e5m2.f32", e5m2, hmma32, "Hopper mma.sync m16n8k32 e5m2 -> f32" + emuDoc + "FP32 FADD of C",
			"H200 runs of 2026-11-29 (tensorcore-numerics.md §5.1: e5m2, 3 seeds x 512, no capture file kept); no Khattak & Mikaitis set uses it (their H100/H200 fp32 FP8 outputs are wgmma with C = 0)"},
		{"sm90.mma.sync.e4m3.f16", e4m3, hmma16, "Hopper mma.sync m16n8k32 e4m3 -> f16" + emuDoc + "FP16 HADD of C",
			srcKM("H100 and H200 E4M3 -> fp16", "split and F from the H200 f32 emulation; e_zero from MMA-Sim")},
		{"sm90.mma.sync.e5m2.f16", e5m2, hmma16, "Hopper mma.sync m16n8k32 e5m2 -> f16" + emuDoc + "FP16 HADD of C",
			srcKM("H100 and H200 E5M2 -> fp16", "split and F from the H200 f32 emulation; e_zero from MMA-Sim")},
		{"sm100.mma.sync.e4m3.f32", e4m3, hmma32, "Blackwell mma.sync m16n8k32 e4m3 -> f32" + emuDoc + "FP32 FADD of C",
			srcKM("B200 E4M3 -> fp32", "split and F from the H200 emulation (the outputs do not fix them)")},
		{"sm100.mma.sync.e5m2.f32", e5m2, hmma32, "Blackwell mma.sync m16n8k32 e5m2 -> f32" + emuDoc + "FP32 FADD of C",
			srcKM("B200 E5M2 -> fp32", "split and F from the H200 emulation (the outputs do not fix them)")},
		{"sm100.mma.sync.e4m3.f16", e4m3, hmma16, "Blackwell mma.sync m16n8k32 e4m3 -> f16" + emuDoc + "FP16 HADD of C",
			srcKM("B200 E4M3 -> fp16", "split and F from the H200 emulation; e_zero from MMA-Sim")},
		{"sm100.mma.sync.e5m2.f16", e5m2, hmma16, "Blackwell mma.sync m16n8k32 e5m2 -> f16" + emuDoc + "FP16 HADD of C",
			srcKM("B200 E5M2 -> fp16", "split and F from the H200 emulation; e_zero from MMA-Sim")},
	} {
		register(newMMASyncEmu(r.name, r.in, r.step, r.doc, r.src))
	}
}

// The models of models.go that Khattak & Mikaitis' outputs verify too: their
// source gains that evidence. (This init runs after models.go's: the go
// tool initialises a package's files in file name order.)
func init() {
	for name, sets := range map[string]string{
		"sm70.mma.f16.f32":       "V100 fp16 -> fp32",
		"sm80.mma.sync.f16.f32":  "A100, A2, Ada and L40S fp16 -> fp32",
		"sm80.mma.sync.bf16.f32": "A100, A2, Ada and L40S bf16 -> fp32",
		"sm89.mma.sync.e4m3.f32": "Ada and L40S E4M3 -> fp32",
		"sm90.wgmma.f16.f32":     "H100 and H200 fp16 -> fp32 (mma.sync m16n8k16)",
		"sm90.wgmma.bf16.f32":    "H100 and H200 bf16 -> fp32 (mma.sync m16n8k16)",
		"sm90.wgmma.e4m3.f32":    "H100 and H200 E4M3 -> fp32 (C = 0)",
		"sm90.wgmma.e5m2.f32":    "H100 and H200 E5M2 -> fp32 (C = 0)",
	} {
		m, ok := registry[name].(*tfdpa)
		if !ok {
			panic("accum: " + name + " is not a registered T-FDPA model")
		}
		m.info.Source += "; bit-exact on Khattak & Mikaitis " + sets + " outputs (5000 records each), hardware"
	}
}
