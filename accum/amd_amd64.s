//go:build amd64 && !purego

#include "textflag.h"

// func fmaChain32(a, b *uint32, n int, c float32) float32
//
// c = fma(a_i, b_i, c) for i = 0..n−1, each VFMADD231SS an IEEE fused
// multiply-add rounded once to float32 (nearest even: Go leaves MXCSR at
// its default, no flush to zero, no denormals-are-zero).
TEXT ·fmaChain32(SB), NOSPLIT, $0-36
	MOVQ   a+0(FP), AX
	MOVQ   b+8(FP), BX
	MOVQ   n+16(FP), CX
	VMOVSS c+24(FP), X0
	MOVQ   CX, DX
	SHRQ   $2, DX
	JZ     fma_tail

fma_loop4:
	VMOVSS      (AX), X1
	VFMADD231SS (BX), X1, X0
	VMOVSS      4(AX), X2
	VFMADD231SS 4(BX), X2, X0
	VMOVSS      8(AX), X3
	VFMADD231SS 8(BX), X3, X0
	VMOVSS      12(AX), X4
	VFMADD231SS 12(BX), X4, X0
	ADDQ        $16, AX
	ADDQ        $16, BX
	DECQ        DX
	JNZ         fma_loop4

fma_tail:
	ANDQ $3, CX
	JZ   fma_done

fma_loop1:
	VMOVSS      (AX), X1
	VFMADD231SS (BX), X1, X0
	ADDQ        $4, AX
	ADDQ        $4, BX
	DECQ        CX
	JNZ         fma_loop1

fma_done:
	VMOVSS X0, ret+32(FP)
	RET
