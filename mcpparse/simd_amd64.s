//go:build amd64 && !purego

#include "textflag.h"

// The bytes indexSpecialAVX2 looks for, each repeated over 32 bytes.
DATA quoteBytes<>+0(SB)/8, $0x2222222222222222
DATA quoteBytes<>+8(SB)/8, $0x2222222222222222
DATA quoteBytes<>+16(SB)/8, $0x2222222222222222
DATA quoteBytes<>+24(SB)/8, $0x2222222222222222
GLOBL quoteBytes<>(SB), RODATA|NOPTR, $32

DATA backslashBytes<>+0(SB)/8, $0x5c5c5c5c5c5c5c5c
DATA backslashBytes<>+8(SB)/8, $0x5c5c5c5c5c5c5c5c
DATA backslashBytes<>+16(SB)/8, $0x5c5c5c5c5c5c5c5c
DATA backslashBytes<>+24(SB)/8, $0x5c5c5c5c5c5c5c5c
GLOBL backslashBytes<>(SB), RODATA|NOPTR, $32

DATA controlMax<>+0(SB)/8, $0x1f1f1f1f1f1f1f1f
DATA controlMax<>+8(SB)/8, $0x1f1f1f1f1f1f1f1f
DATA controlMax<>+16(SB)/8, $0x1f1f1f1f1f1f1f1f
DATA controlMax<>+24(SB)/8, $0x1f1f1f1f1f1f1f1f
GLOBL controlMax<>(SB), RODATA|NOPTR, $32

// func indexSpecialAVX2(b []byte) int
//
// The index of the first byte of b that is '"', '\\' or below 0x20, or
// len(b); len(b) must be at least 32. 32 bytes a step; the last step
// reloads the final 32 bytes (overlapping bytes already found plain).
// Requires AVX2.
TEXT ·indexSpecialAVX2(SB), NOSPLIT, $0-32
	MOVQ b_base+0(FP), SI
	MOVQ b_len+8(FP), CX
	MOVQ SI, DI                 // start of b
	LEAQ -32(SI)(CX*1), DX      // start of the last 32 bytes
	VMOVDQU quoteBytes<>(SB), Y1
	VMOVDQU backslashBytes<>(SB), Y2
	VMOVDQU controlMax<>(SB), Y3

loop:
	CMPQ SI, DX
	JA   last
	VMOVDQU (SI), Y0
	VPCMPEQB Y1, Y0, Y4          // '"'
	VPCMPEQB Y2, Y0, Y5          // '\\'
	VPMINUB  Y3, Y0, Y6
	VPCMPEQB Y6, Y0, Y6          // x == min(x, 0x1f): below 0x20
	VPOR     Y5, Y4, Y4
	VPOR     Y6, Y4, Y4
	VPMOVMSKB Y4, AX
	TESTL AX, AX
	JNZ  found
	ADDQ $32, SI
	JMP  loop

last:
	LEAQ (DI)(CX*1), BX          // end of b
	CMPQ SI, BX
	JEQ  none
	MOVQ DX, SI
	VMOVDQU (SI), Y0
	VPCMPEQB Y1, Y0, Y4
	VPCMPEQB Y2, Y0, Y5
	VPMINUB  Y3, Y0, Y6
	VPCMPEQB Y6, Y0, Y6
	VPOR     Y5, Y4, Y4
	VPOR     Y6, Y4, Y4
	VPMOVMSKB Y4, AX
	TESTL AX, AX
	JNZ  found

none:
	MOVQ CX, ret+24(FP)
	VZEROUPPER
	RET

found:
	BSFL AX, AX
	SUBQ DI, SI
	ADDQ SI, AX
	MOVQ AX, ret+24(FP)
	VZEROUPPER
	RET
