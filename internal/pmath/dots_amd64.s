//go:build amd64 && !purego

#include "textflag.h"

// TRANSPOSE4 turns Y0 … Y3 (four keys' values at x … x+3, lane j the
// value at x+j) into the values at x, x+1, x+2, x+3 (lane i key i). It
// clobbers Y4-Y7.
#define TRANSPOSE4 \
	VUNPCKLPD  Y1, Y0, Y4 \
	VUNPCKHPD  Y1, Y0, Y5 \
	VUNPCKLPD  Y3, Y2, Y6 \
	VUNPCKHPD  Y3, Y2, Y7 \
	VPERM2F128 $0x20, Y6, Y4, Y0 \
	VPERM2F128 $0x20, Y7, Y5, Y1 \
	VPERM2F128 $0x31, Y6, Y4, Y2 \
	VPERM2F128 $0x31, Y7, Y5, Y3

// ACC4(acc) adds q[x]·v to acc for x … x+3 in order (q[x+j] broadcast in
// Y8+j, Y0 … Y3 the values): each product rounded, then each sum.
#define ACC4(acc) \
	VMULPD Y8, Y0, Y0 \
	VADDPD Y0, acc, acc \
	VMULPD Y9, Y1, Y1 \
	VADDPD Y1, acc, acc \
	VMULPD Y10, Y2, Y2 \
	VADDPD Y2, acc, acc \
	VMULPD Y11, Y3, Y3 \
	VADDPD Y3, acc, acc

// DOTS8(load, width) is the body of dotsF32x8 (load VCVTPS2PD, 16 bytes
// of float32 a step) and dotsF64x8 (VMOVUPD, 32 bytes): eight dot products
// Σ_x q[x]·k_i[x], each in order over x from +0, keys 0-3 in the lanes of
// Y13 and 4-7 in Y14, four x a step, no FMA.
#define DOTS8(load, width) \
	MOVQ   q+8(FP), SI \
	MOVQ   n+16(FP), CX \
	MOVQ   k+24(FP), DX \
	MOVQ   0(DX), R8 \
	MOVQ   8(DX), R9 \
	MOVQ   16(DX), R10 \
	MOVQ   24(DX), R11 \
	MOVQ   32(DX), R12 \
	MOVQ   40(DX), R13 \
	MOVQ   48(DX), AX \
	MOVQ   56(DX), DI \
	XORQ   BX, BX \
	VXORPD Y13, Y13, Y13 \
	VXORPD Y14, Y14, Y14 \
loop: \
	VBROADCASTSD 0(SI), Y8 \
	VBROADCASTSD 8(SI), Y9 \
	VBROADCASTSD 16(SI), Y10 \
	VBROADCASTSD 24(SI), Y11 \
	load         (R8)(BX*1), Y0 \
	load         (R9)(BX*1), Y1 \
	load         (R10)(BX*1), Y2 \
	load         (R11)(BX*1), Y3 \
	TRANSPOSE4 \
	ACC4(Y13) \
	load         (R12)(BX*1), Y0 \
	load         (R13)(BX*1), Y1 \
	load         (AX)(BX*1), Y2 \
	load         (DI)(BX*1), Y3 \
	TRANSPOSE4 \
	ACC4(Y14) \
	ADDQ         $32, SI \
	ADDQ         $width, BX \
	SUBQ         $4, CX \
	JNZ          loop \
	MOVQ         out+0(FP), DX \
	VMOVUPD      Y13, 0(DX) \
	VMOVUPD      Y14, 32(DX) \
	VZEROUPPER \
	RET

// func dotsF32x8(out *[8]float64, q *float64, n int, k *[8]*float32)
TEXT ·dotsF32x8(SB), NOSPLIT, $0-32
	DOTS8(VCVTPS2PD, 16)

// func dotsF64x8(out *[8]float64, q *float64, n int, k *[8]*float64)
TEXT ·dotsF64x8(SB), NOSPLIT, $0-32
	DOTS8(VMOVUPD, 32)
