package ops

import (
	"fmt"
	"slices"

	"github.com/gopir/gopir/ir"
	"github.com/gopir/gopir/kernels"
	"github.com/gopir/gopir/tensor"
)

// Helper ops of the gradient rules of gelu and silu, whose derivatives
// have no short composition from other ops (gelu's needs erfc).
//
//	gelu_grad {approximate = false} (x, dy)   dy·gelu'(x)   f32 f64
//	silu_grad (x, dy)                         dy·silu'(x)   f32 f64
//
// x and dy have one type (no broadcasting); the result has it too. The
// gradient of either op flows to dy (they are linear in it); the second
// derivative in x is not implemented, and asking for it is an error.

func init() {
	register(&Def{Name: "gelu_grad", Infer: ewInferActGrad(true), Compute: ewBindActGrad, Grad: ewGradActGrad})
	register(&Def{Name: "silu_grad", Infer: ewInferActGrad(false), Compute: ewBindActGrad, Grad: ewGradActGrad, PerSample: perSampleAll})
}

func ewInferActGrad(hasApprox bool) func([]ir.Type, ir.Attrs) ([]ir.Type, error) {
	return func(in []ir.Type, attrs ir.Attrs) ([]ir.Type, error) {
		if hasApprox {
			if _, err := ewOptBool(attrs, "approximate", false); err != nil {
				return nil, err
			}
		}
		if err := wantOperands(in, 2); err != nil {
			return nil, err
		}
		if err := ewSameDType(in); err != nil {
			return nil, err
		}
		if err := ewFloats.check(in[0]); err != nil {
			return nil, err
		}
		x, dy := in[0], in[1]
		if x.Rank() != dy.Rank() {
			return nil, fmt.Errorf("operand types %s and %s differ in shape", x, dy)
		}
		dims := slices.Clone(x.Dims)
		for i, d := range dy.Dims {
			switch {
			case dims[i] == ir.Dynamic:
				dims[i] = d
			case d != ir.Dynamic && d != dims[i]:
				return nil, fmt.Errorf("operand types %s and %s differ in shape", x, dy)
			}
		}
		return []ir.Type{ir.TensorOf(x.DType, dims...)}, nil
	}
}

// ewBindActGrad returns the kernel of gelu_grad or silu_grad: Infer has
// checked that x and dy have one shape.
func ewBindActGrad(op *ir.Op) (Compute, error) {
	approx := false
	if op.Name() == "gelu_grad" {
		var err error
		if approx, err = ewOptBool(op.Attrs, "approximate", false); err != nil {
			return Compute{}, err
		}
	}
	name, dts := op.Name(), ewOperandDTypes(op)
	dt := dts[0]
	return Compute{Fn: func(c *Ctx, in, outs []*tensor.Tensor) error {
		if err := ewCheckInputs(name, in, dts); err != nil {
			return err
		}
		x, dy, out := in[0], in[1], outs[0]
		switch {
		case name == "gelu_grad" && dt == ir.F32:
			return kernels.GeluGrad(c.Threads, out.F32(), x.F32(), dy.F32(), approx)
		case name == "gelu_grad":
			return kernels.GeluGrad(c.Threads, out.F64(), x.F64(), dy.F64(), approx)
		case dt == ir.F32:
			return kernels.SiluGrad(c.Threads, out.F32(), x.F32(), dy.F32())
		default:
			return kernels.SiluGrad(c.Threads, out.F64(), x.F64(), dy.F64())
		}
	}}, nil
}

// ewGradActGrad: the op is dy·f'(x), linear in dy, so d dy = ddx·f'(x),
// the same op applied to the incoming gradient.
func ewGradActGrad(g *GradContext) ([]*ir.Value, error) {
	if g.Need(0) {
		return nil, fmt.Errorf("the second derivative of %s in x is not implemented", g.Op.Name()[:4])
	}
	dx := make([]*ir.Value, 2)
	if g.Need(1) {
		dx[1] = g.B.Op1(g.Op.Name(), g.Op.Attrs, g.X(0), g.DY[0])
	}
	return dx, nil
}

// GeluGrad appends dy·gelu'(x), of the exact form or, if approximate, of
// the tanh form.
func GeluGrad(b *ir.Builder, x, dy *ir.Value, approximate bool) *ir.Value {
	return b.Op1("gelu_grad", ir.A("approximate", approximate), x, dy)
}

// SiluGrad appends dy·silu'(x).
func SiluGrad(b *ir.Builder, x, dy *ir.Value) *ir.Value {
	return b.Op1("silu_grad", nil, x, dy)
}
