package main

import (
	"fmt"

	"github.com/gopir/gopir/kernels/internal/avo/emit"
	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	. "github.com/mmcloughlin/avo/reg"
)

// epiPlanesF32 emits epiPlanesF32AVX512<suffix>(out, bias, res *float32,
// planes, hw int), a fused convolution's epilogue in one pass over planes
// planes of hw elements: out[q·hw + i] = act((out[q·hw + i] + bias[q]) +
// res[q·hw + i]), the residual only with res and the activation (ReLU)
// only with relu. Each step rounds as the separate passes do (an add with
// the output as first operand, then ReLU as reluF32AVX512 computes it),
// so the bits are those of epiPlanes' passes. 16 elements at a time, the
// last hw%16 of a plane under a mask.
func epiPlanesF32(res, relu bool) {
	name := "epiPlanesF32AVX512" + epiSuffix(res, relu)
	emit.Func(name, "func(out, bias, res *float32, planes, hw int)",
		fmt.Sprintf("%s applies a fused epilogue (bias%s%s) to planes planes of hw elements in one pass (see epiPlanes).",
			name, map[bool]string{true: ", residual"}[res], map[bool]string{true: ", ReLU"}[relu]))
	out, bias, rp, planes, n16 := RDI, RSI, RDX, R9, R10
	emit.Params("out bias res planes hw", out, bias, rp, planes, n16)
	if relu {
		VPXORD(Z31, Z31, Z31)
		MOVL(U32(0x7fffffff), EAX)
		VPBROADCASTD(EAX, Z30)
	}
	TESTQ(planes, planes)
	JE(LabelRef("done"))
	// K2 masks the hw%16 elements that end a plane; R12 counts them.
	MOVQ(n16, RCX)
	ANDQ(U8(15), RCX)
	MOVQ(RCX, R12)
	MOVL(U32(1), EAX)
	SHLL(CL, EAX)
	DECL(EAX)
	KMOVW(EAX, K2)
	SHRQ(U8(4), n16)
	step := func(load func(VecPhysical), store func(VecPhysical), resMem Mem, masked bool) {
		load(Z0)
		VADDPS(Z29, Z0, Z0)
		if res {
			if masked {
				VMOVUPS_Z(resMem, K2, Z1)
				VADDPS(Z1, Z0, Z0)
			} else {
				VADDPS(resMem, Z0, Z0)
			}
		}
		if relu {
			VCMPPS(U8(6), Z31, Z0, K1) // !(v <= 0): v > 0 or NaN
			VPANDD_Z(Z30, Z0, K1, Z0)
		}
		store(Z0)
	}
	Label("plane")
	VBROADCASTSS(Mem{Base: bias}, Z29)
	MOVQ(n16, R11)
	TESTQ(R11, R11)
	JE(LabelRef("tail"))
	Label("vec")
	step(func(z VecPhysical) { VMOVUPS(Mem{Base: out}, z) }, func(z VecPhysical) { VMOVUPS(z, Mem{Base: out}) },
		Mem{Base: rp}, false)
	ADDQ(U8(64), out)
	if res {
		ADDQ(U8(64), rp)
	}
	DECQ(R11)
	JNE(LabelRef("vec"))
	Label("tail")
	TESTQ(R12, R12)
	JE(LabelRef("next"))
	step(func(z VecPhysical) { VMOVUPS_Z(Mem{Base: out}, K2, z) }, func(z VecPhysical) { VMOVUPS(z, K2, Mem{Base: out}) },
		Mem{Base: rp}, true)
	LEAQ(Mem{Base: out, Index: R12, Scale: 4}, out)
	if res {
		LEAQ(Mem{Base: rp, Index: R12, Scale: 4}, rp)
	}
	Label("next")
	ADDQ(U8(4), bias)
	DECQ(planes)
	JNE(LabelRef("plane"))
	Label("done")
	VZEROUPPER()
	RET()
}

// epiSuffix names a variant of epiPlanesF32.
func epiSuffix(res, relu bool) string {
	s := ""
	if res {
		s += "Res"
	}
	if relu {
		s += "Relu"
	}
	return s
}
