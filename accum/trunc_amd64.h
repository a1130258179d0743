// Macros shared by the AVX2 kernels (step_amd64.s, chain_amd64.s,
// scaled_amd64.s, amd_amd64.s): the parts of a step that are the same
// instructions in each, so that each is written once.

// GATHER4(ext, ta, tb, stride) forms four products of a step: it widens
// four codes of a at (AX) and of b at (BX) with ext (VPMOVZXBD for bytes,
// VPMOVZXWD for 16-bit codes), gathers their packed 64-bit entries from the
// tables at ta and tb (Y15 all ones: the gather mask) into Y4 and Y5, and
// ends with PRODUCTS4(stride, stride). It clobbers Y0-Y6.
#define GATHER4(ext, ta, tb, stride) \
	ext        (AX), X0 \
	ext        (BX), X1 \
	VMOVDQU    Y15, Y2 \
	VMOVDQU    Y15, Y3 \
	VPXOR      Y4, Y4, Y4 \
	VPXOR      Y5, Y5, Y5 \
	VPGATHERDQ Y2, (ta)(X0*8), Y4 \
	VPGATHERDQ Y3, (tb)(X1*8), Y5 \
	PRODUCTS4(stride, stride)

// LOADS4(ext, ta, tb, size) is GATHER4 with scalar loads in place of the
// gathers (the kernels' choice where cpufeat.SlowGather): ext is the
// scalar widening (MOVBLZX for bytes, MOVWLZX for 16-bit codes), size the
// bytes of a code. The same entries reach Y4 and Y5, so the same
// products. It clobbers R8 and Y0-Y6.
#define LOADS4(ext, ta, tb, size) \
	ENTRIES4(ext, AX, ta, size, Y4, X4, X2) \
	ENTRIES4(ext, BX, tb, size, Y5, X5, X3) \
	PRODUCTS4(4*size, 4*size)

// ENTRIES4(ext, p, t, size, y, x, xt) loads into y (x its low half) the
// entries in the table at t of the four codes of size bytes at (p), one
// scalar load each; xt is clobbered, and R8.
#define ENTRIES4(ext, p, t, size, y, x, xt) \
	ext         0(p), R8 \
	VMOVQ       (t)(R8*8), x \
	ext         (size)(p), R8 \
	VPINSRQ     $1, (t)(R8*8), x, x \
	ext         (2*size)(p), R8 \
	VMOVQ       (t)(R8*8), xt \
	ext         (3*size)(p), R8 \
	VPINSRQ     $1, (t)(R8*8), xt, xt \
	VINSERTI128 $1, xt, y, y

// PRODUCTS4(sa, sb) finishes four products from their entries in Y4 (of
// a) and Y5 (of b): it adds the entries' exponent dwords (Y6) into the
// running maxima Y13, multiplies their value fields (the mask Y14) into
// four float64 products stored at (DI), and advances AX by sa bytes, BX
// by sb and DI by 32. The LG kernels, whose first operand is entries
// (8 bytes each) and second 16-bit codes, pass 32 and 8.
#define PRODUCTS4(sa, sb) \
	VPADDD     Y4, Y5, Y6 \
	VPMAXSD    Y6, Y13, Y13 \
	VANDPD     Y14, Y4, Y4 \
	VANDPD     Y14, Y5, Y5 \
	VMULPD     Y4, Y5, Y4 \
	VMOVUPD    Y4, (DI) \
	ADDQ       $(sa), AX \
	ADDQ       $(sb), BX \
	ADDQ       $32, DI

// TRUNC_SUM(acc, n) adds to X8 (c's truncated term) the n products stored
// from 0(SP) (n a multiple of 4), each scaled by the power of two in X7
// and truncated toward zero (VROUNDPD $3), in two running vector sums (Y8
// and acc), and leaves the whole sum in X8. The terms are integers below
// 2^53 and so is every partial sum: the order of the additions does not
// change the result. It clobbers Y0, Y1, Y7, acc, DI and DX.
#define TRUNC_SUM(acc, n) \
	VBROADCASTSD X7, Y7 \
	VXORPD       acc, acc, acc \
	LEAQ         0(SP), DI \
	MOVQ         n, DX \
	SHRQ         $3, DX \
	JZ           tsum_tail \
tsum_loop: \
	VMULPD       (DI), Y7, Y0 \
	VMULPD       32(DI), Y7, Y1 \
	VROUNDPD     $3, Y0, Y0 \
	VROUNDPD     $3, Y1, Y1 \
	VADDPD       Y0, Y8, Y8 \
	VADDPD       Y1, acc, acc \
	ADDQ         $64, DI \
	DECQ         DX \
	JNZ          tsum_loop \
tsum_tail: \
	TESTQ        $4, n \
	JZ           tsum_done \
	VMULPD       (DI), Y7, Y0 \
	VROUNDPD     $3, Y0, Y0 \
	VADDPD       Y0, Y8, Y8 \
tsum_done: \
	VADDPD       acc, Y8, Y8 \
	VEXTRACTF128 $1, Y8, X0 \
	VADDPD       X0, X8, X8 \
	VUNPCKHPD    X8, X8, X0 \
	VADDSD       X0, X8, X8
