//go:build amd64 && !purego

#include "textflag.h"
#include "trunc_amd64.h"

// The chain kernels run whole steps of l elements (l a multiple of 4, at
// most 64) one after the other, each step's result feeding the next as c,
// and stop before the first step with a NaN or inf (in an operand or in
// c): they return its result d and done, the number of elements consumed
// (steps×l when none stopped them). Each step is the computation above
// followed by the final conversion rho (RZ to fb = 23 or 13 fraction bits,
// FP32 exponent range): with S ≠ 0, x = S × 2^(emax−F) is exact in float64;
// for |x| ≥ 2^-126 rho(x) is x with its 52−fb low fraction bits cleared,
// converted exactly to float32 (an x of 2^128 or more becomes ±inf); below,
// it is trunc(x × 2^(126+fb)) × 2^−(126+fb). S = 0 gives +0.
//
// Registers: SI ent, AX a, BX b, R10 steps left, R11 l, R12 done,
// R13 F, X10 c (float32), X11 bits of the fraction mask, X12 2^(126+fb),
// X9 2^−(126+fb), Y13–Y15 as in INIT.

#define CHAIN_SETUP \
	MOVQ         ent+0(FP), SI \
	MOVQ         a+8(FP), AX \
	MOVQ         b+16(FP), BX \
	MOVQ         steps+24(FP), R10 \
	MOVQ         l+32(FP), R11 \
	XORQ         R12, R12 \
	MOVL         f+40(FP), R13 \
	VMOVSS       c+52(FP), X10 \
	VPCMPEQD     Y15, Y15, Y15 \
	VPSLLQ       $32, Y15, Y14 \
	MOVL         fb+44(FP), CX \
	MOVQ         $-1, R8 \
	NEGL         CX \
	ADDL         $52, CX \
	SHLQ         CX, R8 \
	VMOVQ        R8, X11 \
	MOVL         fb+44(FP), R8 \
	LEAQ         (1023+126)(R8), R9 \
	SHLQ         $52, R9 \
	VMOVQ        R9, X12 \
	MOVQ         $(1023-126), R9 \
	SUBQ         R8, R9 \
	SHLQ         $52, R9 \
	VMOVQ        R9, X9 \
	TESTQ        R10, R10 \
	JZ           chain_done

// CHAIN_STEP_HEAD computes c's exponent into R9 (jumping to chain_done
// for a NaN or inf c) and resets Y13 and DI.
#define CHAIN_STEP_HEAD \
	VMOVD        X10, R8 \
	MOVL         R8, R9 \
	SHRL         $23, R9 \
	ANDL         $0xff, R9 \
	CMPL         R9, $0xff \
	JEQ          chain_done \
	MOVL         $1, DX \
	CMPL         R9, DX \
	CMOVLLT      DX, R9 \
	SUBL         $127, R9 \
	TESTL        $0x7fffffff, R8 \
	CMOVLEQ      ezero+48(FP), R9 \
	MOVL         $-2000, R8 \
	VMOVD        R8, X13 \
	VPBROADCASTD X13, Y13 \
	LEAQ         0(SP), DI \
	MOVQ         R11, DX \
	SHRQ         $2, DX

// CHAIN_STEP_TAIL finishes a step whose products are at 0(SP) and whose
// exponent maxima are in Y13; R9 holds c's exponent. AX and BX have
// advanced past the step; it rewinds them when the step holds a special.
#define CHAIN_STEP_TAIL \
	VEXTRACTI128 $1, Y13, X0 \
	VPMAXSD      X0, X13, X13 \
	VPSHUFD      $0x02, X13, X0 \
	VPMAXSD      X0, X13, X13 \
	VMOVD        X13, R8 \
	CMPL         R8, $1000 \
	JGT          chain_special \
	CMPL         R8, R9 \
	CMOVLLT      R9, R8 \
	LEAL         1023(R13), R9 \
	SUBL         R8, R9 \
	SHLQ         $52, R9 \
	VMOVQ        R9, X7 \
	VXORPD       X0, X0, X0 \
	VCVTSS2SD    X10, X0, X0 \
	VMULSD       X7, X0, X0 \
	VROUNDSD     $3, X0, X0, X8 \
	TRUNC_SUM(Y6, R11) \
	VXORPD       X10, X10, X10 \
	VUCOMISD     X10, X8 \
	JEQ          chain_next \
	MOVL         $1023, R9 \
	SUBL         R13, R9 \
	ADDL         R8, R9 \
	SHLQ         $52, R9 \
	VMOVQ        R9, X1 \
	VMULSD       X1, X8, X8 \
	VMOVQ        X8, R9 \
	MOVQ         R9, DX \
	BTRQ         $63, DX \
	MOVQ         $0x3810000000000000, R8 \
	CMPQ         DX, R8 \
	JCS          chain_subnormal \
	VPAND        X11, X8, X8 \
	VCVTSD2SS    X8, X10, X10 \
	JMP          chain_next \
chain_subnormal: \
	VMULSD       X12, X8, X8 \
	VROUNDSD     $3, X8, X8, X8 \
	VMULSD       X9, X8, X8 \
	VCVTSD2SS    X8, X10, X10 \
chain_next: \
	ADDQ         R11, R12 \
	DECQ         R10 \
	JNZ          chain_step \
chain_done: \
	VMOVSS       X10, d+56(FP) \
	MOVQ         R12, done+64(FP) \
	VZEROUPPER \
	RET \
chain_special: \
	VMOVSS       X10, d+56(FP) \
	MOVQ         R12, done+64(FP) \
	VZEROUPPER \
	RET

// func chainGG(ent *[1 << 16]uint64, a, b *uint16, steps, l int, f, fb, ezero int32, c float32) (d float32, done int)
TEXT ·chainGG(SB), 0, $512-72
	CHAIN_SETUP

chain_step:
	CHAIN_STEP_HEAD

	CMPB       ·scalarLoads(SB), $0
	JNE        cgg_loads

cgg_loop:
	GATHER4(VPMOVZXWD, SI, SI, 8)
	DECQ       DX
	JNZ        cgg_loop
	JMP        cgg_tail

cgg_loads:
	LOADS4(MOVWLZX, SI, SI, 2)
	DECQ       DX
	JNZ        cgg_loads

cgg_tail:
	CHAIN_STEP_TAIL

// func chainLG(ent *[1 << 16]uint64, a *uint64, b *uint16, steps, l int, f, fb, ezero int32, c float32) (d float32, done int)
//
// a holds the first operand's entries (looked up beforehand).
TEXT ·chainLG(SB), 0, $512-72
	CHAIN_SETUP

chain_step:
	CHAIN_STEP_HEAD

	CMPB       ·scalarLoads(SB), $0
	JNE        clg_loads

clg_loop:
	VPMOVZXWD  (BX), X1
	VMOVDQU    Y15, Y3
	VPXOR      Y5, Y5, Y5
	VMOVDQU    (AX), Y4
	VPGATHERDQ Y3, (SI)(X1*8), Y5
	PRODUCTS4(32, 8)
	DECQ       DX
	JNZ        clg_loop
	JMP        clg_tail

clg_loads:
	VMOVDQU    (AX), Y4
	ENTRIES4(MOVWLZX, BX, SI, 2, Y5, X5, X3)
	PRODUCTS4(32, 8)
	DECQ       DX
	JNZ        clg_loads

clg_tail:
	CHAIN_STEP_TAIL
