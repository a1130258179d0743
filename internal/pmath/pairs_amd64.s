//go:build amd64 && !purego

#include "textflag.h"

// func pairsToF32(a, b *float32, z *float64, n int, as, bs, bm float64)
//
// Four pairs a step: z[0:8] → the even elements (a's) and the odd ones
// (b's) by an in-lane unpack and a cross-lane permute, then a's × as, b's ×
// bs + bm, each rounded (no FMA), and both converted to float32 (VCVTPD2PS
// rounds to nearest even under the default MXCSR, as Go's conversion).
TEXT ·pairsToF32(SB), NOSPLIT, $0-56
	MOVQ         a+0(FP), DI
	MOVQ         b+8(FP), SI
	MOVQ         z+16(FP), DX
	MOVQ         n+24(FP), CX
	VBROADCASTSD as+32(FP), Y13
	VBROADCASTSD bs+40(FP), Y14
	VBROADCASTSD bm+48(FP), Y15
	SHRQ         $2, CX

pairs_step:
	VMOVUPD    0(DX), Y0      // z0 z1 z2 z3
	VMOVUPD    32(DX), Y1     // z4 z5 z6 z7
	VUNPCKLPD  Y1, Y0, Y2     // z0 z4 z2 z6
	VUNPCKHPD  Y1, Y0, Y3     // z1 z5 z3 z7
	VPERMPD    $0xd8, Y2, Y2  // z0 z2 z4 z6
	VPERMPD    $0xd8, Y3, Y3  // z1 z3 z5 z7
	VMULPD     Y13, Y2, Y2
	VMULPD     Y14, Y3, Y3
	VADDPD     Y15, Y3, Y3
	VCVTPD2PSY Y2, X2
	VCVTPD2PSY Y3, X3
	VMOVUPS    X2, 0(DI)
	VMOVUPS    X3, 0(SI)
	ADDQ       $64, DX
	ADDQ       $16, DI
	ADDQ       $16, SI
	DECQ       CX
	JNZ        pairs_step
	VZEROUPPER
	RET
