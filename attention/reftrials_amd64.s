//go:build amd64 && !purego

#include "textflag.h"

// Two trials' kernels of ReferenceQuantizedTrials (reftrials_amd64.go):
// refDotsF64 and refSumsF64 for two trials at once over the same decoded
// values, so that eight independent sums are in flight instead of four.
// Each product and each sum is rounded on its own (no FMA), each sum in
// the order of the one-trial kernels: the same bits as two calls of them.

// STEP2: one step of both kernels: the sixteen values at DX (Y0–Y3) times
// the two trials' factors at SI and DI (broadcast in Y4, Y5), each product
// rounded (Y14, Y15), then added to trial 0's sums (Y6–Y9) and trial 1's
// (Y10–Y13); DX, SI, DI step on and CX counts down.
#define STEP2 \
	VMOVUPD      0(DX), Y0 \
	VMOVUPD      32(DX), Y1 \
	VMOVUPD      64(DX), Y2 \
	VMOVUPD      96(DX), Y3 \
	VBROADCASTSD (SI), Y4 \
	VBROADCASTSD (DI), Y5 \
	VMULPD       Y4, Y0, Y14 \
	VMULPD       Y5, Y0, Y15 \
	VADDPD       Y14, Y6, Y6 \
	VADDPD       Y15, Y10, Y10 \
	VMULPD       Y4, Y1, Y14 \
	VMULPD       Y5, Y1, Y15 \
	VADDPD       Y14, Y7, Y7 \
	VADDPD       Y15, Y11, Y11 \
	VMULPD       Y4, Y2, Y14 \
	VMULPD       Y5, Y2, Y15 \
	VADDPD       Y14, Y8, Y8 \
	VADDPD       Y15, Y12, Y12 \
	VMULPD       Y4, Y3, Y14 \
	VMULPD       Y5, Y3, Y15 \
	VADDPD       Y14, Y9, Y9 \
	VADDPD       Y15, Y13, Y13 \
	ADDQ         $128, DX \
	ADDQ         $8, SI \
	ADDQ         $8, DI \
	DECQ         CX

// STORE2: the two trials' sixteen sums to R8 and R9.
#define STORE2 \
	VMOVUPD Y6, 0(R8) \
	VMOVUPD Y7, 32(R8) \
	VMOVUPD Y8, 64(R8) \
	VMOVUPD Y9, 96(R8) \
	VMOVUPD Y10, 0(R9) \
	VMOVUPD Y11, 32(R9) \
	VMOVUPD Y12, 64(R9) \
	VMOVUPD Y13, 96(R9)

// func refDots2F64(out0, out1, q0, q1 *float64, d int, vals *float64)
//
// out_t[l] = Σ_x q_t[x]·vals[16x+l] for the sixteen keys l of one block,
// in order over x from +0 (d ≥ 1).
TEXT ·refDots2F64(SB), NOSPLIT, $0-48
	MOVQ   q0+16(FP), SI
	MOVQ   q1+24(FP), DI
	MOVQ   d+32(FP), CX
	MOVQ   vals+40(FP), DX
	VXORPD Y6, Y6, Y6
	VXORPD Y7, Y7, Y7
	VXORPD Y8, Y8, Y8
	VXORPD Y9, Y9, Y9
	VXORPD Y10, Y10, Y10
	VXORPD Y11, Y11, Y11
	VXORPD Y12, Y12, Y12
	VXORPD Y13, Y13, Y13

dots2_step:
	STEP2
	JNZ          dots2_step

	MOVQ    out0+0(FP), R8
	MOVQ    out1+8(FP), R9
	STORE2
	VZEROUPPER
	RET

// func refSums2F64(acc0, acc1 *[16]float64, w0, w1 *float64, n int, vals *float64)
//
// acc_t[c] += w_t[j]·vals[16j+c] for the n ≥ 1 keys j in order. No weight
// may be −∞ (the caller's: the one-trial kernel skips those).
TEXT ·refSums2F64(SB), NOSPLIT, $0-48
	MOVQ    acc0+0(FP), R8
	MOVQ    acc1+8(FP), R9
	MOVQ    w0+16(FP), SI
	MOVQ    w1+24(FP), DI
	MOVQ    n+32(FP), CX
	MOVQ    vals+40(FP), DX
	VMOVUPD 0(R8), Y6
	VMOVUPD 32(R8), Y7
	VMOVUPD 64(R8), Y8
	VMOVUPD 96(R8), Y9
	VMOVUPD 0(R9), Y10
	VMOVUPD 32(R9), Y11
	VMOVUPD 64(R9), Y12
	VMOVUPD 96(R9), Y13

sums2_key:
	PREFETCHT0   1024(DX)
	STEP2
	JNZ          sums2_key

	STORE2
	VZEROUPPER
	RET
