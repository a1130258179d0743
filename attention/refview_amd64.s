//go:build amd64 && !purego

#include "textflag.h"

// The quantized reference's kernels (refview_amd64.go): sixteen lanes a
// step, the codes of a step 32 contiguous bytes at DX (refview.go's
// layout), decoded into Y0 … Y3 (lanes 0-3, 4-7, 8-11, 12-15) as the
// float64 value × descale, each product and each sum then rounded on its
// own (no FMA), lanes in Y10 … Y13.

// DECODE_TABLE: the values from the table at R9 (value × descale), by
// gathers. Clobbers Y4-Y8.
#define DECODE_TABLE \
	VPMOVZXWD    0(DX), X4 \
	VPMOVZXWD    8(DX), X5 \
	VPMOVZXWD    16(DX), X6 \
	VPMOVZXWD    24(DX), X7 \
	VPXOR        Y0, Y0, Y0 \
	VPCMPEQD     Y8, Y8, Y8 \
	VGATHERDPD   Y8, (R9)(X4*8), Y0 \
	VPXOR        Y1, Y1, Y1 \
	VPCMPEQD     Y8, Y8, Y8 \
	VGATHERDPD   Y8, (R9)(X5*8), Y1 \
	VPXOR        Y2, Y2, Y2 \
	VPCMPEQD     Y8, Y8, Y8 \
	VGATHERDPD   Y8, (R9)(X6*8), Y2 \
	VPXOR        Y3, Y3, Y3 \
	VPCMPEQD     Y8, Y8, Y8 \
	VGATHERDPD   Y8, (R9)(X7*8), Y3

// WIDEN_SCALE: the eight float32 of Y4 and of Y5 to float64 (exact), then
// times the descale in Y14 (rounded). Clobbers Y4, Y5.
#define WIDEN_SCALE \
	VCVTPS2PD    X4, Y0 \
	VEXTRACTI128 $1, Y4, X4 \
	VCVTPS2PD    X4, Y1 \
	VCVTPS2PD    X5, Y2 \
	VEXTRACTI128 $1, Y5, X5 \
	VCVTPS2PD    X5, Y3 \
	VMULPD       Y14, Y0, Y0 \
	VMULPD       Y14, Y1, Y1 \
	VMULPD       Y14, Y2, Y2 \
	VMULPD       Y14, Y3, Y3

// DECODE_BF16: a bf16 code shifted left 16 is the float32 of its value.
#define DECODE_BF16 \
	VPMOVZXWD    0(DX), Y4 \
	VPMOVZXWD    16(DX), Y5 \
	VPSLLD       $16, Y4, Y4 \
	VPSLLD       $16, Y5, Y5 \
	WIDEN_SCALE

// DECODE_F16: vcvtph2ps gives the float32 of an f16 value (exact,
// subnormals included).
#define DECODE_F16 \
	VCVTPH2PS    0(DX), Y4 \
	VCVTPH2PS    16(DX), Y5 \
	WIDEN_SCALE

// MULADD: Y10 … Y13 += Y9 · (Y0 … Y3), each product rounded, then each sum.
#define MULADD \
	VMULPD Y9, Y0, Y0 \
	VMULPD Y9, Y1, Y1 \
	VMULPD Y9, Y2, Y2 \
	VMULPD Y9, Y3, Y3 \
	VADDPD Y0, Y10, Y10 \
	VADDPD Y1, Y11, Y11 \
	VADDPD Y2, Y12, Y12 \
	VADDPD Y3, Y13, Y13

// DOTS(decode): blocks blocks of sixteen dot products over d dimensions
// (d ≥ 1, blocks ≥ 1), each from +0, q[x] broadcast in Y9; out ← the sums.
#define DOTS(decode) \
	MOVQ   out+0(FP), R8 \
	MOVQ   q+8(FP), SI \
	MOVQ   d+16(FP), CX \
	MOVQ   codes+24(FP), DX \
	MOVQ   blocks+32(FP), BX \
block: \
	VXORPD Y10, Y10, Y10 \
	VXORPD Y11, Y11, Y11 \
	VXORPD Y12, Y12, Y12 \
	VXORPD Y13, Y13, Y13 \
	MOVQ   SI, R10 \
	MOVQ   CX, R11 \
step: \
	decode \
	VBROADCASTSD (R10), Y9 \
	MULADD \
	ADDQ   $32, DX \
	ADDQ   $8, R10 \
	DECQ   R11 \
	JNZ    step \
	VMOVUPD Y10, 0(R8) \
	VMOVUPD Y11, 32(R8) \
	VMOVUPD Y12, 64(R8) \
	VMOVUPD Y13, 96(R8) \
	ADDQ   $128, R8 \
	DECQ   BX \
	JNZ    block \
	VZEROUPPER \
	RET

// SUMS(decode): acc[c] += w[j]·value of key j's code of channel c for the
// n ≥ 1 keys j in order, skipping a weight of −∞ (bits 0xfff0…).
#define SUMS(decode) \
	MOVQ    acc+0(FP), DI \
	MOVQ    w+8(FP), SI \
	MOVQ    n+16(FP), CX \
	MOVQ    codes+24(FP), DX \
	VMOVUPD 0(DI), Y10 \
	VMOVUPD 32(DI), Y11 \
	VMOVUPD 64(DI), Y12 \
	VMOVUPD 96(DI), Y13 \
	MOVQ    $0xfff0000000000000, AX \
key: \
	MOVQ    (SI), BX \
	CMPQ    BX, AX \
	JEQ     skip \
	decode \
	VBROADCASTSD (SI), Y9 \
	MULADD \
skip: \
	ADDQ    $8, SI \
	ADDQ    $32, DX \
	DECQ    CX \
	JNZ     key \
	VMOVUPD Y10, 0(DI) \
	VMOVUPD Y11, 32(DI) \
	VMOVUPD Y12, 64(DI) \
	VMOVUPD Y13, 96(DI) \
	VZEROUPPER \
	RET

// func refDotsTable(out, q *float64, d int, codes *uint16, blocks int, table *float64)
TEXT ·refDotsTable(SB), NOSPLIT, $0-48
	MOVQ table+40(FP), R9
	DOTS(DECODE_TABLE)

// func refDotsBF16(out, q *float64, d int, codes *uint16, blocks int, scale float64)
TEXT ·refDotsBF16(SB), NOSPLIT, $0-48
	VBROADCASTSD scale+40(FP), Y14
	DOTS(DECODE_BF16)

// func refDotsF16(out, q *float64, d int, codes *uint16, blocks int, scale float64)
TEXT ·refDotsF16(SB), NOSPLIT, $0-48
	VBROADCASTSD scale+40(FP), Y14
	DOTS(DECODE_F16)

// func refSumsTable(acc *[16]float64, w *float64, n int, codes *uint16, table *float64)
TEXT ·refSumsTable(SB), NOSPLIT, $0-40
	MOVQ table+32(FP), R9
	SUMS(DECODE_TABLE)

// func refSumsBF16(acc *[16]float64, w *float64, n int, codes *uint16, scale float64)
TEXT ·refSumsBF16(SB), NOSPLIT, $0-40
	VBROADCASTSD scale+32(FP), Y14
	SUMS(DECODE_BF16)

// func refSumsF16(acc *[16]float64, w *float64, n int, codes *uint16, scale float64)
TEXT ·refSumsF16(SB), NOSPLIT, $0-40
	VBROADCASTSD scale+32(FP), Y14
	SUMS(DECODE_F16)

// func refCPUID(eaxArg, ecxArg uint32) (eax, ebx, ecx, edx uint32)
TEXT ·refCPUID(SB), NOSPLIT, $0-24
	MOVL eaxArg+0(FP), AX
	MOVL ecxArg+4(FP), CX
	CPUID
	MOVL AX, eax+8(FP)
	MOVL BX, ebx+12(FP)
	MOVL CX, ecx+16(FP)
	MOVL DX, edx+20(FP)
	RET

// func refXgetbv() (eax, edx uint32)
TEXT ·refXgetbv(SB), NOSPLIT, $0-8
	MOVL $0, CX
	XGETBV
	MOVL AX, eax+0(FP)
	MOVL DX, edx+4(FP)
	RET
