package optim

import (
	"fmt"
	"math"

	"github.com/gopir/gopir/ir"
	"github.com/gopir/gopir/ops"
)

// ClipByGlobalNorm appends the rescaling of grads so that their global
// L2 norm (the norm of all of them, as one vector) is at most maxNorm, as
// torch.nn.utils.clip_grad_norm_ does, and returns the scaled gradients
// and the norm before scaling (a scalar):
//
//	norm  = √(Σᵢ ‖gᵢ‖²)                 (‖gᵢ‖ = √Σ gᵢ², as torch.norm)
//	scale = min(maxNorm / (norm + 1e-6), 1)
//	gᵢ    = gᵢ · scale
//
// This is PyTorch's formula, not maxNorm / max(norm, maxNorm): the 1e-6
// keeps the division finite for zero gradients and makes the scale
// slightly below maxNorm/norm when clipping; scaling always happens (by 1
// when the norm is small). A nil gradient stays nil. The
// norm is computed in f64 if any gradient is f64, else in f32.
func ClipByGlobalNorm(b *ir.Builder, grads []*ir.Value, maxNorm float64) (clipped []*ir.Value, norm *ir.Value) {
	if !(maxNorm >= 0) || math.IsInf(maxNorm, 1) {
		b.Fail(fmt.Errorf("optim: ClipByGlobalNorm: maxNorm is %v; it must be finite and >= 0", maxNorm))
		return grads, nil
	}
	wide := ir.InvalidDType
	for _, g := range grads {
		if g == nil {
			continue
		}
		if dt := g.Type().DType; !dt.IsFloat() {
			b.Fail(fmt.Errorf("optim: ClipByGlobalNorm: a gradient has type %s; gradients are f32 or f64", g.Type()))
			return grads, nil
		} else if wide != ir.F64 {
			wide = dt
		}
	}
	if wide == ir.InvalidDType {
		return grads, ops.Full(b, ir.F32, 0)
	}
	var sumSq *ir.Value
	for _, g := range grads {
		if g == nil {
			continue
		}
		n := ops.Sqrt(b, ops.ReduceSum(b, ops.Multiply(b, g, g), nil, false))
		if g.Type().DType != wide {
			n = ops.Cast(b, n, wide)
		}
		sq := ops.Multiply(b, n, n)
		if sumSq == nil {
			sumSq = sq
		} else {
			sumSq = ops.Add(b, sumSq, sq)
		}
	}
	norm = ops.Sqrt(b, sumSq)
	scale := ops.Divide(b, ops.Full(b, wide, maxNorm), ops.Add(b, norm, ops.Full(b, wide, 1e-6)))
	scale = ops.Minimum(b, scale, ops.Full(b, wide, 1))
	clipped = make([]*ir.Value, len(grads))
	for i, g := range grads {
		if g == nil {
			continue
		}
		s := scale
		if dt := g.Type().DType; dt != wide {
			s = ops.Cast(b, scale, dt)
		}
		clipped[i] = ops.Multiply(b, g, s)
	}
	return clipped, norm
}
