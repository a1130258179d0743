//go:build amd64 && !purego

#include "textflag.h"
#include "trunc_amd64.h"

// The chain kernels of scaledFast (see scaled_amd64.go): whole steps of l
// elements (l a multiple of 4, at most 64), each step's result feeding the
// next as c, stopping before the first step that holds a NaN or inf (in an
// operand, a scale or c). They return the result d and done, the number of
// elements consumed (steps×l when nothing stopped them). A step computes,
// with the exponent sums emaxP of tableStep's kernels (step_amd64.s) and a
// step's scale exponent es (0 for TF32 and unscaled steps),
//
//	E   = max(e(c), emaxP + es)
//	S   = trunc(c × 2^(F−E)) + Σ_i trunc(value(a_i) × value(b_i) × 2^(F−E+es))
//	d   = rho(S × 2^(E−F)), rho RZ to fb fraction bits in the FP32 range
//
// all exact in float64 (products of at most 22 significant bits, scalings
// by powers of two within the float64 range, every partial sum an integer
// below 2^53), and rho as in chain_amd64.s. S = 0 gives +0.
//
// Shared registers: AX a, BX b, R10 steps left, R11 l, R12 done, X10 c
// (as float64, the upper half of X10 zero: the c term takes it along;
// d is converted back, exactly, at the end), X11 bits of the fraction
// mask, X12 2^(126+fb), X9 2^−(126+fb), Y13 the exponent maxima; 512(SP) holds F, 516(SP) e_zero. The products of
// a step wait at 0(SP).

// CONV_SETUP computes X9, X11 and X12 from fb in R8 and clears R12.
#define CONV_SETUP \
	MOVL  R8, CX \
	MOVQ  $-1, DX \
	NEGL  CX \
	ADDL  $52, CX \
	SHLQ  CX, DX \
	VMOVQ DX, X11 \
	LEAQ  (1023+126)(R8), R9 \
	SHLQ  $52, R9 \
	VMOVQ R9, X12 \
	MOVQ  $(1023-126), R9 \
	SUBQ  R8, R9 \
	SHLQ  $52, R9 \
	VMOVQ R9, X9 \
	XORQ  R12, R12

// STEP_HEAD puts c's exponent into R9 (e_zero for a zero c, -126 for a
// subnormal; to chain_done for a NaN or inf c), resets Y13 to -2000, DI to
// the products and DX to l/4.
#define STEP_HEAD \
	VMOVQ        X10, R8 \
	MOVQ         R8, R9 \
	SHRQ         $52, R9 \
	ANDL         $0x7ff, R9 \
	CMPL         R9, $0x7ff \
	JEQ          chain_done \
	SUBL         $1023, R9 \
	MOVL         $-126, DX \
	CMPL         R9, DX \
	CMOVLLT      DX, R9 \
	SHLQ         $1, R8 \
	CMOVLEQ      516(SP), R9 \
	MOVL         $-2000, R8 \
	VMOVD        R8, X13 \
	VPBROADCASTD X13, Y13 \
	LEAQ         0(SP), DI \
	MOVQ         R11, DX \
	SHRQ         $2, DX

// STEP_TAIL finishes a step: R8 holds emaxP, DX es, R9 c's exponent. It
// stops at chain_done when emaxP > 1000 (a NaN or inf operand), else sets
// X10 to the step's result and loops to chain_step while steps are left.
#define STEP_TAIL \
	CMPL         R8, $1000 \
	JGT          chain_done \
	ADDL         DX, R8 \
	CMPL         R8, R9 \
	CMOVLLT      R9, R8 \
	MOVL         512(SP), R9 \
	ADDL         $1023, R9 \
	SUBL         R8, R9 \
	ADDL         R9, DX \
	SHLQ         $52, R9 \
	VMOVQ        R9, X7 \
	VMULSD       X7, X10, X0 \
	VROUNDSD     $3, X0, X0, X8 \
	SHLQ         $52, DX \
	VMOVQ        DX, X7 \
	TRUNC_SUM(Y6, R11) \
	VXORPD       X10, X10, X10 \
	VUCOMISD     X10, X8 \
	JEQ          chain_next \
	MOVL         $1023, R9 \
	SUBL         512(SP), R9 \
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
	MOVQ         $0x47f0000000000000, R8 \
	CMPQ         DX, R8 \
	JCC          chain_overflow \
	VPAND        X11, X8, X10 \
	JMP          chain_next \
chain_subnormal: \
	VMULSD       X12, X8, X8 \
	VROUNDSD     $3, X8, X8, X8 \
	VMULSD       X9, X8, X8 \
	VMOVQ        X8, X10 \
	JMP          chain_next \
chain_overflow: \
	VCVTSD2SS    X8, X0, X0 \
	VCVTSS2SD    X0, X10, X10 \
chain_next: \
	ADDQ         R11, R12 \
	DECQ         R10 \
	JNZ          chain_step

// The end of a TF32 step, shared by its general loop and the l = 4 loop.
// TF_TSUM adds up the four lanes of Y8 (the truncated terms, +0 where
// none) and scales the sum by X15 = 2^(G−F): P in X8.
#define TF_TSUM \
	VEXTRACTF128 $1, Y8, X0 \
	VADDPD       X0, X8, X8 \
	VUNPCKHPD    X8, X8, X0 \
	VADDSD       X0, X8, X8 \
	VMULSD       X15, X8, X8

// TF_CADD compares |c| with 2^(G+1) (to tf_slow) and 2^G (below it: to
// tf_clow) and otherwise adds c to P: D in X8.
#define TF_CADD \
	VMOVQ  X10, DX \
	BTRQ   $63, DX \
	CMPQ   DX, 528(SP) \
	JCC    tf_slow \
	CMPQ   DX, 536(SP) \
	JCS    tf_clow \
	VADDSD X10, X8, X8

// TF_RHO is rho, RZ to fb fraction bits in the FP32 range, of D (X8) into
// X10, a D outside [2^−126, 2^128) going to tf_range.
#define TF_RHO \
	VMOVQ X8, DX \
	BTRQ  $63, DX \
	SUBQ  544(SP), DX \
	CMPQ  DX, 552(SP) \
	JCC   tf_range \
	VPAND X11, X8, X10

// func chainST8(entA, entB *[256]uint64, a, b *uint8, es *int32, steps, l int, f, fb, ezero int32, c float32) (d float32, done int)
//
// ST steps over 8-bit codes: entA and entB hold float64bits(value) |
// uint32(exponent) per code of each operand (expZero, expSpecial as in
// tableStep); es[k] is step k's scale exponent (above 1000: stop there).
TEXT ·chainST8(SB), 0, $544-88
	MOVL         f+56(FP), R8
	MOVL         R8, 512(SP)
	MOVL         ezero+64(FP), R8
	MOVL         R8, 516(SP)
	MOVL         fb+60(FP), R8
	CONV_SETUP
	MOVQ         entA+0(FP), SI
	MOVQ         entB+8(FP), CX
	MOVQ         a+16(FP), AX
	MOVQ         b+24(FP), BX
	MOVQ         es+32(FP), R13
	MOVQ         steps+40(FP), R10
	MOVQ         l+48(FP), R11
	VMOVSS       c+68(FP), X0
	VXORPD       X10, X10, X10
	VCVTSS2SD    X0, X10, X10
	VPCMPEQD     Y15, Y15, Y15
	VPSLLQ       $32, Y15, Y14
	TESTQ        R10, R10
	JZ           chain_done

chain_step:
	STEP_HEAD

	CMPB       ·scalarLoads(SB), $0
	JNE        st_loads

st_loop:
	GATHER4(VPMOVZXBD, SI, CX, 4)
	DECQ       DX
	JNZ        st_loop
	JMP        st_max

st_loads:
	LOADS4(MOVBLZX, SI, CX, 1)
	DECQ       DX
	JNZ        st_loads

st_max:

	// the maxima sit in the even lanes (the odd ones add value bits)
	VEXTRACTI128 $1, Y13, X0
	VPMAXSD      X0, X13, X13
	VPSHUFD      $0x02, X13, X0
	VPMAXSD      X0, X13, X13
	VMOVD        X13, R8
	MOVL         (R13), DX
	CMPL         DX, $1000
	JGT          chain_done
	ADDQ         $4, R13
	STEP_TAIL

chain_done:
	MOVQ      R12, done+80(FP)
	MOVL      c+68(FP), R8
	MOVL      R8, d+72(FP)
	TESTQ     R12, R12
	JZ        st_none
	VCVTSD2SS X10, X0, X0
	VMOVSS    X0, d+72(FP)

st_none:
	VZEROUPPER
	RET

// Constants of the TF32 kernel, eight lanes each: the TF32 mask, 1, the
// bias 1000 of the exponents, 254 (the largest finite exponent field).
DATA tf32k<>+0(SB)/8, $0xffffe000ffffe000
DATA tf32k<>+8(SB)/8, $0xffffe000ffffe000
DATA tf32k<>+16(SB)/8, $0xffffe000ffffe000
DATA tf32k<>+24(SB)/8, $0xffffe000ffffe000
DATA tf32k<>+32(SB)/8, $0x0000000100000001
DATA tf32k<>+40(SB)/8, $0x0000000100000001
DATA tf32k<>+48(SB)/8, $0x0000000100000001
DATA tf32k<>+56(SB)/8, $0x0000000100000001
DATA tf32k<>+64(SB)/8, $0x000003e8000003e8
DATA tf32k<>+72(SB)/8, $0x000003e8000003e8
DATA tf32k<>+80(SB)/8, $0x000003e8000003e8
DATA tf32k<>+88(SB)/8, $0x000003e8000003e8
DATA tf32k<>+96(SB)/8, $0x000000fe000000fe
DATA tf32k<>+104(SB)/8, $0x000000fe000000fe
DATA tf32k<>+112(SB)/8, $0x000000fe000000fe
DATA tf32k<>+120(SB)/8, $0x000000fe000000fe
GLOBL tf32k<>(SB), RODATA|NOPTR, $128

// TF32_EXP sets e to the biased exponent field of the TF32 bits x (z gets
// x & 0x7fffffff): max(field, 1) + 1000, or 0 for a zero (VPSIGND by z).
// The sum of two is then the product's exponent plus 2254 (2002 or more)
// for nonzero operands and at most 1255 with a zero operand: −999 or less
// unbiased, below any c, as a zero product's e_zero is. The fields go into
// the maxima sp (a field of 255, NaN or inf, makes the step stop).
#define TF32_EXP(x, e, z, sp) \
	VPSLLD   $1, x, e \
	VPSRLD   $1, e, z \
	VPSRLD   $24, e, e \
	VPMAXSD  tf32k<>+32(SB), e, e \
	VPMAXSD  e, sp, sp \
	VPADDD   tf32k<>+64(SB), e, e \
	VPSIGND  z, e, e

// TF32_PROD multiplies the TF32 values of the four lanes of xa and xb in float64 (exact: 11 × 11 bits) and stores them at off(DI).
#define TF32_PROD(xa, xb, off) \
	VCVTPS2PD xa, Y4 \
	VCVTPS2PD xb, Y5 \
	VMULPD    Y4, Y5, Y4 \
	VMOVUPD   Y4, off(DI)

// func chainTF32(a, b *uint32, steps, l int, f, fb, ezero int32, c float32) (d float32, done int)
//
// TF32 steps over float32 bit patterns (the 13 low bits ignored): a step
// of l elements takes four in XMM registers when l%8 = 4 (first, as the
// VEX.128 writes clear the upper halves of Y13 and Y14) and eight a loop
// iteration in YMM registers.
//
// The step's E = max(e(c), emaxP) is guessed, so that the products' terms
// do not wait for c: G = max(Gb, emaxP), Gb (R13) the exponent of c when
// the guess last failed. The terms are summed in value units,
// P = Σ trunc(p_i × 2^(F−G)) × 2^(G−F), exact (multiples of 2^(G−F),
// below 2^53 of them) and never −0 (the sums start from +0). Then |c| is
// compared with 2^G and 2^(G+1):
//
//   - 2^G ≤ |c| < 2^(G+1): e(c) = G = E, and trunc_E(c) is c itself (c is
//     a float32, 24 significant bits from 2^e(c), and F ≥ 23), so
//     D = c + P: one addition from c to the next c.
//   - |c| < 2^G: e(c) ≤ G (G ≥ −126), so E = G where emaxP = G, and
//     D = trunc(c × 2^(F−G)) × 2^(G−F) + P.
//   - otherwise (and for every c where G < −126) the slow path computes
//     e(c) and E, sets Gb = e(c), sums the terms again if E ≠ G, and
//     forms D as above from the exact exponents.
//
// D is S × 2^(E−F) for the step's integer sum S, so the same result. The
// frame past the products: 512 F, 516 e_zero, 520 0 where F ≥ 23 else
// 1<<20 (e(c) never equals E: c is truncated like the products), 524 the G
// of the scales below, 528 the bits of 2^(G+1) (0 where G < −126), 536
// those of 2^G (+inf's where F < 23), 544 those of 2^−126, 552 those of
// 2^128 less 544's (rho's range, one compare). Y7 holds 2^(F−G) in every
// lane, X15 2^(G−F).
TEXT ·chainTF32(SB), 0, $560-64
	MOVL    f+32(FP), R8
	MOVL    R8, 512(SP)
	MOVL    $0, R9
	MOVL    $(1<<20), DX
	CMPL    R8, $23
	CMOVLLT DX, R9
	MOVL    R9, 520(SP)
	MOVL    $0x7fffffff, 524(SP)
	MOVQ    $0x3810000000000000, DX
	MOVQ    DX, 544(SP)
	MOVQ    $(0x47f0000000000000-0x3810000000000000), DX
	MOVQ    DX, 552(SP)
	MOVL    ezero+40(FP), R8
	MOVL    R8, 516(SP)
	MOVL    fb+36(FP), R8
	CONV_SETUP
	MOVQ    a+0(FP), AX
	MOVQ    b+8(FP), BX
	MOVQ    steps+16(FP), R10
	MOVQ    l+24(FP), R11
	VMOVSS    c+44(FP), X0
	VXORPD    X10, X10, X10
	VCVTSS2SD X0, X10, X10
	MOVL    $-2000, R13
	TESTQ   R10, R10
	JZ      chain_done
	VMOVQ   X10, R8
	SHRQ    $52, R8
	ANDL    $0x7ff, R8
	CMPL    R8, $0x7ff
	JEQ     chain_done

chain_step:
	CMPQ         R11, $4
	JEQ          tf4_step
	MOVL         $-2000, R8
	VMOVD        R8, X13
	VPBROADCASTD X13, Y13
	LEAQ         0(SP), DI
	VPXOR        Y14, Y14, Y14
	TESTQ        $4, R11
	JZ           tf_wide
	VMOVDQU      (AX), X0
	VMOVDQU      (BX), X1
	VPAND        tf32k<>+0(SB), X0, X0
	VPAND        tf32k<>+0(SB), X1, X1
	TF32_PROD(X0, X1, 0)
	TF32_EXP(X0, X2, X3, X14)
	TF32_EXP(X1, X5, X6, X14)
	VPADDD       X2, X5, X5
	VPMAXSD      X5, X13, X13
	ADDQ         $16, AX
	ADDQ         $16, BX
	ADDQ         $32, DI

tf_wide:
	MOVQ R11, DX
	SHRQ $3, DX
	JZ   tf_reduce

tf_loop:
	VMOVDQU      (AX), Y0
	VMOVDQU      (BX), Y1
	VPAND        tf32k<>+0(SB), Y0, Y0
	VPAND        tf32k<>+0(SB), Y1, Y1
	TF32_PROD(X0, X1, 0)
	VEXTRACTI128 $1, Y0, X2
	VEXTRACTI128 $1, Y1, X3
	TF32_PROD(X2, X3, 32)
	TF32_EXP(Y0, Y2, Y3, Y14)
	TF32_EXP(Y1, Y5, Y6, Y14)
	VPADDD       Y2, Y5, Y5
	VPMAXSD      Y5, Y13, Y13
	ADDQ         $32, AX
	ADDQ         $32, BX
	ADDQ         $64, DI
	DECQ         DX
	JNZ          tf_loop

tf_reduce:
	VPCMPGTD     tf32k<>+96(SB), Y14, Y0
	VPTEST       Y0, Y0
	JNZ          chain_done
	VEXTRACTI128 $1, Y13, X0
	VPMAXSD      X0, X13, X13
	VPSHUFD      $0x0e, X13, X0
	VPMAXSD      X0, X13, X13
	VPSHUFD      $0x01, X13, X0
	VPMAXSD      X0, X13, X13
	VMOVD        X13, R8
	SUBL         $2254, R8

	// The guess G = max(Gb, emaxP) in CX; its scales unless they are set.
	MOVL    R13, CX
	CMPL    R8, CX
	CMOVLGT R8, CX
	CMPL    CX, 524(SP)
	JEQ     tf_terms

tf_scales:
	MOVL         CX, 524(SP)
	MOVL         512(SP), R9
	LEAL         1023(R9), DX
	SUBL         CX, DX
	SHLQ         $52, DX
	VMOVQ        DX, X7
	VBROADCASTSD X7, Y7
	MOVL         $1023, DX
	SUBL         R9, DX
	ADDL         CX, DX
	SHLQ         $52, DX
	VMOVQ        DX, X15
	LEAL         1024(CX), DX
	SHLQ         $52, DX
	XORL         SI, SI
	CMPL         CX, $-126
	CMOVQLT      SI, DX
	MOVQ         DX, 528(SP)
	LEAL         1023(CX), DX
	SHLQ         $52, DX
	MOVQ         $0x7ff0000000000000, SI
	CMPL         R9, $23
	CMOVQLT      SI, DX
	MOVQ         DX, 536(SP)

tf_terms:
	// P into X8.
	VXORPD Y8, Y8, Y8
	VXORPD Y1, Y1, Y1
	LEAQ   0(SP), DI
	MOVQ   R11, DX
	SHRQ   $3, DX
	JZ     tf_ttail

tf_tloop:
	VMULPD   (DI), Y7, Y0
	VMULPD   32(DI), Y7, Y2
	VROUNDPD $3, Y0, Y0
	VROUNDPD $3, Y2, Y2
	VADDPD   Y0, Y8, Y8
	VADDPD   Y2, Y1, Y1
	ADDQ     $64, DI
	DECQ     DX
	JNZ      tf_tloop

tf_ttail:
	TESTQ    $4, R11
	JZ       tf_tsum
	VMULPD   (DI), Y7, Y0
	VROUNDPD $3, Y0, Y0
	VADDPD   Y0, Y8, Y8

tf_tsum:
	VADDPD Y1, Y8, Y8
	TF_TSUM
	TF_CADD

tf_round:
	TF_RHO

tf_next:
	ADDQ R11, R12
	DECQ R10
	JNZ  chain_step
	JMP  chain_done

tf_clow:
	CMPL R8, CX
	JNE  tf_slow

tf_ctrunc:
	VMULSD   X7, X10, X0
	VROUNDSD $3, X0, X0, X0
	VMULSD   X15, X0, X0
	VADDSD   X0, X8, X8
	JMP      tf_round

tf_slow:
	// e(c) into R9 (e_zero for a zero c, -126 for a subnormal), E into R8,
	// Gb = e(c); the terms again with E where E ≠ G.
	VMOVQ   X10, DX
	MOVQ    DX, R9
	SHRQ    $52, R9
	ANDL    $0x7ff, R9
	SUBL    $1023, R9
	MOVL    $-126, SI
	CMPL    R9, SI
	CMOVLLT SI, R9
	SHLQ    $1, DX
	CMOVLEQ 516(SP), R9
	CMPL    R9, R8
	CMOVLGT R9, R8
	MOVL    R9, R13
	CMPL    R8, CX
	JEQ     tf_exact
	MOVL    R8, CX
	JMP     tf_scales

tf_exact:
	MOVL R9, SI
	ADDL 520(SP), SI
	CMPL SI, R8
	JNE  tf_ctrunc
	VADDSD X10, X8, X8
	JMP  tf_round

tf4_step:
	// l = 4 (sm80's steps): the step above in fewer instructions, the
	// operands' exponents in one register (a's low lane, b's high), the
	// products summed from their register. A guess whose scales are not
	// set, and the slow path, go on in the general code above (its terms
	// read the products at 0(SP)), which comes back here at the next step.
	VMOVDQU      (AX), X0
	VMOVDQU      (BX), X1
	VPAND        tf32k<>+0(SB), X0, X0
	VPAND        tf32k<>+0(SB), X1, X1
	VCVTPS2PD    X0, Y4
	VCVTPS2PD    X1, Y5
	VMULPD       Y4, Y5, Y4
	VMOVUPD      Y4, 0(SP)
	VINSERTI128  $1, X1, Y0, Y0
	VPXOR        Y14, Y14, Y14
	TF32_EXP(Y0, Y2, Y3, Y14)
	ADDQ         $16, AX
	ADDQ         $16, BX
	VPCMPGTD     tf32k<>+96(SB), Y14, Y0
	VPTEST       Y0, Y0
	JNZ          chain_done
	VEXTRACTI128 $1, Y2, X5
	VPADDD       X2, X5, X5
	VPSHUFD      $0x0e, X5, X0
	VPMAXSD      X0, X5, X5
	VPSHUFD      $0x01, X5, X0
	VPMAXSD      X0, X5, X5
	VMOVD        X5, R8
	SUBL         $2254, R8
	MOVL         R13, CX
	CMPL         R8, CX
	CMOVLGT      R8, CX
	CMPL         CX, 524(SP)
	JNE          tf_scales
	VMULPD       Y7, Y4, Y0
	VROUNDPD     $3, Y0, Y0
	VXORPD       Y8, Y8, Y8
	VADDPD       Y0, Y8, Y8
	TF_TSUM
	TF_CADD
	TF_RHO
	ADDQ         R11, R12
	DECQ         R10
	JNZ          tf4_step
	JMP          chain_done

tf_range:
	VMOVQ X8, DX
	BTRQ  $63, DX
	CMPQ  DX, 544(SP)
	JCC   tf_overflow
	VMULSD   X12, X8, X8
	VROUNDSD $3, X8, X8, X8
	VMULSD   X9, X8, X8
	VMOVQ    X8, X10
	JMP      tf_next

tf_overflow:
	// ±inf: the next step, if any, would stop at it.
	VCVTSD2SS X8, X0, X0
	VCVTSS2SD X0, X10, X10
	ADDQ      R11, R12

chain_done:
	MOVQ      R12, done+56(FP)
	MOVL      c+44(FP), R8
	MOVL      R8, d+48(FP)
	TESTQ     R12, R12
	JZ        tf_none
	VCVTSD2SS X10, X0, X0
	VMOVSS    X0, d+48(FP)

tf_none:
	VZEROUPPER
	RET
