package ops

import "github.com/gopir/gopir/ir"

// stop_gradient (x) -> x: the identity, shared rather than copied (a view
// the executor makes), through which no gradient flows.

func init() {
	register(&Def{Name: "stop_gradient", NoGrad: true,
		Infer: func(in []ir.Type, _ ir.Attrs) ([]ir.Type, error) {
			if err := wantOperands(in, 1); err != nil {
				return nil, err
			}
			return []ir.Type{in[0]}, nil
		},
		Compute: func(*ir.Op) (Compute, error) { return shpViewOf(), nil }})
}

// StopGradient appends the identity of x that blocks gradients.
func StopGradient(b *ir.Builder, x *ir.Value) *ir.Value { return b.Op1("stop_gradient", nil, x) }
