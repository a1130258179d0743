//go:build amd64 && !purego

#include "textflag.h"

// func countAbsAbove(x *float32, n int, t *[4]uint32, out *[4]int)
//
// n a positive multiple of 8. Per step: eight magnitudes' bits (the sign
// cleared), compared with each threshold as signed 32-bit integers (both
// below 2^31, so as unsigned), the comparison's −1 subtracted from the
// threshold's lane counts; at the end each count's eight lanes are summed.
TEXT ·countAbsAbove(SB), NOSPLIT, $0-32
	MOVQ         x+0(FP), SI
	MOVQ         n+8(FP), CX
	MOVQ         t+16(FP), DX
	MOVQ         out+24(FP), DI
	VPBROADCASTD 0(DX), Y8
	VPBROADCASTD 4(DX), Y9
	VPBROADCASTD 8(DX), Y10
	VPBROADCASTD 12(DX), Y11
	MOVL         $0x7fffffff, AX
	VMOVD        AX, X12
	VPBROADCASTD X12, Y12
	VPXOR        Y0, Y0, Y0
	VPXOR        Y1, Y1, Y1
	VPXOR        Y2, Y2, Y2
	VPXOR        Y3, Y3, Y3
	SHRQ         $3, CX

count_step:
	VPAND    0(SI), Y12, Y4
	VPCMPGTD Y8, Y4, Y5
	VPCMPGTD Y9, Y4, Y6
	VPCMPGTD Y10, Y4, Y7
	VPCMPGTD Y11, Y4, Y13
	VPSUBD   Y5, Y0, Y0
	VPSUBD   Y6, Y1, Y1
	VPSUBD   Y7, Y2, Y2
	VPSUBD   Y13, Y3, Y3
	ADDQ     $32, SI
	DECQ     CX
	JNZ      count_step

#define HSUM(Y, X, off) \
	VEXTRACTI128 $1, Y, X5 \
	VPADDD       X5, X, X \
	VPSHUFD      $0x4e, X, X5 \
	VPADDD       X5, X, X \
	VPSHUFD      $0xb1, X, X5 \
	VPADDD       X5, X, X \
	VMOVD        X, AX \
	MOVQ         AX, off(DI)

	HSUM(Y0, X0, 0)
	HSUM(Y1, X1, 8)
	HSUM(Y2, X2, 16)
	HSUM(Y3, X3, 24)
	VZEROUPPER
	RET
