//go:build amd64 && !purego

#include "textflag.h"

DATA lowBytes<>+0(SB)/8, $0x00ff00ff00ff00ff
GLOBL lowBytes<>(SB), RODATA|NOPTR, $8

// func packBytesAsm(dst *uint32, src *uint16, blocks int)
// Per block: 32 codes (64 bytes) in two YMM registers, each code's high
// byte cleared, then VPACKUSWB (exact: every word is below 256), which
// packs within 128-bit lanes (a0 b0 a1 b1 by quarter), and VPERMQ
// 0xD8 puts the quarters back in order: 32 bytes, the codes' low bytes.
TEXT ·packBytesAsm(SB), NOSPLIT, $0-24
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ blocks+16(FP), CX
	VPBROADCASTQ lowBytes<>(SB), Y2
	TESTQ CX, CX
	JEQ done
loop:
	VPAND (SI), Y2, Y0
	VPAND 32(SI), Y2, Y1
	VPACKUSWB Y1, Y0, Y0
	VPERMQ $0xD8, Y0, Y0
	VMOVDQU Y0, (DI)
	ADDQ $64, SI
	ADDQ $32, DI
	DECQ CX
	JNE loop
done:
	VZEROUPPER
	RET
