package main

import (
	"github.com/gopir/gopir/kernels/internal/avo/emit"
	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	. "github.com/mmcloughlin/avo/reg"
)

// ewOp is one float32 arithmetic instruction: dst = src1 op src2, in
// avo's operand order (src2, src1, dst).
type ewOp func(src2, src1, dst Op)

// ewLoopsF32 emits the float32 add and multiply loops of the elementwise
// kernels (elementwise_vec_amd64.go): o = a op b, and o = a op y for a
// scalar y. Each lane computes what the Go loop computes for its element,
// with a as the first operand, so the bits are the same.
func ewLoopsF32() {
	for _, op := range []struct {
		name string
		ins  ewOp
	}{{"Add", func(s2, s1, d Op) { VADDPS(s2, s1, d) }}, {"Mul", func(s2, s1, d Op) { VMULPS(s2, s1, d) }}} {
		ewLoopVV(op.name, op.ins)
		ewLoopVS(op.name, op.ins)
	}
}

// ewLoopVV emits ew<Op>VVF32AVX(o, a, b *float32, n int): o[i] = a[i] op
// b[i] for i < n, n%8 == 0.
func ewLoopVV(name string, ins ewOp) {
	fn := "ew" + name + "VVF32AVX"
	emit.Func(fn, "func(o, a, b *float32, n int)",
		fn+" sets o[i] = a[i] "+name+" b[i] for i < n, n%8 == 0.")
	o, a, b, n := RDI, RSI, RDX, RCX
	emit.Params("o a b n", o, a, b, n)
	ewCounted(fn, n, func(i GPPhysical, k int) {
		y := []VecPhysical{Y0, Y1, Y2, Y3}[k]
		VMOVUPS(Mem{Base: a, Index: i, Scale: 4, Disp: 32 * k}, y)
		ins(Mem{Base: b, Index: i, Scale: 4, Disp: 32 * k}, y, y)
		VMOVUPS(y, Mem{Base: o, Index: i, Scale: 4, Disp: 32 * k})
	})
}

// ewLoopVS emits ew<Op>VSF32AVX(o, a *float32, y float32, n int): o[i] =
// a[i] op y for i < n, n%8 == 0.
func ewLoopVS(name string, ins ewOp) {
	fn := "ew" + name + "VSF32AVX"
	emit.Func(fn, "func(o, a *float32, y float32, n int)",
		fn+" sets o[i] = a[i] "+name+" y for i < n, n%8 == 0.")
	o, a, n := RDI, RSI, RCX
	emit.Params("o a n y", o, a, n, X8)
	VBROADCASTSS(X8, Y8)
	ewCounted(fn, n, func(i GPPhysical, k int) {
		y := []VecPhysical{Y0, Y1, Y2, Y3}[k]
		VMOVUPS(Mem{Base: a, Index: i, Scale: 4, Disp: 32 * k}, y)
		ins(Y8, y, y)
		VMOVUPS(y, Mem{Base: o, Index: i, Scale: 4, Disp: 32 * k})
	})
}

// ewCounted emits the loop over n elements (n%8 == 0): body(i, k) handles
// the eight at i + 8k; four at a time while 32 remain, then one.
func ewCounted(fn string, n GPPhysical, body func(i GPPhysical, k int)) {
	i := RAX
	XORQ(i, i)
	SUBQ(U8(32), n)
	JL(LabelRef(fn + "_one"))
	Label(fn + "_four")
	for k := range 4 {
		body(i, k)
	}
	ADDQ(U8(32), i)
	SUBQ(U8(32), n)
	JGE(LabelRef(fn + "_four"))
	Label(fn + "_one")
	ADDQ(U8(32), n)
	JE(LabelRef(fn + "_done"))
	Label(fn + "_eight")
	body(i, 0)
	ADDQ(U8(8), i)
	SUBQ(U8(8), n)
	JNE(LabelRef(fn + "_eight"))
	Label(fn + "_done")
	VZEROUPPER()
	RET()
}
