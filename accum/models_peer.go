package accum

import "fmt"

// The instructions of the peer-record files (../shared/golden/mmasim) and
// their relatives: NVIDIA block-scaled MX/NVFP4, FP4/FP6 operands of
// kind::f8f6f4, TF32, AMD CDNA v_mfma. docs/evidence.md lists the evidence
// of each.

const (
	srcMMASimRecords = "MMA-Sim (Xie et al., arXiv 2511.10909), microsoft/MMA-Sim@c785138; bit-exact on its peer records ../shared/golden/mmasim (%s) apart from the documented peer deviations; no hardware record here"
	srcNewEZero      = "; zero terms read a fixed e_zero = %d (the rule of the H200 captures on Hopper; the value of the newer MMA-Sim, peichenxie/MMA-Sim fdpa.py)"
	srcFP6           = "FP6 operands from the PTX ISA (kind::f8f6f4/mxf8f6f4 accept e2m3 and e3m2, read as e4m3 values like FP4); MMA-Sim has no FP6: UNVERIFIED, no record of any kind"
	srcAMDOld        = "MMA-Sim (Xie et al., arXiv 2511.10909), microsoft/MMA-Sim@c785138 simulator/amd.py; bit-exact on its peer records ../shared/golden/mmasim (%s); no hardware record here. The newer MMA-Sim (peichenxie/MMA-Sim) revised %s; that revision is not the named model (accum.NewerMMASimAMD counts the records it changes, docs/evidence.md)"
)

var f8f6f4Formats = []string{"e4m3", "e5m2", "e2m1", "e2m3", "e3m2"}

func isFP6(f string) bool { return f == "e2m3" || f == "e3m2" }

func init() {
	// sm_100a tcgen05.mma kind::f8f6f4 (no scales) and kind::mxf8f6f4
	// (block32 ue8m0), sm_120a mma.sync kind::mxf8f6f4: every operand pair.
	for _, a := range f8f6f4Formats {
		for _, b := range f8f6f4Formats {
			src := func(file string) string {
				if isFP6(a) || isFP6(b) {
					return srcFP6
				}
				return fmt.Sprintf(srcMMASimRecords, file) + fmt.Sprintf(srcNewEZero, -133)
			}
			for _, out := range []string{"f32", "f16"} {
				rho := RZFP32
				if out == "f16" {
					rho = RNEFP16
				}
				registerInstr(newNV(InstrInfo{
					Name: fmt.Sprintf("sm100.tcgen05.f8f6f4.%s.%s.%s", a, b, out), A: a, B: b, C: out,
					K: 32, L: 32, F: 25, EZero: -133, Rho: rho,
					Doc:    fmt.Sprintf("Blackwell tcgen05.mma kind::f8f6f4 %s x %s -> %s: one 32-wide step, F = 25", a, b, out),
					Source: src(fmt.Sprintf("tcgen05_f8f6f4_%s_%s_%s", a, b, out)),
				}))
			}
			registerInstr(newNV(InstrInfo{
				Name: fmt.Sprintf("sm100.tcgen05.mxf8f6f4.%s.%s.f32", a, b), A: a, B: b, C: "f32",
				K: 32, L: 32, F: 25, EZero: -133, Rho: RZFP32, Scale: "ue8m0", Block: 32,
				Doc:    fmt.Sprintf("Blackwell tcgen05.mma kind::mxf8f6f4.block_scale.scale_vec::1X %s x %s -> f32: one 32-wide step, each product's exponent plus the two ue8m0 scale exponents, F = 25", a, b),
				Source: src(fmt.Sprintf("tcgen05_mxf8f6f4_%s_%s", a, b)),
			}))
			registerInstr(newNV(InstrInfo{
				Name: fmt.Sprintf("sm120.mma.sync.mxf8f6f4.%s.%s.f32", a, b), A: a, B: b, C: "f32",
				K: 32, L: 32, F: 25, EZero: -133, Rho: RZFP32, Scale: "ue8m0", Block: 32,
				Doc:    fmt.Sprintf("RTX Blackwell mma.sync m16n8k32 kind::mxf8f6f4.block_scale.scale_vec::1X %s x %s -> f32: the arithmetic of sm_100a's (MMA-Sim); e_zero assumed = sm_100a's", a, b),
				Source: src(fmt.Sprintf("mma_sync_sm120_mxf8f6f4_%s_%s", a, b)),
			}))
		}
	}
	// FP4 k = 64: kind::mxf4 (block 32, ue8m0) and kind::mxf4nvf4 (block 16,
	// ue8m0 or ue4m3), groups of 16 products summed exactly (GST-FDPA, F = 35).
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
			registerInstr(newNV(InstrInfo{
				Name: name, A: "e2m1", B: "e2m1", C: "f32",
				K: 64, L: 64, F: 35, EZero: -139, Rho: RZFP32, Scale: v.scale, Block: v.block, Group: 16,
				Doc: fmt.Sprintf("%s kind::%s e2m1 x e2m1 -> f32, %s scales per %d elements: each group of 16 products summed exactly, times its two scales, is one term; F = 35",
					arch.doc, v.kind, v.scale, v.block),
				Source: fmt.Sprintf(srcMMASimRecords, arch.file+"_"+v.file) + fmt.Sprintf(srcNewEZero, -139) + " (an all-zero group or a zero scale)",
			}))
		}
	}
	// TF32.
	for _, t := range []struct {
		name, file, doc string
		k, l, f, ez     int
	}{
		{"sm80.mma.sync.tf32.f32", "mma_sync_sm80_tf32_m16n8k8, mma_sync_sm80_tf32_m16n8k4", "Ampere mma.sync m16n8k8 tf32 -> f32: two chained 4-wide steps, F = 24 (m16n8k4 is one such step)", 8, 4, 24, -132},
		{"sm90.wgmma.tf32.f32", "wgmma_tf32", "Hopper wgmma m64nNk8 tf32 -> f32: one 8-wide step, F = 25", 8, 8, 25, -133},
		{"sm100.tcgen05.tf32.f32", "tcgen05_tf32", "Blackwell tcgen05.mma kind::tf32 -> f32: one 8-wide step, F = 25", 8, 8, 25, -133},
	} {
		registerInstr(newNV(InstrInfo{Name: t.name, A: "tf32", B: "tf32", C: "f32", K: t.k, L: t.l, F: t.f, EZero: t.ez, Rho: RZFP32,
			Doc: t.doc + "; operands are read as TF32 (the 13 low bits of each float32 ignored)", Source: fmt.Sprintf(srcMMASimRecords, t.file) + fmt.Sprintf(srcNewEZero, t.ez)}))
	}
	// AMD CDNA1-3 v_mfma.
	for _, t := range []struct {
		name, a, b, c string
		arch, k, grp  int
		kind          Kind
		file, doc     string
		newer         string
	}{
		{"cdna1.mfma.f32.f32", "f32", "f32", "f32", 1, 4, 0, KindFMAChain, "cdna1_v_mfma_f32_16x16x4f32", "CDNA1 v_mfma_f32_16x16x4f32: an FP32 FMA chain", "nothing for f32"},
		{"cdna2.mfma.f32.f32", "f32", "f32", "f32", 2, 4, 0, KindFMAChain, "cdna2_v_mfma_f32_16x16x4f32", "CDNA2 v_mfma_f32_16x16x4f32: an FP32 FMA chain", "nothing for f32"},
		{"cdna3.mfma.f32.f32", "f32", "f32", "f32", 3, 4, 0, KindFMAChain, "cdna3_v_mfma_f32_16x16x4_f32", "CDNA3 v_mfma_f32_16x16x4_f32: an FP32 FMA chain", "nothing for f32"},
		{"cdna2.mfma.f64.f64", "f64", "f64", "f64", 2, 4, 0, KindFMAChain, "cdna2_v_mfma_f64_16x16x4f64", "CDNA2 v_mfma_f64_16x16x4f64: an FP64 FMA chain", "nothing for f64"},
		{"cdna3.mfma.f64.f64", "f64", "f64", "f64", 3, 4, 0, KindFMAChain, "cdna3_v_mfma_f64_16x16x4_f64", "CDNA3 v_mfma_f64_16x16x4_f64: an FP64 FMA chain", "nothing for f64"},
		{"cdna1.mfma.f16.f32", "f16", "f16", "f32", 1, 16, 4, KindPairwise, "cdna1_v_mfma_f32_16x16x16f16", "CDNA1 v_mfma_f32_16x16x16f16: pairwise FP32 trees of 4 products, each added to c", "CDNA1 f16 to an exact 4-product dot with c rounded once (E-FDPA)"},
		{"cdna1.mfma.bf16.f32", "bf16", "bf16", "f32", 1, 8, 2, KindPairwise, "cdna1_v_mfma_f32_16x16x8bf16", "CDNA1 v_mfma_f32_16x16x8bf16: pairwise FP32 trees of 2 products, each added to c", "CDNA1 bf16 to an exact 2-product dot with c rounded once (E-FDPA)"},
		{"cdna2.mfma.f16.f32", "f16", "f16", "f32", 2, 16, 4, KindPairwise, "cdna2_v_mfma_f32_16x16x16f16", "CDNA2 v_mfma_f32_16x16x16f16: as CDNA1 with subnormal inputs, c and results flushed", "CDNA2 to flush-to-zero multiply-adds (FTZ_MUL_ADD, P = 4)"},
		{"cdna2.mfma.bf16.f32", "bf16", "bf16", "f32", 2, 8, 2, KindPairwise, "cdna2_v_mfma_f32_16x16x8bf16", "CDNA2 v_mfma_f32_16x16x8bf16: pairs, flushed", "CDNA2 to flush-to-zero multiply-adds (FTZ_MUL_ADD, P = 2)"},
		{"cdna2.mfma.bf16_1k.f32", "bf16", "bf16", "f32", 2, 16, 4, KindPairwise, "cdna2_v_mfma_f32_16x16x16bf16_1k", "CDNA2 v_mfma_f32_16x16x16bf16_1k: groups of 4, flushed", "CDNA2 to flush-to-zero multiply-adds (FTZ_MUL_ADD, P = 4)"},
		{"cdna3.mfma.f16.f32", "f16", "f16", "f32", 3, 16, 8, KindAMDFDPA, "cdna3_v_mfma_f32_16x16x16_f16", "CDNA3 v_mfma_f32_16x16x16_f16: two groups of 8", "CDNA3 f16 (TR-FDPA: zero products ignored, the sum renormalised before rounding down to 31 bits)"},
		{"cdna3.mfma.bf16.f32", "bf16", "bf16", "f32", 3, 16, 8, KindAMDFDPA, "cdna3_v_mfma_f32_16x16x16_bf16", "CDNA3 v_mfma_f32_16x16x16_bf16: two groups of 8", "CDNA3 bf16 (TR-FDPA, as for f16)"},
		{"cdna3.mfma.xf32.f32", "f32", "f32", "f32", 3, 8, 4, KindAMDFDPA, "cdna3_v_mfma_f32_16x16x8_xf32", "CDNA3 v_mfma_f32_16x16x8_xf32: operands truncated to TF32, two groups of 4", "CDNA3 xf32 (TR-FDPA, as for f16)"},
		{"cdna3.mfma.fp8.fp8.f32", "e4m3fnuz", "e4m3fnuz", "f32", 3, 32, 16, KindAMDFDPA, "cdna3_v_mfma_f32_16x16x32_fp8_fp8", "CDNA3 v_mfma_f32_16x16x32_fp8_fp8: two groups of 16, even and odd elements summed apart", "CDNA3 fp8 (GTR-FDPA: zero products ignored, renormalised sum)"},
		{"cdna3.mfma.fp8.bf8.f32", "e4m3fnuz", "e5m2fnuz", "f32", 3, 32, 16, KindAMDFDPA, "cdna3_v_mfma_f32_16x16x32_fp8_bf8", "CDNA3 v_mfma_f32_16x16x32_fp8_bf8", "CDNA3 fp8 (GTR-FDPA)"},
		{"cdna3.mfma.bf8.fp8.f32", "e5m2fnuz", "e4m3fnuz", "f32", 3, 32, 16, KindAMDFDPA, "cdna3_v_mfma_f32_16x16x32_bf8_fp8", "CDNA3 v_mfma_f32_16x16x32_bf8_fp8", "CDNA3 fp8 (GTR-FDPA)"},
		{"cdna3.mfma.bf8.bf8.f32", "e5m2fnuz", "e5m2fnuz", "f32", 3, 32, 16, KindAMDFDPA, "cdna3_v_mfma_f32_16x16x32_bf8_bf8", "CDNA3 v_mfma_f32_16x16x32_bf8_bf8", "CDNA3 fp8 (GTR-FDPA)"},
	} {
		registerInstr(newAMD(InstrInfo{Name: t.name, Kind: t.kind, A: t.a, B: t.b, C: t.c, K: t.k, Group: t.grp,
			Doc: t.doc, Source: fmt.Sprintf(srcAMDOld, t.file, t.newer)}, t.arch))
	}
}
