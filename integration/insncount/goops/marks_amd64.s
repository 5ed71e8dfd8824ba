// One function per sample code (the code is an immediate of the marker
// instruction): start, and stopN closing the window as sample 64+N.

#include "textflag.h"

// nopl 0x5AFEcccc(%rax) = 0F 1F 80 lo hi FE 5A (see ../insnmark.c).

// func start()
TEXT ·start(SB), NOSPLIT, $0-0
	BYTE $0x0F; BYTE $0x1F; BYTE $0x80; BYTE $0x01; BYTE $0x00; BYTE $0xFE; BYTE $0x5A
	RET

// func stop1()
TEXT ·stop1(SB), NOSPLIT, $0-0
	BYTE $0x0F; BYTE $0x1F; BYTE $0x80; BYTE $65; BYTE $0x01; BYTE $0xFE; BYTE $0x5A
	RET

// func stop2()
TEXT ·stop2(SB), NOSPLIT, $0-0
	BYTE $0x0F; BYTE $0x1F; BYTE $0x80; BYTE $66; BYTE $0x01; BYTE $0xFE; BYTE $0x5A
	RET

// func stop3()
TEXT ·stop3(SB), NOSPLIT, $0-0
	BYTE $0x0F; BYTE $0x1F; BYTE $0x80; BYTE $67; BYTE $0x01; BYTE $0xFE; BYTE $0x5A
	RET

// func stop4()
TEXT ·stop4(SB), NOSPLIT, $0-0
	BYTE $0x0F; BYTE $0x1F; BYTE $0x80; BYTE $68; BYTE $0x01; BYTE $0xFE; BYTE $0x5A
	RET

// func stop5()
TEXT ·stop5(SB), NOSPLIT, $0-0
	BYTE $0x0F; BYTE $0x1F; BYTE $0x80; BYTE $69; BYTE $0x01; BYTE $0xFE; BYTE $0x5A
	RET

// func stop6()
TEXT ·stop6(SB), NOSPLIT, $0-0
	BYTE $0x0F; BYTE $0x1F; BYTE $0x80; BYTE $70; BYTE $0x01; BYTE $0xFE; BYTE $0x5A
	RET

// func stop7()
TEXT ·stop7(SB), NOSPLIT, $0-0
	BYTE $0x0F; BYTE $0x1F; BYTE $0x80; BYTE $71; BYTE $0x01; BYTE $0xFE; BYTE $0x5A
	RET

// func stop8()
TEXT ·stop8(SB), NOSPLIT, $0-0
	BYTE $0x0F; BYTE $0x1F; BYTE $0x80; BYTE $72; BYTE $0x01; BYTE $0xFE; BYTE $0x5A
	RET

// func stop9()
TEXT ·stop9(SB), NOSPLIT, $0-0
	BYTE $0x0F; BYTE $0x1F; BYTE $0x80; BYTE $73; BYTE $0x01; BYTE $0xFE; BYTE $0x5A
	RET

// func stop10()
TEXT ·stop10(SB), NOSPLIT, $0-0
	BYTE $0x0F; BYTE $0x1F; BYTE $0x80; BYTE $74; BYTE $0x01; BYTE $0xFE; BYTE $0x5A
	RET

// func stop11()
TEXT ·stop11(SB), NOSPLIT, $0-0
	BYTE $0x0F; BYTE $0x1F; BYTE $0x80; BYTE $75; BYTE $0x01; BYTE $0xFE; BYTE $0x5A
	RET

// func stop12()
TEXT ·stop12(SB), NOSPLIT, $0-0
	BYTE $0x0F; BYTE $0x1F; BYTE $0x80; BYTE $76; BYTE $0x01; BYTE $0xFE; BYTE $0x5A
	RET

// func stop13()
TEXT ·stop13(SB), NOSPLIT, $0-0
	BYTE $0x0F; BYTE $0x1F; BYTE $0x80; BYTE $77; BYTE $0x01; BYTE $0xFE; BYTE $0x5A
	RET

// func stop14()
TEXT ·stop14(SB), NOSPLIT, $0-0
	BYTE $0x0F; BYTE $0x1F; BYTE $0x80; BYTE $78; BYTE $0x01; BYTE $0xFE; BYTE $0x5A
	RET

// func stop15()
TEXT ·stop15(SB), NOSPLIT, $0-0
	BYTE $0x0F; BYTE $0x1F; BYTE $0x80; BYTE $79; BYTE $0x01; BYTE $0xFE; BYTE $0x5A
	RET

// func stop16()
TEXT ·stop16(SB), NOSPLIT, $0-0
	BYTE $0x0F; BYTE $0x1F; BYTE $0x80; BYTE $80; BYTE $0x01; BYTE $0xFE; BYTE $0x5A
	RET

// func stop17()
TEXT ·stop17(SB), NOSPLIT, $0-0
	BYTE $0x0F; BYTE $0x1F; BYTE $0x80; BYTE $81; BYTE $0x01; BYTE $0xFE; BYTE $0x5A
	RET

// func stop18()
TEXT ·stop18(SB), NOSPLIT, $0-0
	BYTE $0x0F; BYTE $0x1F; BYTE $0x80; BYTE $82; BYTE $0x01; BYTE $0xFE; BYTE $0x5A
	RET

// func stop63()
TEXT ·stop63(SB), NOSPLIT, $0-0
	BYTE $0x0F; BYTE $0x1F; BYTE $0x80; BYTE $127; BYTE $0x01; BYTE $0xFE; BYTE $0x5A
	RET
