//go:build !purego

#include "textflag.h"

// AVX2+FMA kernels. Every length argument n is a multiple of 8 (the Go
// wrappers in distance_amd64.go handle the tail); n may be 0.

// REDUCE sums the eight lanes of Y0 into X0's low lane.
#define REDUCE \
	VEXTRACTF128 $1, Y0, X14; \
	VADDPS       X14, X0, X0; \
	VHADDPS      X0, X0, X0;  \
	VHADDPS      X0, X0, X0

// func dotAVX2(a, b *float32, n int) float32
TEXT ·dotAVX2(SB), NOSPLIT, $0-28
	MOVQ   a+0(FP), AX
	MOVQ   b+8(FP), BX
	MOVQ   n+16(FP), CX
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3
	XORQ   SI, SI
	MOVQ   CX, DX
	ANDQ   $-32, DX
	JZ     dot8

dot32:
	VMOVUPS     (AX)(SI*4), Y4
	VMOVUPS     32(AX)(SI*4), Y5
	VMOVUPS     64(AX)(SI*4), Y6
	VMOVUPS     96(AX)(SI*4), Y7
	VFMADD231PS (BX)(SI*4), Y4, Y0
	VFMADD231PS 32(BX)(SI*4), Y5, Y1
	VFMADD231PS 64(BX)(SI*4), Y6, Y2
	VFMADD231PS 96(BX)(SI*4), Y7, Y3
	ADDQ        $32, SI
	CMPQ        SI, DX
	JLT         dot32

dot8:
	CMPQ SI, CX
	JGE  dotdone

dot8loop:
	VMOVUPS     (AX)(SI*4), Y4
	VFMADD231PS (BX)(SI*4), Y4, Y0
	ADDQ        $8, SI
	CMPQ        SI, CX
	JLT         dot8loop

dotdone:
	VADDPS Y1, Y0, Y0
	VADDPS Y3, Y2, Y2
	VADDPS Y2, Y0, Y0
	REDUCE
	VZEROUPPER
	MOVSS  X0, ret+24(FP)
	RET

// func l2AVX2(a, b *float32, n int) float32
TEXT ·l2AVX2(SB), NOSPLIT, $0-28
	MOVQ   a+0(FP), AX
	MOVQ   b+8(FP), BX
	MOVQ   n+16(FP), CX
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3
	XORQ   SI, SI
	MOVQ   CX, DX
	ANDQ   $-32, DX
	JZ     l28

l232:
	VMOVUPS     (AX)(SI*4), Y4
	VMOVUPS     32(AX)(SI*4), Y5
	VMOVUPS     64(AX)(SI*4), Y6
	VMOVUPS     96(AX)(SI*4), Y7
	VSUBPS      (BX)(SI*4), Y4, Y4
	VSUBPS      32(BX)(SI*4), Y5, Y5
	VSUBPS      64(BX)(SI*4), Y6, Y6
	VSUBPS      96(BX)(SI*4), Y7, Y7
	VFMADD231PS Y4, Y4, Y0
	VFMADD231PS Y5, Y5, Y1
	VFMADD231PS Y6, Y6, Y2
	VFMADD231PS Y7, Y7, Y3
	ADDQ        $32, SI
	CMPQ        SI, DX
	JLT         l232

l28:
	CMPQ SI, CX
	JGE  l2done

l28loop:
	VMOVUPS     (AX)(SI*4), Y4
	VSUBPS      (BX)(SI*4), Y4, Y4
	VFMADD231PS Y4, Y4, Y0
	ADDQ        $8, SI
	CMPQ        SI, CX
	JLT         l28loop

l2done:
	VADDPS Y1, Y0, Y0
	VADDPS Y3, Y2, Y2
	VADDPS Y2, Y0, Y0
	REDUCE
	VZEROUPPER
	MOVSS  X0, ret+24(FP)
	RET

// func cosineAVX2(a, b *float32, n int) (dot, na, nb float32)
TEXT ·cosineAVX2(SB), NOSPLIT, $0-36
	MOVQ   a+0(FP), AX
	MOVQ   b+8(FP), BX
	MOVQ   n+16(FP), CX
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3
	VXORPS Y4, Y4, Y4
	VXORPS Y5, Y5, Y5
	XORQ   SI, SI
	MOVQ   CX, DX
	ANDQ   $-16, DX
	JZ     cos8

cos16:
	VMOVUPS     (AX)(SI*4), Y6
	VMOVUPS     32(AX)(SI*4), Y7
	VMOVUPS     (BX)(SI*4), Y8
	VMOVUPS     32(BX)(SI*4), Y9
	VFMADD231PS Y8, Y6, Y0
	VFMADD231PS Y9, Y7, Y1
	VFMADD231PS Y6, Y6, Y2
	VFMADD231PS Y7, Y7, Y3
	VFMADD231PS Y8, Y8, Y4
	VFMADD231PS Y9, Y9, Y5
	ADDQ        $16, SI
	CMPQ        SI, DX
	JLT         cos16

cos8:
	CMPQ SI, CX
	JGE  cosdone
	VMOVUPS     (AX)(SI*4), Y6
	VMOVUPS     (BX)(SI*4), Y8
	VFMADD231PS Y8, Y6, Y0
	VFMADD231PS Y6, Y6, Y2
	VFMADD231PS Y8, Y8, Y4

cosdone:
	VADDPS Y1, Y0, Y0
	VADDPS Y3, Y2, Y2
	VADDPS Y5, Y4, Y4
	REDUCE
	MOVSS  X0, dot+24(FP)
	VMOVAPS Y2, Y0
	REDUCE
	MOVSS  X0, na+28(FP)
	VMOVAPS Y4, Y0
	REDUCE
	MOVSS  X0, nb+32(FP)
	VZEROUPPER
	RET

// func halvesF16C(dst *float32, src *uint16, n int)
TEXT ·halvesF16C(SB), NOSPLIT, $0-24
	MOVQ dst+0(FP), AX
	MOVQ src+8(FP), BX
	MOVQ n+16(FP), CX
	XORQ SI, SI
	CMPQ SI, CX
	JGE  halvesdone

halvesloop:
	VCVTPH2PS (BX)(SI*2), Y0
	VMOVUPS   Y0, (AX)(SI*4)
	ADDQ      $8, SI
	CMPQ      SI, CX
	JLT       halvesloop

halvesdone:
	VZEROUPPER
	RET

// func sq8L2AVX2(qm, step *float32, code *uint8, n int) float32
// Σ (step*code - qm)².
TEXT ·sq8L2AVX2(SB), NOSPLIT, $0-36
	MOVQ   qm+0(FP), AX
	MOVQ   step+8(FP), BX
	MOVQ   code+16(FP), CX
	MOVQ   n+24(FP), DX
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	XORQ   SI, SI
	MOVQ   DX, DI
	ANDQ   $-16, DI
	JZ     sql28

sql216:
	VPMOVZXBD   (CX)(SI*1), Y4
	VPMOVZXBD   8(CX)(SI*1), Y5
	VCVTDQ2PS   Y4, Y4
	VCVTDQ2PS   Y5, Y5
	VMOVUPS     (BX)(SI*4), Y6
	VMOVUPS     32(BX)(SI*4), Y7
	VFMSUB213PS (AX)(SI*4), Y6, Y4
	VFMSUB213PS 32(AX)(SI*4), Y7, Y5
	VFMADD231PS Y4, Y4, Y0
	VFMADD231PS Y5, Y5, Y1
	ADDQ        $16, SI
	CMPQ        SI, DI
	JLT         sql216

sql28:
	CMPQ SI, DX
	JGE  sql2done
	VPMOVZXBD   (CX)(SI*1), Y4
	VCVTDQ2PS   Y4, Y4
	VMOVUPS     (BX)(SI*4), Y6
	VFMSUB213PS (AX)(SI*4), Y6, Y4
	VFMADD231PS Y4, Y4, Y0

sql2done:
	VADDPS Y1, Y0, Y0
	REDUCE
	VZEROUPPER
	MOVSS  X0, ret+32(FP)
	RET

// func sq8DotAVX2(w *float32, code *uint8, n int) float32
// Σ w*code.
TEXT ·sq8DotAVX2(SB), NOSPLIT, $0-28
	MOVQ   w+0(FP), AX
	MOVQ   code+8(FP), CX
	MOVQ   n+16(FP), DX
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	XORQ   SI, SI
	MOVQ   DX, DI
	ANDQ   $-16, DI
	JZ     sqd8

sqd16:
	VPMOVZXBD   (CX)(SI*1), Y4
	VPMOVZXBD   8(CX)(SI*1), Y5
	VCVTDQ2PS   Y4, Y4
	VCVTDQ2PS   Y5, Y5
	VFMADD231PS (AX)(SI*4), Y4, Y0
	VFMADD231PS 32(AX)(SI*4), Y5, Y1
	ADDQ        $16, SI
	CMPQ        SI, DI
	JLT         sqd16

sqd8:
	CMPQ SI, DX
	JGE  sqddone
	VPMOVZXBD   (CX)(SI*1), Y4
	VCVTDQ2PS   Y4, Y4
	VFMADD231PS (AX)(SI*4), Y4, Y0

sqddone:
	VADDPS Y1, Y0, Y0
	REDUCE
	VZEROUPPER
	MOVSS  X0, ret+24(FP)
	RET

// func sq8CosineAVX2(q, lo, step *float32, code *uint8, n int) (dot, nx float32)
// With x = lo + step*code: q·x and |x|².
TEXT ·sq8CosineAVX2(SB), NOSPLIT, $0-48
	MOVQ   q+0(FP), AX
	MOVQ   lo+8(FP), BX
	MOVQ   step+16(FP), CX
	MOVQ   code+24(FP), DX
	MOVQ   n+32(FP), R8
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3
	XORQ   SI, SI
	MOVQ   R8, DI
	ANDQ   $-16, DI
	JZ     sqc8

sqc16:
	VPMOVZXBD   (DX)(SI*1), Y4
	VPMOVZXBD   8(DX)(SI*1), Y5
	VCVTDQ2PS   Y4, Y4
	VCVTDQ2PS   Y5, Y5
	VMOVUPS     (CX)(SI*4), Y6
	VMOVUPS     32(CX)(SI*4), Y7
	VFMADD213PS (BX)(SI*4), Y6, Y4
	VFMADD213PS 32(BX)(SI*4), Y7, Y5
	VFMADD231PS (AX)(SI*4), Y4, Y0
	VFMADD231PS 32(AX)(SI*4), Y5, Y1
	VFMADD231PS Y4, Y4, Y2
	VFMADD231PS Y5, Y5, Y3
	ADDQ        $16, SI
	CMPQ        SI, DI
	JLT         sqc16

sqc8:
	CMPQ SI, R8
	JGE  sqcdone
	VPMOVZXBD   (DX)(SI*1), Y4
	VCVTDQ2PS   Y4, Y4
	VMOVUPS     (CX)(SI*4), Y6
	VFMADD213PS (BX)(SI*4), Y6, Y4
	VFMADD231PS (AX)(SI*4), Y4, Y0
	VFMADD231PS Y4, Y4, Y2

sqcdone:
	VADDPS Y1, Y0, Y0
	VADDPS Y3, Y2, Y2
	REDUCE
	MOVSS   X0, dot+40(FP)
	VMOVAPS Y2, Y0
	REDUCE
	MOVSS   X0, nx+44(FP)
	VZEROUPPER
	RET

// Half-precision kernels: b holds n binary16 values, converted with F16C
// as they are loaded.

// func dotHalfAVX2(a *float32, b *uint16, n int) float32
TEXT ·dotHalfAVX2(SB), NOSPLIT, $0-28
	MOVQ   a+0(FP), AX
	MOVQ   b+8(FP), BX
	MOVQ   n+16(FP), CX
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	XORQ   SI, SI
	MOVQ   CX, DX
	ANDQ   $-16, DX
	JZ     hdot8

hdot16:
	VCVTPH2PS   (BX)(SI*2), Y4
	VCVTPH2PS   16(BX)(SI*2), Y5
	VFMADD231PS (AX)(SI*4), Y4, Y0
	VFMADD231PS 32(AX)(SI*4), Y5, Y1
	ADDQ        $16, SI
	CMPQ        SI, DX
	JLT         hdot16

hdot8:
	CMPQ SI, CX
	JGE  hdotdone
	VCVTPH2PS   (BX)(SI*2), Y4
	VFMADD231PS (AX)(SI*4), Y4, Y0

hdotdone:
	VADDPS Y1, Y0, Y0
	REDUCE
	VZEROUPPER
	MOVSS  X0, ret+24(FP)
	RET

// func l2HalfAVX2(a *float32, b *uint16, n int) float32
TEXT ·l2HalfAVX2(SB), NOSPLIT, $0-28
	MOVQ   a+0(FP), AX
	MOVQ   b+8(FP), BX
	MOVQ   n+16(FP), CX
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	XORQ   SI, SI
	MOVQ   CX, DX
	ANDQ   $-16, DX
	JZ     hl28

hl216:
	VCVTPH2PS   (BX)(SI*2), Y4
	VCVTPH2PS   16(BX)(SI*2), Y5
	VSUBPS      (AX)(SI*4), Y4, Y4
	VSUBPS      32(AX)(SI*4), Y5, Y5
	VFMADD231PS Y4, Y4, Y0
	VFMADD231PS Y5, Y5, Y1
	ADDQ        $16, SI
	CMPQ        SI, DX
	JLT         hl216

hl28:
	CMPQ SI, CX
	JGE  hl2done
	VCVTPH2PS   (BX)(SI*2), Y4
	VSUBPS      (AX)(SI*4), Y4, Y4
	VFMADD231PS Y4, Y4, Y0

hl2done:
	VADDPS Y1, Y0, Y0
	REDUCE
	VZEROUPPER
	MOVSS  X0, ret+24(FP)
	RET

// func cosineHalfAVX2(a *float32, b *uint16, n int) (dot, na, nb float32)
TEXT ·cosineHalfAVX2(SB), NOSPLIT, $0-36
	MOVQ   a+0(FP), AX
	MOVQ   b+8(FP), BX
	MOVQ   n+16(FP), CX
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3
	VXORPS Y4, Y4, Y4
	VXORPS Y5, Y5, Y5
	XORQ   SI, SI
	MOVQ   CX, DX
	ANDQ   $-16, DX
	JZ     hcos8

hcos16:
	VMOVUPS     (AX)(SI*4), Y6
	VMOVUPS     32(AX)(SI*4), Y7
	VCVTPH2PS   (BX)(SI*2), Y8
	VCVTPH2PS   16(BX)(SI*2), Y9
	VFMADD231PS Y8, Y6, Y0
	VFMADD231PS Y9, Y7, Y1
	VFMADD231PS Y6, Y6, Y2
	VFMADD231PS Y7, Y7, Y3
	VFMADD231PS Y8, Y8, Y4
	VFMADD231PS Y9, Y9, Y5
	ADDQ        $16, SI
	CMPQ        SI, DX
	JLT         hcos16

hcos8:
	CMPQ SI, CX
	JGE  hcosdone
	VMOVUPS     (AX)(SI*4), Y6
	VCVTPH2PS   (BX)(SI*2), Y8
	VFMADD231PS Y8, Y6, Y0
	VFMADD231PS Y6, Y6, Y2
	VFMADD231PS Y8, Y8, Y4

hcosdone:
	VADDPS Y1, Y0, Y0
	VADDPS Y3, Y2, Y2
	VADDPS Y5, Y4, Y4
	REDUCE
	MOVSS  X0, dot+24(FP)
	VMOVAPS Y2, Y0
	REDUCE
	MOVSS  X0, na+28(FP)
	VMOVAPS Y4, Y0
	REDUCE
	MOVSS  X0, nb+32(FP)
	VZEROUPPER
	RET

// func cpuid1ECX() uint32
TEXT ·cpuid1ECX(SB), NOSPLIT, $0-4
	MOVL  $1, AX
	XORL  CX, CX
	CPUID
	MOVL  CX, ret+0(FP)
	RET

// func prefetch(p *float32, n int)
// Prefetches the n float32s at p into all cache levels, a line at a time.
TEXT ·prefetch(SB), NOSPLIT, $0-16
	MOVQ p+0(FP), AX
	MOVQ n+8(FP), CX
	LEAQ (AX)(CX*4), CX

prefetchloop:
	CMPQ       AX, CX
	JGE        prefetchdone
	PREFETCHT0 (AX)
	ADDQ       $64, AX
	JMP        prefetchloop

prefetchdone:
	RET

// func l2U8AVX2(a, b *uint8, n int) uint32
// Σ (a-b)² over bytes, n a multiple of 16. The sum is of integers, wrapping
// mod 2^32 like the Go loop it replaces, so any order gives the same bits.
TEXT ·l2U8AVX2(SB), NOSPLIT, $0-28
	MOVQ  a+0(FP), AX
	MOVQ  b+8(FP), BX
	MOVQ  n+16(FP), CX
	VPXOR Y0, Y0, Y0
	VPXOR Y1, Y1, Y1
	XORQ  SI, SI
	MOVQ  CX, DI
	ANDQ  $-32, DI
	JZ    u8l16

u8l32:
	VPMOVZXBW (AX)(SI*1), Y2
	VPMOVZXBW (BX)(SI*1), Y3
	VPSUBW    Y3, Y2, Y2
	VPMADDWD  Y2, Y2, Y2
	VPADDD    Y2, Y0, Y0
	VPMOVZXBW 16(AX)(SI*1), Y4
	VPMOVZXBW 16(BX)(SI*1), Y5
	VPSUBW    Y5, Y4, Y4
	VPMADDWD  Y4, Y4, Y4
	VPADDD    Y4, Y1, Y1
	ADDQ      $32, SI
	CMPQ      SI, DI
	JLT       u8l32

u8l16:
	CMPQ      SI, CX
	JGE       u8done
	VPMOVZXBW (AX)(SI*1), Y2
	VPMOVZXBW (BX)(SI*1), Y3
	VPSUBW    Y3, Y2, Y2
	VPMADDWD  Y2, Y2, Y2
	VPADDD    Y2, Y0, Y0

u8done:
	VPADDD       Y1, Y0, Y0
	VEXTRACTI128 $1, Y0, X1
	VPADDD       X1, X0, X0
	VPHADDD      X0, X0, X0
	VPHADDD      X0, X0, X0
	VMOVD        X0, AX
	MOVL         AX, ret+24(FP)
	VZEROUPPER
	RET
