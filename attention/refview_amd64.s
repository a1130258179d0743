//go:build amd64 && !purego

#include "textflag.h"

// The quantized reference's kernels (refview_amd64.go): sixteen lanes a
// step, the codes of a step 32 contiguous bytes at DX (refview.go's
// layout), decoded without a table (no gathers: they are slow where the
// microcode mitigates Gather Data Sampling) into Y0 … Y3 (lanes 0-3, 4-7,
// 8-11, 12-15) as the float64 value × descale, the exact value times the
// descale rounded once, as referenceCodes's tables hold it; each product
// and each sum then rounded on its own (no FMA), lanes in Y10 … Y13.

// HALVES: the sixteen f16 of Y4 to float32, eight in Y4 and eight in Y5
// (exact, subnormals included: vcvtph2ps), then WIDEN_SCALE.
#define HALVES \
	VEXTRACTI128 $1, Y4, X5 \
	VCVTPH2PS    X5, Y5 \
	VCVTPH2PS    X4, Y4 \
	WIDEN_SCALE

// WIDEN_SCALE: the eight float32 of Y4 and of Y5 to float64 (exact), then
// times the descale in Y14 (rounded once). Clobbers Y4, Y5.
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

// DECODE_F16: the codes are f16.
#define DECODE_F16 \
	VCVTPH2PS    0(DX), Y4 \
	VCVTPH2PS    16(DX), Y5 \
	WIDEN_SCALE

// DECODE_E5M2: an e5m2 code shifted left 8 is the f16 of its value
// (the same exponent bias, infinities and NaNs).
#define DECODE_E5M2 \
	VMOVDQU      0(DX), Y4 \
	VPSLLW       $8, Y4, Y4 \
	HALVES

// DECODE_E4M3: an e4m3 code's magnitude bits shifted left 7 are the f16
// of its value / 256 (exponent bias 15 for 7: e4m3's subnormals are f16's
// subnormals times 2⁸), its sign bit to f16's, and the magnitude 0x7f
// (NaN) an f16 NaN; the descale in Y14 carries the factor 256 (an exact
// product: value × descale is still rounded once).
#define DECODE_E4M3 \
	VMOVDQU      0(DX), Y4 \
	VPAND        refMag<>(SB), Y4, Y5 \
	VPCMPEQW     refMag<>(SB), Y5, Y6 \
	VPAND        refExp<>(SB), Y6, Y6 \
	VPSLLW       $7, Y5, Y5 \
	VPOR         Y6, Y5, Y5 \
	VPSLLW       $8, Y4, Y4 \
	VPAND        refSign<>(SB), Y4, Y4 \
	VPOR         Y5, Y4, Y4 \
	HALVES

DATA refMag<>+0(SB)/8, $0x007f007f007f007f
DATA refMag<>+8(SB)/8, $0x007f007f007f007f
DATA refMag<>+16(SB)/8, $0x007f007f007f007f
DATA refMag<>+24(SB)/8, $0x007f007f007f007f
GLOBL refMag<>(SB), RODATA|NOPTR, $32

DATA refExp<>+0(SB)/8, $0x7c007c007c007c00
DATA refExp<>+8(SB)/8, $0x7c007c007c007c00
DATA refExp<>+16(SB)/8, $0x7c007c007c007c00
DATA refExp<>+24(SB)/8, $0x7c007c007c007c00
GLOBL refExp<>(SB), RODATA|NOPTR, $32

DATA refSign<>+0(SB)/8, $0x8000800080008000
DATA refSign<>+8(SB)/8, $0x8000800080008000
DATA refSign<>+16(SB)/8, $0x8000800080008000
DATA refSign<>+24(SB)/8, $0x8000800080008000
GLOBL refSign<>(SB), RODATA|NOPTR, $32

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

// DECODE_F64: values decoded before (refDecode*), sixteen float64.
#define DECODE_F64 \
	VMOVUPD      0(DX), Y0 \
	VMOVUPD      32(DX), Y1 \
	VMOVUPD      64(DX), Y2 \
	VMOVUPD      96(DX), Y3

// DOTS(decode, width): blocks blocks of sixteen dot products over d
// dimensions (d ≥ 1, blocks ≥ 1), each from +0, q[x] broadcast in Y9;
// out ← the sums. A step's codes are width bytes.
#define DOTS(decode, width) \
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
	PREFETCHT0 1024(DX) \
	decode \
	VBROADCASTSD (R10), Y9 \
	MULADD \
	ADDQ   $width, DX \
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

// DECODES(decode): steps ≥ 1 steps of sixteen codes decoded to dst.
#define DECODES(decode) \
	MOVQ    dst+0(FP), DI \
	MOVQ    codes+8(FP), DX \
	MOVQ    steps+16(FP), CX \
dec: \
	PREFETCHT0 1024(DX) \
	decode \
	VMOVUPD Y0, 0(DI) \
	VMOVUPD Y1, 32(DI) \
	VMOVUPD Y2, 64(DI) \
	VMOVUPD Y3, 96(DI) \
	ADDQ    $32, DX \
	ADDQ    $128, DI \
	DECQ    CX \
	JNZ     dec \
	VZEROUPPER \
	RET

// SUMS(decode, width): acc[c] += w[j]·value of key j's code of channel c for the
// n ≥ 1 keys j in order, skipping a weight of −∞ (bits 0xfff0…).
#define SUMS(decode, width) \
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
	PREFETCHT0 1024(DX) \
	decode \
	VBROADCASTSD (SI), Y9 \
	MULADD \
skip: \
	ADDQ    $8, SI \
	ADDQ    $width, DX \
	DECQ    CX \
	JNZ     key \
	VMOVUPD Y10, 0(DI) \
	VMOVUPD Y11, 32(DI) \
	VMOVUPD Y12, 64(DI) \
	VMOVUPD Y13, 96(DI) \
	VZEROUPPER \
	RET

// func refDotsE4M3(out, q *float64, d int, codes *uint16, blocks int, scale float64)
TEXT ·refDotsE4M3(SB), NOSPLIT, $0-48
	VBROADCASTSD scale+40(FP), Y14
	DOTS(DECODE_E4M3, 32)

// func refDecodeE4M3(dst *float64, codes *uint16, steps int, scale float64)
TEXT ·refDecodeE4M3(SB), NOSPLIT, $0-32
	VBROADCASTSD scale+24(FP), Y14
	DECODES(DECODE_E4M3)

// func refSumsE4M3(acc *[16]float64, w *float64, n int, codes *uint16, scale float64)
TEXT ·refSumsE4M3(SB), NOSPLIT, $0-40
	VBROADCASTSD scale+32(FP), Y14
	SUMS(DECODE_E4M3, 32)

// func refDotsE5M2(out, q *float64, d int, codes *uint16, blocks int, scale float64)
TEXT ·refDotsE5M2(SB), NOSPLIT, $0-48
	VBROADCASTSD scale+40(FP), Y14
	DOTS(DECODE_E5M2, 32)

// func refDecodeE5M2(dst *float64, codes *uint16, steps int, scale float64)
TEXT ·refDecodeE5M2(SB), NOSPLIT, $0-32
	VBROADCASTSD scale+24(FP), Y14
	DECODES(DECODE_E5M2)

// func refSumsE5M2(acc *[16]float64, w *float64, n int, codes *uint16, scale float64)
TEXT ·refSumsE5M2(SB), NOSPLIT, $0-40
	VBROADCASTSD scale+32(FP), Y14
	SUMS(DECODE_E5M2, 32)

// func refDotsBF16(out, q *float64, d int, codes *uint16, blocks int, scale float64)
TEXT ·refDotsBF16(SB), NOSPLIT, $0-48
	VBROADCASTSD scale+40(FP), Y14
	DOTS(DECODE_BF16, 32)

// func refDecodeBF16(dst *float64, codes *uint16, steps int, scale float64)
TEXT ·refDecodeBF16(SB), NOSPLIT, $0-32
	VBROADCASTSD scale+24(FP), Y14
	DECODES(DECODE_BF16)

// func refSumsBF16(acc *[16]float64, w *float64, n int, codes *uint16, scale float64)
TEXT ·refSumsBF16(SB), NOSPLIT, $0-40
	VBROADCASTSD scale+32(FP), Y14
	SUMS(DECODE_BF16, 32)

// func refDotsF16(out, q *float64, d int, codes *uint16, blocks int, scale float64)
TEXT ·refDotsF16(SB), NOSPLIT, $0-48
	VBROADCASTSD scale+40(FP), Y14
	DOTS(DECODE_F16, 32)

// func refDecodeF16(dst *float64, codes *uint16, steps int, scale float64)
TEXT ·refDecodeF16(SB), NOSPLIT, $0-32
	VBROADCASTSD scale+24(FP), Y14
	DECODES(DECODE_F16)

// func refSumsF16(acc *[16]float64, w *float64, n int, codes *uint16, scale float64)
TEXT ·refSumsF16(SB), NOSPLIT, $0-40
	VBROADCASTSD scale+32(FP), Y14
	SUMS(DECODE_F16, 32)

// func refDotsF64(out, q *float64, d int, vals *float64, blocks int)
TEXT ·refDotsF64(SB), NOSPLIT, $0-40
	DOTS(DECODE_F64, 128)

// func refSumsF64(acc *[16]float64, w *float64, n int, vals *float64)
TEXT ·refSumsF64(SB), NOSPLIT, $0-32
	SUMS(DECODE_F64, 128)

// TR8 transposes, in each 128-bit lane, the 8×8 matrix of 16-bit codes
// whose rows are Y0–Y7, leaving row x of the transpose in Y(8+x). It
// clobbers Y0–Y7.
#define TR8 \
	VPUNPCKLWD  Y1, Y0, Y8 \
	VPUNPCKHWD  Y1, Y0, Y9 \
	VPUNPCKLWD  Y3, Y2, Y10 \
	VPUNPCKHWD  Y3, Y2, Y11 \
	VPUNPCKLWD  Y5, Y4, Y12 \
	VPUNPCKHWD  Y5, Y4, Y13 \
	VPUNPCKLWD  Y7, Y6, Y14 \
	VPUNPCKHWD  Y7, Y6, Y15 \
	VPUNPCKLDQ  Y10, Y8, Y0 \
	VPUNPCKHDQ  Y10, Y8, Y1 \
	VPUNPCKLDQ  Y11, Y9, Y2 \
	VPUNPCKHDQ  Y11, Y9, Y3 \
	VPUNPCKLDQ  Y14, Y12, Y4 \
	VPUNPCKHDQ  Y14, Y12, Y5 \
	VPUNPCKLDQ  Y15, Y13, Y6 \
	VPUNPCKHDQ  Y15, Y13, Y7 \
	VPUNPCKLQDQ Y4, Y0, Y8 \
	VPUNPCKHQDQ Y4, Y0, Y9 \
	VPUNPCKLQDQ Y5, Y1, Y10 \
	VPUNPCKHQDQ Y5, Y1, Y11 \
	VPUNPCKLQDQ Y6, Y2, Y12 \
	VPUNPCKHQDQ Y6, Y2, Y13 \
	VPUNPCKLQDQ Y7, Y3, Y14 \
	VPUNPCKHQDQ Y7, Y3, Y15

// TR_LOAD(off) loads Y0–Y7 for TR8: Y_l's low lane the 8 codes at off
// bytes into row l of the tile (SI, rows DX bytes apart, R8 = 3×DX, R9 the
// address of row 4), its high lane those of row l+8 (R10 the address of
// row 8, R11 of row 12).
#define TR_LOAD(off) \
	TR_LOAD4(off, SI, R10, X0, Y0, X1, Y1, X2, Y2, X3, Y3) \
	TR_LOAD4(off, R9, R11, X4, Y4, X5, Y5, X6, Y6, X7, Y7)

// TR_LOAD4 is TR_LOAD's four rows from lo (low lanes) and hi (high lanes),
// rows DX bytes apart, into the registers named (each X then its Y).
#define TR_LOAD4(off, lo, hi, x0, y0, x1, y1, x2, y2, x3, y3) \
	VMOVDQU     off(lo), x0 \
	VINSERTI128 $1, off(hi), y0, y0 \
	VMOVDQU     off(lo)(DX*1), x1 \
	VINSERTI128 $1, off(hi)(DX*1), y1, y1 \
	VMOVDQU     off(lo)(DX*2), x2 \
	VINSERTI128 $1, off(hi)(DX*2), y2, y2 \
	VMOVDQU     off(lo)(R8*1), x3 \
	VINSERTI128 $1, off(hi)(R8*1), y3, y3

// TR_STORE(off) stores Y8–Y15, the transpose's rows, 32 bytes each from
// off(DI).
#define TR_STORE(off) \
	VMOVDQU Y8, (off+0)(DI) \
	VMOVDQU Y9, (off+32)(DI) \
	VMOVDQU Y10, (off+64)(DI) \
	VMOVDQU Y11, (off+96)(DI) \
	VMOVDQU Y12, (off+128)(DI) \
	VMOVDQU Y13, (off+160)(DI) \
	VMOVDQU Y14, (off+192)(DI) \
	VMOVDQU Y15, (off+224)(DI)

// func transpose16(dst, src *uint16, stride, tiles int)
//
// tiles 16×16 transposes of 16-bit codes: tile j's row l is the 16 codes
// at src + 16j + l·stride (codes), and row x of its transpose goes to the
// 16 codes at dst + 256j + 16x.
TEXT ·transpose16(SB), NOSPLIT, $0-32
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ stride+16(FP), DX
	MOVQ tiles+24(FP), CX
	SHLQ $1, DX
	LEAQ (DX)(DX*2), R8
	TESTQ CX, CX
	JZ   tr_done

tr_loop:
	LEAQ (SI)(DX*4), R9
	LEAQ (R9)(DX*4), R10
	LEAQ (R10)(DX*4), R11
	TR_LOAD(0)
	TR8
	TR_STORE(0)
	TR_LOAD(16)
	TR8
	TR_STORE(256)
	ADDQ $32, SI
	ADDQ $512, DI
	DECQ CX
	JNZ  tr_loop

tr_done:
	VZEROUPPER
	RET
