//go:build amd64 && !purego

#include "textflag.h"

// func encodeVecAsm(dst *uint16, stride int, src *float32, n int, scale float32, div int, vp *vecParams) (done int)
//
// Eight lanes at a time, the operations of encodeLoop for a normal float32
// quotient b (bits), with eb its biased exponent:
//
//	m     = b&0x7fffff | 0x800000, eb = b>>23 & 0xff
//	teb   = max(eb, emin+127)
//	shift = 23 − mbits + (teb − eb)          (VPSRLVD gives 0 for counts ≥ 32,
//	q     = (m + 2^(shift−1) − 1 + (m>>shift)&1) >> shift      as shift < 32 guards)
//	code  = (teb − (emin+127))<<mbits + q
//	code  = over                     if eb > emax+127 or code > maxCode
//	sign  = (b >> (32−CodeBits)) & signBit, cleared when code = 0 and the format has no −0
//
// A zero or a float32 subnormal b (eb = 0) takes the same operations,
// read as (0x800000 | fraction) × 2^−150: shift is then at least 32 for
// every format of the table (emin + 127 ≥ 100), so q = 0 and the code is
// a zero, with the sign the format gives its zeros, which is what encode
// gives both (for a subnormal it rounds a value below 2^−126, far under
// half the smallest subnormal code, to zero). A vector with any lane
// whose b & mask is above 0x7f7fffff unsigned (inf or NaN; with mask all
// ones, any negative input of an unsigned format) stops the loop before
// it. The offsets into vp are the vp* indices of encvec.go times 32.
//
// The codes go to dst[i·stride]: 16 bytes at once for stride 1, a VPEXTRW
// a lane otherwise. Each vector prefetches the source 1 KiB ahead (a
// cache's K and V stream from memory; a hint, which never faults past the
// end): NewKV e4m3 about 12 % less time on one core.
//
// Registers: DI dst, R9 stride in bytes, R10 3×R9, SI src, CX elements
// left, DX vp, AX done, R8 div, R11 not −0;
// Y15 mask, Y14 emin+127, Y11 ones, Y10 0x7fffff, Y5 scale, X12 mbits,
// X13 32−CodeBits.
TEXT ·encodeVecAsm(SB), NOSPLIT, $0-64
	MOVQ dst+0(FP), DI
	MOVQ stride+8(FP), R9
	SHLQ $1, R9
	LEAQ (R9)(R9*2), R10
	MOVQ src+16(FP), SI
	MOVQ n+24(FP), CX
	MOVQ div+40(FP), R8
	MOVQ vp+48(FP), DX
	XORQ AX, AX
	VBROADCASTSS scale+32(FP), Y5
	VMOVDQU 0(DX), Y15
	VMOVDQU 32(DX), Y14
	VMOVDQU 384(DX), Y11
	VMOVDQU 352(DX), Y10
	VMOVD   416(DX), X12
	VMOVD   448(DX), X13
	MOVL    192(DX), R11 // all ones: the format has no −0

loop:
	CMPQ CX, $8
	JLT  ret
	PREFETCHT0 1024(SI)
	VMOVDQU (SI), Y0
	TESTQ   R8, R8
	JZ      nodiv
	VDIVPS  Y5, Y0, Y0

nodiv:
	// Special lanes: t = b & mask above 0x7f7fffff unsigned, that is
	// t + 0x80000000 (its top bit flipped) > 0xff7fffff signed.
	VPAND    Y15, Y0, Y1
	VPADDD   320(DX), Y1, Y1
	VPCMPGTD 256(DX), Y1, Y1
	VPTEST   Y1, Y1
	JNZ      ret

	VPSLLD   $1, Y0, Y2
	VPSRLD   $24, Y2, Y2     // eb
	VPAND    Y10, Y0, Y3
	VPOR     288(DX), Y3, Y3 // m
	VPMAXSD  Y14, Y2, Y4     // teb
	VPSUBD   Y2, Y4, Y6
	VPADDD   224(DX), Y6, Y6 // shift
	VPSRLVD  Y6, Y3, Y7
	VPAND    Y11, Y7, Y7     // (m >> shift) & 1
	VPADDD   Y7, Y3, Y7
	VPSUBD   Y11, Y6, Y8
	VPSLLVD  Y8, Y11, Y8     // 2^(shift−1)
	VPADDD   Y8, Y7, Y7
	VPSUBD   Y11, Y7, Y7
	VPSRLVD  Y6, Y7, Y7      // q
	VPSUBD   Y14, Y4, Y4
	VPSLLD   X12, Y4, Y4
	VPADDD   Y7, Y4, Y4      // code
	VPCMPGTD 64(DX), Y2, Y2  // eb > emax+127
	VPCMPGTD 96(DX), Y4, Y6  // code > maxCode
	VPOR     Y6, Y2, Y2
	VPBLENDVB Y2, 128(DX), Y4, Y4 // over where either

	VPSRLD   X13, Y0, Y6
	VPAND    160(DX), Y6, Y6 // sign
	TESTQ    R11, R11
	JZ       signed0
	VPXOR    Y7, Y7, Y7
	VPCMPEQD Y7, Y4, Y7
	VPANDN   Y6, Y7, Y6      // code 0 of a format without −0: no sign

signed0:
	VPOR     Y6, Y4, Y4

	VEXTRACTI128 $1, Y4, X6
	VPACKUSDW    X6, X4, X4
	CMPQ         R9, $2
	JNE          strided
	VMOVDQU      X4, (DI)
	ADDQ         $16, DI
	JMP          next

strided:
	VPEXTRW $0, X4, (DI)
	VPEXTRW $1, X4, (DI)(R9*1)
	VPEXTRW $2, X4, (DI)(R9*2)
	VPEXTRW $3, X4, (DI)(R10*1)
	LEAQ    (DI)(R9*4), DI
	VPEXTRW $4, X4, (DI)
	VPEXTRW $5, X4, (DI)(R9*1)
	VPEXTRW $6, X4, (DI)(R9*2)
	VPEXTRW $7, X4, (DI)(R10*1)
	LEAQ    (DI)(R9*4), DI

next:
	ADDQ $32, SI
	SUBQ $8, CX
	ADDQ $8, AX
	JMP  loop

ret:
	VZEROUPPER
	MOVQ AX, done+56(FP)
	RET

// func encodeBF16Asm(dst *uint16, stride int, src *float32, n int, scale float32, div int) (done int)
//
// BF16FromFloat32 of src[i]/scale (div 1) or src[i] (div 0), eight lanes at
// a time, to dst[i·stride]: (b + 0x7fff + (b>>16)&1) >> 16, stopping before
// the first vector holding a NaN quotient (whose code keeps its payload:
// encodeBF16 converts it). The stores are encodeVecAsm's.
TEXT ·encodeBF16Asm(SB), NOSPLIT, $0-56
	MOVQ dst+0(FP), DI
	MOVQ stride+8(FP), R9
	SHLQ $1, R9
	LEAQ (R9)(R9*2), R10
	MOVQ src+16(FP), SI
	MOVQ n+24(FP), CX
	MOVQ div+40(FP), R8
	XORQ AX, AX
	VBROADCASTSS scale+32(FP), Y5
	MOVL $0x7fffffff, BX
	VMOVD BX, X15
	VPBROADCASTD X15, Y15
	MOVL $0x7f800000, BX
	VMOVD BX, X14
	VPBROADCASTD X14, Y14
	MOVL $1, BX
	VMOVD BX, X13
	VPBROADCASTD X13, Y13
	MOVL $0x7fff, BX
	VMOVD BX, X12
	VPBROADCASTD X12, Y12

bloop:
	CMPQ CX, $8
	JLT  bret
	PREFETCHT0 1024(SI)
	VMOVDQU (SI), Y0
	TESTQ   R8, R8
	JZ      bnodiv
	VDIVPS  Y5, Y0, Y0

bnodiv:
	VPAND    Y15, Y0, Y1
	VPCMPGTD Y14, Y1, Y2 // NaN lanes: |b| > 0x7f800000
	VPTEST   Y2, Y2
	JNZ      bret
	VPSRLD   $16, Y0, Y3
	VPAND    Y13, Y3, Y3
	VPADDD   Y12, Y0, Y4
	VPADDD   Y3, Y4, Y4
	VPSRLD   $16, Y4, Y4

	VEXTRACTI128 $1, Y4, X6
	VPACKUSDW    X6, X4, X4
	CMPQ         R9, $2
	JNE          bstrided
	VMOVDQU      X4, (DI)
	ADDQ         $16, DI
	JMP          bnext

bstrided:
	VPEXTRW $0, X4, (DI)
	VPEXTRW $1, X4, (DI)(R9*1)
	VPEXTRW $2, X4, (DI)(R9*2)
	VPEXTRW $3, X4, (DI)(R10*1)
	LEAQ    (DI)(R9*4), DI
	VPEXTRW $4, X4, (DI)
	VPEXTRW $5, X4, (DI)(R9*1)
	VPEXTRW $6, X4, (DI)(R9*2)
	VPEXTRW $7, X4, (DI)(R10*1)
	LEAQ    (DI)(R9*4), DI

bnext:
	ADDQ $32, SI
	SUBQ $8, CX
	ADDQ $8, AX
	JMP  bloop

bret:
	VZEROUPPER
	MOVQ AX, done+48(FP)
	RET

// func maxAbsAsm(x *float32, n int) uint32
//
// The largest of x[i]'s bits with the sign cleared over the first n&^7
// elements (0 for none): VPMAXUD, 16 then 8 at a time.
TEXT ·maxAbsAsm(SB), NOSPLIT, $0-20
	MOVQ  x+0(FP), SI
	MOVQ  n+8(FP), CX
	MOVL  $0x7fffffff, AX
	VMOVD AX, X15
	VPBROADCASTD X15, Y15
	VPXOR Y0, Y0, Y0
	VPXOR Y1, Y1, Y1

mloop16:
	CMPQ    CX, $16
	JLT     mloop8
	VPAND   (SI), Y15, Y2
	VPAND   32(SI), Y15, Y3
	VPMAXUD Y2, Y0, Y0
	VPMAXUD Y3, Y1, Y1
	ADDQ    $64, SI
	SUBQ    $16, CX
	JMP     mloop16

mloop8:
	CMPQ    CX, $8
	JLT     mreduce
	VPAND   (SI), Y15, Y2
	VPMAXUD Y2, Y0, Y0

mreduce:
	VPMAXUD      Y1, Y0, Y0
	VEXTRACTI128 $1, Y0, X1
	VPMAXUD      X1, X0, X0
	VPSHUFD      $0x4e, X0, X1
	VPMAXUD      X1, X0, X0
	VPSHUFD      $0xb1, X0, X1
	VPMAXUD      X1, X0, X0
	VMOVD        X0, AX
	VZEROUPPER
	MOVL         AX, ret+16(FP)
	RET
