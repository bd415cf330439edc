package autodiff_test

import (
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/gopir/gopir/autodiff"
	"github.com/gopir/gopir/ir"
	"github.com/gopir/gopir/ops"
	"github.com/gopir/gopir/tensor"
)

// Second derivatives: differentiating a program that holds a backward
// works through the ops whose gradient rules are built from
// differentiable ops, and is checked against finite differences of the
// first derivative; through a dedicated backward kernel it fails with an
// error that says so, never with a wrong answer (docs/autodiff.md).
func TestSecondDerivatives(t *testing.T) {
	unary := func(f func(b *ir.Builder, x *ir.Value) *ir.Value) func(b *ir.Builder, x, y *ir.Value) *ir.Value {
		return func(b *ir.Builder, x, _ *ir.Value) *ir.Value { return f(b, x) }
	}
	cases := []struct {
		name   string
		f      func(b *ir.Builder, x, y *ir.Value) *ir.Value
		works  bool
		refuse string // for !works: the error names this op
	}{
		{"tanh", unary(ops.Tanh), true, ""},
		{"sigmoid", unary(ops.Sigmoid), true, ""},
		{"exp", unary(ops.Exp), true, ""},
		{"relu", unary(ops.Relu), true, ""},
		{"square", unary(ops.Square), true, ""},
		{"abs", unary(ops.Abs), true, ""},
		{"softplus", unary(ops.Softplus), true, ""},
		{"log", unary(func(b *ir.Builder, x *ir.Value) *ir.Value {
			return ops.Log(b, ops.Add(b, ops.Square(b, x), ops.Full(b, ir.F64, 1)))
		}), true, ""},
		{"sqrt", unary(func(b *ir.Builder, x *ir.Value) *ir.Value {
			return ops.Sqrt(b, ops.Add(b, ops.Square(b, x), ops.Full(b, ir.F64, 1)))
		}), true, ""},
		{"sin", unary(ops.Sin), true, ""},
		{"cos", unary(ops.Cos), true, ""},
		{"atan", unary(ops.Atan), true, ""},
		{"asinh", unary(ops.Asinh), true, ""},
		{"erf", unary(ops.Erf), true, ""},
		{"reduce_prod", unary(func(b *ir.Builder, x *ir.Value) *ir.Value { return ops.ReduceProd(b, x, []int{1}, false) }), true, ""},
		{"multiply", ops.Multiply, true, ""},
		{"divide", func(b *ir.Builder, x, y *ir.Value) *ir.Value {
			return ops.Divide(b, x, ops.Add(b, ops.Square(b, y), ops.Full(b, ir.F64, 1)))
		}, true, ""},
		{"matmul", func(b *ir.Builder, x, y *ir.Value) *ir.Value { return ops.Matmul(b, x, y, false, true) }, true, ""},
		{"conv2d", func(b *ir.Builder, x, y *ir.Value) *ir.Value {
			return ops.Conv2D(b, ops.Reshape(b, x, 1, 1, 2, 3), ops.Reshape(b, y, 1, 1, 2, 3), nil, []int{1, 1}, nil, 0)
		}, true, ""},
		{"pad", func(b *ir.Builder, x, y *ir.Value) *ir.Value {
			return ops.Multiply(b, ops.Pad(b, x, []int{1, 2, 0, 1}, "reflect", 0), ops.Pad(b, y, []int{1, 2, 0, 1}, "edge", 0))
		}, true, ""},
		{"resize", func(b *ir.Builder, x, y *ir.Value) *ir.Value {
			r := func(v *ir.Value, mode string) *ir.Value {
				return ops.Resize(b, v, []int{0, 1}, []int{3, 5}, []float64{1.5, 5.0 / 3}, ops.ResizeOptions{Mode: mode})
			}
			return ops.Multiply(b, r(x, "linear"), r(y, "cubic"))
		}, true, ""},
		{"silu", unary(ops.Silu), false, "silu_grad"},
		{"gelu", unary(func(b *ir.Builder, x *ir.Value) *ir.Value { return ops.Gelu(b, x, false) }), false, "gelu_grad"},
		{"softmax", unary(func(b *ir.Builder, x *ir.Value) *ir.Value { return ops.Softmax(b, x, -1) }), false, "softmax_grad"},
		{"log_softmax", unary(func(b *ir.Builder, x *ir.Value) *ir.Value { return ops.LogSoftmax(b, x, -1) }), false, "log_softmax_grad"},
	}
	r := rand.New(rand.NewPCG(7, 8))
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			// loss = Σ (d/dx Σ f(x, y))², a function of x and y whose own
			// gradient needs f's second derivative.
			m := func(b *ir.Builder) (*ir.Value, []*ir.Value) {
				x, y := ops.Data(b, "x", ir.F64, 2, 3), ops.Data(b, "y", ir.F64, 2, 3)
				g, err := autodiff.Backward(b, sum(b, tc.f(b, x, y)), []*ir.Value{x, y})
				if err != nil {
					t.Fatal(err)
				}
				return ops.Add(b, sum(b, ops.Square(b, g[0])), sum(b, ops.Square(b, g[1]))), []*ir.Value{x, y}
			}
			if !tc.works {
				b := ir.NewBuilder(ir.NewProgram())
				loss, wrt := m(b)
				_, err := autodiff.Backward(b, loss, wrt)
				if err == nil || !strings.Contains(err.Error(), "second derivative") || !strings.Contains(err.Error(), tc.refuse[:4]) {
					t.Fatalf("err = %v, want a refusal naming %s", err, tc.refuse)
				}
				return
			}
			feeds := map[string]*tensor.Tensor{"x": f64(t, randF64(r, 6), 2, 3), "y": f64(t, randF64(r, 6), 2, 3)}
			defer func() {
				for _, v := range feeds {
					v.Release()
				}
			}()
			checkGradients(t, m, feeds)
		})
	}
}
