//go:build amd64 && !purego

#include "textflag.h"
#include "trunc_amd64.h"

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

// func fdpaPairs8(entA, entB *[1 << 16]uint64, a, b *uint8, groups int, sums *float64, exps *int32)
//
// The c-independent half of the CDNA3 fp8 group (fdpaSum with fp8Pair) for
// groups of 16 8-bit codes: entA and entB hold float64bits(value) |
// uint32(exponent) per code (a zero −126, NaN/inf expSpecial). For group
// g, exps[2g] and exps[2g+1] get the largest exponent sums e0, e1 of its
// even and odd elements, and sums[2g], sums[2g+1] the sums of their
// products truncated toward zero at 24 fraction bits below e0 and e1 (as
// float64: exact integers). When e0 or e1 is 126 or more, the sums are
// meaningless and the caller takes the reference path.
TEXT ·fdpaPairs8(SB), 0, $128-56
	MOVQ         entA+0(FP), SI
	MOVQ         entB+8(FP), CX
	MOVQ         a+16(FP), AX
	MOVQ         b+24(FP), BX
	MOVQ         groups+32(FP), R10
	MOVQ         sums+40(FP), R11
	MOVQ         exps+48(FP), R12
	VPCMPEQD     Y15, Y15, Y15
	VPSLLQ       $32, Y15, Y14
	TESTQ        R10, R10
	JZ           fdpa_done

fdpa_group:
	MOVL         $-2000, R8
	VMOVD        R8, X13
	VPBROADCASTD X13, Y13
	LEAQ         0(SP), DI
	MOVQ         $4, DX

	CMPB         ·scalarLoads(SB), $0
	JNE          fdpa_loads

fdpa_loop:
	GATHER4(VPMOVZXBD, SI, CX, 4)
	DECQ       DX
	JNZ        fdpa_loop
	JMP        fdpa_sums

fdpa_loads:
	LOADS4(MOVBLZX, SI, CX, 1)
	DECQ       DX
	JNZ        fdpa_loads

fdpa_sums:

	// even elements' sums in dword lanes 0 and 4, odd ones' in 2 and 6
	VEXTRACTI128 $1, Y13, X0
	VPMAXSD      X0, X13, X13
	VMOVD        X13, R8
	VPEXTRD      $2, X13, R9
	MOVL         R8, (R12)
	MOVL         R9, 4(R12)

	// [2^(24−e0), 2^(24−e1)] in both halves of Y7 (clamped to the
	// float64 range; out-of-range groups are the caller's)
	MOVL         $(1023+24), DX
	SUBL         R8, DX
	MOVL         $(1023+24), R13
	SUBL         R9, R13
	MOVL         $1, R8
	MOVL         $2046, R9
	CMPL         DX, R8
	CMOVLLT      R8, DX
	CMPL         DX, R9
	CMOVLGT      R9, DX
	CMPL         R13, R8
	CMOVLLT      R8, R13
	CMPL         R13, R9
	CMOVLGT      R9, R13
	SHLQ         $52, DX
	SHLQ         $52, R13
	VMOVQ        DX, X7
	VPINSRQ      $1, R13, X7, X7
	VINSERTI128  $1, X7, Y7, Y7

	VMULPD       0(SP), Y7, Y0
	VMULPD       32(SP), Y7, Y1
	VMULPD       64(SP), Y7, Y2
	VMULPD       96(SP), Y7, Y3
	VROUNDPD     $3, Y0, Y0
	VROUNDPD     $3, Y1, Y1
	VROUNDPD     $3, Y2, Y2
	VROUNDPD     $3, Y3, Y3
	VADDPD       Y1, Y0, Y0
	VADDPD       Y3, Y2, Y2
	VADDPD       Y2, Y0, Y0
	VEXTRACTF128 $1, Y0, X1
	VADDPD       X1, X0, X0
	VMOVUPD      X0, (R11)

	ADDQ         $16, R11
	ADDQ         $8, R12
	DECQ         R10
	JNZ          fdpa_group

fdpa_done:
	VZEROUPPER
	RET

// func fdpaSums16(entA, entB *[1 << 16]uint64, a, b *uint16, groups int, sums *float64, exps *int32)
//
// The c-independent half of the CDNA3 f16/bf16 group (fdpaSum without
// fp8Pair) for groups of 8 16-bit codes: entA and entB as for
// fdpaPairs8. For group g, exps[g] gets the largest exponent sum e of its
// products and sums[g] the sum of the products truncated toward zero at
// 24 fraction bits below e (as float64: an exact integer). When e is 126
// or more, the sum is meaningless and the caller takes the reference path.
TEXT ·fdpaSums16(SB), 0, $64-56
	MOVQ     entA+0(FP), SI
	MOVQ     entB+8(FP), CX
	MOVQ     a+16(FP), AX
	MOVQ     b+24(FP), BX
	MOVQ     groups+32(FP), R10
	MOVQ     sums+40(FP), R11
	MOVQ     exps+48(FP), R12
	VPCMPEQD Y15, Y15, Y15
	VPSLLQ   $32, Y15, Y14
	TESTQ    R10, R10
	JZ       s16_done

s16_group:
	MOVL         $-2000, R8
	VMOVD        R8, X13
	VPBROADCASTD X13, Y13
	LEAQ         0(SP), DI
	CMPB         ·scalarLoads(SB), $0
	JNE          s16_loads
	GATHER4(VPMOVZXWD, SI, CX, 8)
	GATHER4(VPMOVZXWD, SI, CX, 8)
	JMP          s16_sums

s16_loads:
	LOADS4(MOVWLZX, SI, CX, 2)
	LOADS4(MOVWLZX, SI, CX, 2)

s16_sums:
	// the products' exponent sums are in dword lanes 0, 2, 4 and 6
	VEXTRACTI128 $1, Y13, X0
	VPMAXSD      X0, X13, X13
	VPSHUFD      $0x4e, X13, X0
	VPMAXSD      X0, X13, X13
	VMOVD        X13, R8
	MOVL         R8, (R12)

	// 2^(24−e), clamped to the float64 range (out-of-range groups are
	// the caller's)
	MOVL         $(1023+24), DX
	SUBL         R8, DX
	MOVL         $1, R8
	MOVL         $2046, R9
	CMPL         DX, R8
	CMOVLLT      R8, DX
	CMPL         DX, R9
	CMOVLGT      R9, DX
	SHLQ         $52, DX
	VMOVQ        DX, X7
	VPBROADCASTQ X7, Y7

	VMULPD       0(SP), Y7, Y0
	VMULPD       32(SP), Y7, Y1
	VROUNDPD     $3, Y0, Y0
	VROUNDPD     $3, Y1, Y1
	VADDPD       Y1, Y0, Y0
	VEXTRACTF128 $1, Y0, X1
	VADDPD       X1, X0, X0
	VUNPCKHPD    X0, X0, X1
	VADDSD       X1, X0, X0
	VMOVSD       X0, (R11)

	ADDQ         $8, R11
	ADDQ         $4, R12
	DECQ         R10
	JNZ          s16_group

s16_done:
	VZEROUPPER
	RET

// func xf32Sums4(a, b *uint32, groups int, sums *float64, exps *int32)
//
// xf32Sums for groups whole xf32 groups of 4 float32 patterns: each
// operand truncated to TF32 (its low 13 bits cleared), exponent fields
// read as max(field, 1) (a zero or subnormal as 1); exps[g] is the largest
// sum of the two fields less 254, expSpecial when an operand's field is
// 0xff (NaN or inf), and sums[g] the sum of the products truncated toward
// zero at 24 fraction bits below 2^exps[g] (an exact integer as float64;
// meaningless when exps[g] is 126 or more).
TEXT ·xf32Sums4(SB), NOSPLIT, $0-40
	MOVQ         a+0(FP), AX
	MOVQ         b+8(FP), BX
	MOVQ         groups+16(FP), CX
	MOVQ         sums+24(FP), R11
	MOVQ         exps+32(FP), R12
	TESTQ        CX, CX
	JZ           xf_done
	MOVL         $0xffffe000, DX
	VMOVD        DX, X15
	VPBROADCASTD X15, Y15
	MOVL         $0xff, DX
	VMOVD        DX, X14
	VPBROADCASTD X14, Y14
	MOVL         $1, DX
	VMOVD        DX, X13
	VPBROADCASTD X13, Y13
	MOVL         $(5000+254), DX // expSpecial, biased
	VMOVD        DX, X12
	VPBROADCASTD X12, Y12
	MOVL         $(1023+24+254), DX
	VMOVD        DX, X11
	VPBROADCASTD X11, Y11
	MOVL         $2046, DX
	VMOVD        DX, X10
	VPBROADCASTD X10, Y10
	MOVL         $254, DX
	VMOVD        DX, X9
	VPBROADCASTD X9, Y9

	// two groups at a time, one a 128-bit lane (VPSHUFD and the
	// maxima stay within lanes)
xf_pairs:
	CMPQ         CX, $2
	JLT          xf_single
	VMOVDQU      (AX), Y0
	VMOVDQU      (BX), Y1
	VPAND        Y15, Y0, Y0
	VPAND        Y15, Y1, Y1
	VPSRLD       $23, Y0, Y2
	VPSRLD       $23, Y1, Y3
	VPAND        Y14, Y2, Y2
	VPAND        Y14, Y3, Y3
	VPCMPEQD     Y14, Y2, Y4
	VPCMPEQD     Y14, Y3, Y5
	VPOR         Y5, Y4, Y4
	VPAND        Y12, Y4, Y4
	VPMAXSD      Y13, Y2, Y2
	VPMAXSD      Y13, Y3, Y3
	VPADDD       Y3, Y2, Y2
	VPMAXSD      Y4, Y2, Y2
	VPSHUFD      $0x4e, Y2, Y3
	VPMAXSD      Y3, Y2, Y2
	VPSHUFD      $0xb1, Y2, Y3
	VPMAXSD      Y3, Y2, Y2 // lane g: e_g + 254

	VPSUBD       Y2, Y11, Y3
	VPMAXSD      Y13, Y3, Y3
	VPMINSD      Y10, Y3, Y3
	VPSLLQ       $52, Y3, Y3
	VPERMQ       $0x00, Y3, Y4 // 2^(24−e_0)
	VPERMQ       $0xaa, Y3, Y5 // 2^(24−e_1)

	VCVTPS2PD    X0, Y6
	VCVTPS2PD    X1, Y7
	VMULPD       Y7, Y6, Y6
	VMULPD       Y4, Y6, Y6
	VROUNDPD     $3, Y6, Y6
	VEXTRACTF128 $1, Y0, X0
	VEXTRACTF128 $1, Y1, X1
	VCVTPS2PD    X0, Y0
	VCVTPS2PD    X1, Y1
	VMULPD       Y1, Y0, Y0
	VMULPD       Y5, Y0, Y0
	VROUNDPD     $3, Y0, Y0
	VHADDPD      Y0, Y6, Y6 // group 0's pair sums in lanes 0, 2; group 1's in 1, 3
	VEXTRACTF128 $1, Y6, X7
	VADDPD       X7, X6, X6
	VMOVUPD      X6, (R11)

	VPSUBD       Y9, Y2, Y2
	VEXTRACTI128 $1, Y2, X3
	VPUNPCKLDQ   X3, X2, X2
	VMOVQ        X2, (R12)

	ADDQ         $32, AX
	ADDQ         $32, BX
	ADDQ         $16, R11
	ADDQ         $8, R12
	SUBQ         $2, CX
	JMP          xf_pairs

xf_single:
	TESTQ        CX, CX
	JZ           xf_done

xf_loop:
	VMOVDQU      (AX), X0
	VMOVDQU      (BX), X1
	VPAND        X15, X0, X0
	VPAND        X15, X1, X1
	VPSRLD       $23, X0, X2
	VPSRLD       $23, X1, X3
	VPAND        X14, X2, X2
	VPAND        X14, X3, X3
	VPCMPEQD     X14, X2, X4
	VPCMPEQD     X14, X3, X5
	VPOR         X5, X4, X4
	VPAND        X12, X4, X4 // 5254 where an operand is NaN or inf
	VPMAXSD      X13, X2, X2
	VPMAXSD      X13, X3, X3
	VPADDD       X3, X2, X2
	VPMAXSD      X4, X2, X2
	VPSHUFD      $0x4e, X2, X3
	VPMAXSD      X3, X2, X2
	VPSHUFD      $0xb1, X2, X3
	VPMAXSD      X3, X2, X2 // every lane: e + 254

	// 2^(24−e) as float64, its biased exponent clamped to 1..2046
	VPSUBD       X2, X11, X3
	VPMAXSD      X13, X3, X3
	VPMINSD      X10, X3, X3
	VPSLLQ       $52, X3, X3
	VPBROADCASTQ X3, Y3

	VCVTPS2PD    X0, Y0
	VCVTPS2PD    X1, Y1
	VMULPD       Y1, Y0, Y0
	VMULPD       Y3, Y0, Y0
	VROUNDPD     $3, Y0, Y0
	VEXTRACTF128 $1, Y0, X1
	VADDPD       X1, X0, X0
	VUNPCKHPD    X0, X0, X1
	VADDSD       X1, X0, X0
	VMOVSD       X0, (R11)
	VMOVD        X2, DX
	SUBL         $254, DX
	MOVL         DX, (R12)

	ADDQ         $16, AX
	ADDQ         $16, BX
	ADDQ         $8, R11
	ADDQ         $4, R12
	DECQ         CX
	JNZ          xf_loop

xf_done:
	VZEROUPPER
	RET
