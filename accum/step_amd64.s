//go:build amd64 && !purego

#include "textflag.h"
#include "trunc_amd64.h"

// The T-FDPA step of tableStep in AVX2 (see step_amd64.go). Both kernels
// take n, a multiple of 4 (the caller pads with the zero code), and an
// entry table ent: ent[x] = float64bits(value of code x) | uint32(exponent
// of x), the value's low 32 bits being zero for every code of an 8- or
// 16-bit format. They compute
//
//	emaxP = max(-2000, max_i exp(a_i) + exp(b_i))
//	emax  = max(emaxP, ce)
//	sum   = trunc(c × 2^(F−emax)) + Σ_i trunc(value(a_i) × value(b_i) × 2^(F−emax))
//
// in float64: every product is exact (≤ 22 significant bits), the scaling by
// a power of two is exact, trunc (VROUNDPD mode 3) is exact, and every term
// and partial sum is an integer below 2^53, so the float64 additions are
// exact in any order. When emaxP > 1000 (a NaN or inf operand), sum is 0 and
// emax is emaxP. The products wait in the 512-byte frame between the pass
// that finds emax and the pass that scales them.

// EMAX_AND_SUM finishes both kernels: Y13 holds the running maxima of the
// exponent sums in its even 32-bit lanes, CX the number of products stored
// at 0(SP).
#define EMAX_AND_SUM \
	VEXTRACTI128 $1, Y13, X0 \
	VPMAXSD      X0, X13, X13 \
	VPSHUFD      $0x02, X13, X0 \
	VPMAXSD      X0, X13, X13 \
	VMOVD        X13, R8 \
	CMPL         R8, $1000 \
	JGT          special \
	MOVL         ce+32(FP), R9 \
	CMPL         R8, R9 \
	CMOVLLT      R9, R8 \
	MOVL         f+36(FP), R9 \
	ADDL         $1023, R9 \
	SUBL         R8, R9 \
	SHLQ         $52, R9 \
	VMOVQ        R9, X7 \
	VMOVSD       c+40(FP), X0 \
	VMULSD       X7, X0, X0 \
	VROUNDSD     $3, X0, X0, X8 \
	TRUNC_SUM(Y9, CX) \
	VMOVSD       X8, sum+48(FP) \
	MOVL         R8, emax+56(FP) \
	VZEROUPPER \
	RET \
special: \
	MOVQ         $0, sum+48(FP) \
	MOVL         R8, emax+56(FP) \
	VZEROUPPER \
	RET

// INIT sets Y15 to all ones (the gather mask), Y14 to the value mask
// (high 32 bits of each 64-bit lane) and Y13 to the initial maxima.
#define INIT \
	VPCMPEQD     Y15, Y15, Y15 \
	VPSLLQ       $32, Y15, Y14 \
	MOVL         $-2000, R8 \
	VMOVD        R8, X13 \
	VPBROADCASTD X13, Y13

// func stepGG(ent *[1 << 16]uint64, a, b *uint16, n int, ce, f int32, c float64) (sum float64, emax int32)
//
// Both operands are codes, looked up in ent.
TEXT ·stepGG(SB), 0, $512-60
	MOVQ ent+0(FP), SI
	MOVQ a+8(FP), AX
	MOVQ b+16(FP), BX
	MOVQ n+24(FP), CX
	INIT
	LEAQ 0(SP), DI
	MOVQ CX, DX
	SHRQ $2, DX
	JZ   gg_done

	CMPB         ·scalarLoads(SB), $0
	JNE          gg_loads

gg_loop:
	GATHER4(VPMOVZXWD, SI, SI, 8)
	DECQ         DX
	JNZ          gg_loop
	JMP          gg_done

gg_loads:
	LOADS4(MOVWLZX, SI, SI, 2)
	DECQ         DX
	JNZ          gg_loads

gg_done:
	EMAX_AND_SUM

// func stepLG(ent *[1 << 16]uint64, a *uint64, b *uint16, n int, ce, f int32, c float64) (sum float64, emax int32)
//
// a holds the entries of the first operand (looked up beforehand), b codes.
TEXT ·stepLG(SB), 0, $512-60
	MOVQ ent+0(FP), SI
	MOVQ a+8(FP), AX
	MOVQ b+16(FP), BX
	MOVQ n+24(FP), CX
	INIT
	LEAQ 0(SP), DI
	MOVQ CX, DX
	SHRQ $2, DX
	JZ   lg_done

	CMPB         ·scalarLoads(SB), $0
	JNE          lg_loads

lg_loop:
	VPMOVZXWD    (BX), X1
	VMOVDQU      Y15, Y3
	VMOVDQU      (AX), Y4
	VPGATHERDQ   Y3, (SI)(X1*8), Y5
	PRODUCTS4(32, 8)
	DECQ         DX
	JNZ          lg_loop
	JMP          lg_done

lg_loads:
	VMOVDQU      (AX), Y4
	ENTRIES4(MOVWLZX, BX, SI, 2, Y5, X5, X3)
	PRODUCTS4(32, 8)
	DECQ         DX
	JNZ          lg_loads

lg_done:
	EMAX_AND_SUM

