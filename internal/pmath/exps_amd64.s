//go:build amd64 && !purego

#include "textflag.h"

// Constants of Exp, each in four lanes.
#define CONST4(name, bits) \
	DATA name<>+0(SB)/8, $bits \
	DATA name<>+8(SB)/8, $bits \
	DATA name<>+16(SB)/8, $bits \
	DATA name<>+24(SB)/8, $bits \
	GLOBL name<>(SB), RODATA|NOPTR, $32

CONST4(absmask, 0x7fffffffffffffff)
CONST4(fastmin, 0x3c90000000000000) // 2^-54
CONST4(fastmax, 0x4086200000000000) // 708
CONST4(log2e, 0x3ff71547652b82fe)
CONST4(half, 0x3fe0000000000000)
CONST4(lnhi, 0x3fe62e42fee00000)
CONST4(lnlo, 0x3dea39ef35793c76)
CONST4(one, 0x3ff0000000000000)
CONST4(magic, 0x4338000000000000) // 1.5·2^52: k + magic has k in its low bits
CONST4(d13, 0x402a000000000000)
CONST4(d12, 0x4028000000000000)
CONST4(d11, 0x4026000000000000)
CONST4(d10, 0x4024000000000000)
CONST4(d9, 0x4022000000000000)
CONST4(d7, 0x401c000000000000)
CONST4(d6, 0x4018000000000000)
CONST4(d5, 0x4014000000000000)
CONST4(d3, 0x4008000000000000)
CONST4(q8, 0x3fc0000000000000) // 1/8
CONST4(q4, 0x3fd0000000000000) // 1/4
CONST4(q2, 0x3fe0000000000000) // 1/2

// FASTLANES(v) ands into Y12 the lanes of v with 2^-54 ≤ |v| ≤ 708 (false
// for NaN: ordered compares). It clobbers Y4 and Y5.
#define FASTLANES(v) \
	VANDPD absmask<>(SB), v, Y4 \
	VCMPPD $0x1D, fastmin<>(SB), Y4, Y5 \
	VCMPPD $0x12, fastmax<>(SB), Y4, Y4 \
	VANDPD Y5, Y4, Y4 \
	VANDPD Y4, Y12, Y12

// REDUCE(x, k) turns x into r = (x − k·lnHi) − k·lnLo and leaves k =
// Floor(x·log2e + 0.5) in k, each operation rounded as Exp rounds it. It
// clobbers Y12.
#define REDUCE(x, k) \
	VMULPD   log2e<>(SB), x, k \
	VADDPD   half<>(SB), k, k \
	VROUNDPD $9, k, k \
	VMULPD   lnhi<>(SB), k, Y12 \
	VSUBPD   Y12, x, x \
	VMULPD   lnlo<>(SB), k, Y12 \
	VSUBPD   Y12, x, x

// DIVSTEP(d) is one step s = 1 + (r·s)/d of Exp's Horner loop on the four
// vectors (r in Y0-Y3, s in Y8-Y11).
#define DIVSTEP(d) \
	VMULPD Y0, Y8, Y8 \
	VMULPD Y1, Y9, Y9 \
	VMULPD Y2, Y10, Y10 \
	VMULPD Y3, Y11, Y11 \
	VDIVPD d<>(SB), Y8, Y8 \
	VDIVPD d<>(SB), Y9, Y9 \
	VDIVPD d<>(SB), Y10, Y10 \
	VDIVPD d<>(SB), Y11, Y11 \
	VADDPD Y15, Y8, Y8 \
	VADDPD Y15, Y9, Y9 \
	VADDPD Y15, Y10, Y10 \
	VADDPD Y15, Y11, Y11

// MULSTEP(q) is the step of a power-of-two d: (r·s)/d is (r·s)·(1/d)
// exactly (both are the one rounding of the same real number), and for
// d = 1 the quotient is r·s itself.
#define MULSTEP(q) \
	VMULPD Y0, Y8, Y8 \
	VMULPD Y1, Y9, Y9 \
	VMULPD Y2, Y10, Y10 \
	VMULPD Y3, Y11, Y11 \
	VMULPD q<>(SB), Y8, Y8 \
	VMULPD q<>(SB), Y9, Y9 \
	VMULPD q<>(SB), Y10, Y10 \
	VMULPD q<>(SB), Y11, Y11 \
	VADDPD Y15, Y8, Y8 \
	VADDPD Y15, Y9, Y9 \
	VADDPD Y15, Y10, Y10 \
	VADDPD Y15, Y11, Y11

// SCALE(k, s) adds the integer k (|k| ≤ 1021) to the exponent field of s:
// Ldexp(s, k) where the result is normal.
#define SCALE(k, s) \
	VADDPD magic<>(SB), k, k \
	VPSLLQ $52, k, k \
	VPADDQ k, s, s

// func expBlocks(dst, x *float64, blocks int) int
//
// Exp of blocks × 16 elements, 16 at a time (four vectors of four lanes:
// four independent chains of divisions in flight), in Exp's operations:
// k = Floor(x·log2e + 0.5), r = (x − k·lnHi) − k·lnLo, s = 1 + r/13, then
// s = 1 + (r·s)/d for d = 12 … 1, and s·2^k. No FMA. It stops before a
// block with a lane outside 2^-54 ≤ |x| ≤ 708 (or NaN) and returns the
// blocks done.
TEXT ·expBlocks(SB), NOSPLIT, $0-32
	MOVQ dst+0(FP), DI
	MOVQ x+8(FP), SI
	MOVQ blocks+16(FP), CX
	XORQ AX, AX
	VMOVUPD one<>(SB), Y15

loop:
	CMPQ AX, CX
	JGE  done
	VMOVUPD 0(SI), Y0
	VMOVUPD 32(SI), Y1
	VMOVUPD 64(SI), Y2
	VMOVUPD 96(SI), Y3
	VPCMPEQQ Y12, Y12, Y12 // all lanes fast so far
	FASTLANES(Y0)
	FASTLANES(Y1)
	FASTLANES(Y2)
	FASTLANES(Y3)
	VMOVMSKPD Y12, BX
	CMPL      BX, $15
	JNE       done

	REDUCE(Y0, Y4)
	REDUCE(Y1, Y5)
	REDUCE(Y2, Y6)
	REDUCE(Y3, Y7)

	// s = 1 + r/13 (Exp's r·1 is r).
	VDIVPD d13<>(SB), Y0, Y8
	VDIVPD d13<>(SB), Y1, Y9
	VDIVPD d13<>(SB), Y2, Y10
	VDIVPD d13<>(SB), Y3, Y11
	VADDPD Y15, Y8, Y8
	VADDPD Y15, Y9, Y9
	VADDPD Y15, Y10, Y10
	VADDPD Y15, Y11, Y11
	DIVSTEP(d12)
	DIVSTEP(d11)
	DIVSTEP(d10)
	DIVSTEP(d9)
	MULSTEP(q8)
	DIVSTEP(d7)
	DIVSTEP(d6)
	DIVSTEP(d5)
	MULSTEP(q4)
	DIVSTEP(d3)
	MULSTEP(q2)

	// d = 1: s = 1 + r·s.
	VMULPD Y0, Y8, Y8
	VMULPD Y1, Y9, Y9
	VMULPD Y2, Y10, Y10
	VMULPD Y3, Y11, Y11
	VADDPD Y15, Y8, Y8
	VADDPD Y15, Y9, Y9
	VADDPD Y15, Y10, Y10
	VADDPD Y15, Y11, Y11

	SCALE(Y4, Y8)
	SCALE(Y5, Y9)
	SCALE(Y6, Y10)
	SCALE(Y7, Y11)
	VMOVUPD Y8, 0(DI)
	VMOVUPD Y9, 32(DI)
	VMOVUPD Y10, 64(DI)
	VMOVUPD Y11, 96(DI)

	ADDQ $128, SI
	ADDQ $128, DI
	INCQ AX
	JMP  loop

done:
	VZEROUPPER
	MOVQ AX, ret+24(FP)
	RET

