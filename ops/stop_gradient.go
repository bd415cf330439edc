package ops

import (
	"github.com/gopir/gopir/ir"
	"github.com/gopir/gopir/tensor"
)

// stop_gradient (x) -> x: the identity, shared rather than copied, through
// which no gradient flows.

func init() {
	register(&Def{Name: "stop_gradient", NoGrad: true,
		Infer: func(in []ir.Type, _ ir.Attrs) ([]ir.Type, error) {
			if err := wantOperands(in, 1); err != nil {
				return nil, err
			}
			return []ir.Type{in[0]}, nil
		},
		Bind: func(*ir.Op) (Kernel, error) {
			return func(_ *Ctx, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
				return []*tensor.Tensor{in[0].Retain()}, nil
			}, nil
		}})
}

// StopGradient appends the identity of x that blocks gradients.
func StopGradient(b *ir.Builder, x *ir.Value) *ir.Value { return b.Op1("stop_gradient", nil, x) }
