package optimize

import (
	"github.com/gopir/gopir/ir"
	"github.com/gopir/gopir/ops"
)

// Winograd gives each convolution whose op can compute by Winograd's
// F(2×2, 3×3) (ops.Def.Winograd: 3×3 float32 filters at stride 1 on
// shapes where the kernel is faster) the attribute winograd:true: 16
// products per 2×2 output tile and input channel instead of 36. The
// results move within float32 rounding of the direct sums, not bit for
// bit. It runs last, on the fused and blocked convolutions the other
// passes made. It returns the new program and how many convolutions it
// marked.
func Winograd(p *ir.Program) (*ir.Program, int, error) {
	q := clone(p)
	var found []*ir.Op
	q.Walk(func(op *ir.Op) bool {
		if d, ok := ops.Lookup(op.Name()); ok && d.Winograd != nil && !winogradMarked(op) && d.Winograd(op) {
			found = append(found, op)
		}
		return true
	})
	for _, op := range found {
		if _, err := replaceOp(q, op, op.Name(), op.Attrs.With("winograd", ir.Bool(true))); err != nil {
			return nil, 0, err
		}
	}
	return q, len(found), nil
}

// winogradMarked reports whether op already carries winograd:true.
func winogradMarked(op *ir.Op) bool {
	on, err := op.Attrs.Bool("winograd")
	return err == nil && on
}
