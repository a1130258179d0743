//go:build amd64 && !purego

#include "textflag.h"

// AXPY4(load, width) is the loop of axpyF32x4 (load VCVTPS2PD, 16 bytes
// of float32 a step) or axpyF64x4 (load VMOVUPD, 32 bytes): four output
// elements a step, o += w0·v0, then w1·v1, w2·v2, w3·v3, each product and
// sum rounded (no FMA). Y12-Y15 hold the broadcast weights.
#define AXPY4(load, width) \
	MOVQ         o+0(FP), DI \
	MOVQ         w+8(FP), AX \
	MOVQ         v0+16(FP), R8 \
	MOVQ         v1+24(FP), R9 \
	MOVQ         v2+32(FP), R10 \
	MOVQ         v3+40(FP), R11 \
	MOVQ         n+48(FP), CX \
	VBROADCASTSD 0(AX), Y12 \
	VBROADCASTSD 8(AX), Y13 \
	VBROADCASTSD 16(AX), Y14 \
	VBROADCASTSD 24(AX), Y15 \
	XORQ         BX, BX \
loop: \
	VMOVUPD      (DI), Y0 \
	load         (R8)(BX*1), Y1 \
	load         (R9)(BX*1), Y2 \
	load         (R10)(BX*1), Y3 \
	load         (R11)(BX*1), Y4 \
	VMULPD       Y12, Y1, Y1 \
	VMULPD       Y13, Y2, Y2 \
	VMULPD       Y14, Y3, Y3 \
	VMULPD       Y15, Y4, Y4 \
	VADDPD       Y1, Y0, Y0 \
	VADDPD       Y2, Y0, Y0 \
	VADDPD       Y3, Y0, Y0 \
	VADDPD       Y4, Y0, Y0 \
	VMOVUPD      Y0, (DI) \
	ADDQ         $32, DI \
	ADDQ         $width, BX \
	SUBQ         $4, CX \
	JNZ          loop \
	VZEROUPPER \
	RET

// func axpyF32x4(o *float64, w *[4]float64, v0, v1, v2, v3 *float32, n int)
TEXT ·axpyF32x4(SB), NOSPLIT, $0-56
	AXPY4(VCVTPS2PD, 16)

// func axpyF64x4(o *float64, w *[4]float64, v0, v1, v2, v3 *float64, n int)
TEXT ·axpyF64x4(SB), NOSPLIT, $0-56
	AXPY4(VMOVUPD, 32)
