package ops

import (
	"fmt"

	"github.com/gopir/gopir/ir"
	"github.com/gopir/gopir/kernels"
	"github.com/gopir/gopir/tensor"
)

// Batch norm and SiLU fused, for training.
//
//	batch_norm_silu {epsilon, momentum}
//	    (x, scale, bias, running_mean, running_var)
//	    -> (z, running_mean_out, running_var_out, saved_mean, saved_inv_std)
//	batch_norm_silu_grad (dz, x, scale, bias, saved_mean, saved_inv_std) -> (dx, dscale, dbias)
//
// batch_norm_silu is silu(batch_norm(x, …)) in training mode: the
// operands, attributes, statistics and running statistics are
// batch_norm's (training true; training false and sync are refused), and
// z has the bits of silu applied to batch_norm's y. y itself is not kept:
// the forward writes z as it normalises, in one pass after the
// statistics, and the gradient computes y again from x, inside batch
// norm's gradient passes. So a training step keeps x and z for the
// backward, where the separate ops keep y too.
//
// saved_mean and saved_inv_std are float64 whatever x's dtype, so that
// the gradient recomputes y with the forward's very factors;
// batch_norm_silu_grad takes them so, and otherwise rounds them to x's
// dtype, as batch_norm_grad gets them from batch_norm: dx, dscale and
// dbias have the bits of silu_grad then batch_norm_grad. dx may take
// over dz's buffer (Compute.InPlace).

func init() {
	register(&Def{Name: "batch_norm_silu", Infer: inferBatchNormSilu, Compute: bindBatchNormSilu, Grad: gradBatchNormSilu, Reads: bnsReads})
	register(&Def{Name: "batch_norm_silu_grad", Grad: noSecondOrder, Infer: inferBNSiluGrad, Compute: bindBNSiluGrad})
}

// bnsDecode decodes batch_norm_silu's attributes, which must be those of
// batch_norm in training mode without sync.
func bnsDecode(attrs ir.Attrs) (nnBNAttrs, error) {
	a, err := nnBNDecode(attrs)
	if err != nil {
		return a, err
	}
	if !a.training || a.sync {
		return a, fmt.Errorf("attributes training:%v sync:%v: batch_norm_silu is batch norm in training mode without sync (use batch_norm and silu otherwise)", a.training, a.sync)
	}
	return a, nil
}

func inferBatchNormSilu(in []ir.Type, attrs ir.Attrs) ([]ir.Type, error) {
	if err := wantOperands(in, 5); err != nil {
		return nil, err
	}
	if _, err := bnsDecode(attrs); err != nil {
		return nil, err
	}
	ch, err := nnBNShape(in)
	if err != nil {
		return nil, err
	}
	x := in[0]
	st, saved := ir.TensorOf(x.DType, ch), ir.TensorOf(ir.F64, ch)
	return []ir.Type{ir.TensorOf(x.DType, x.Dims...), st, st, saved, saved}, nil
}

func bindBatchNormSilu(op *ir.Op) (Compute, error) {
	a, err := bnsDecode(op.Attrs)
	if err != nil {
		return Compute{}, err
	}
	return bnCompute(a, true), nil
}

// bnsReads: as batch_norm's in training mode, z needs x, scale and bias,
// each running statistic x and its old value, the saved ones x.
func bnsReads(*ir.Op) [][]int { return [][]int{{0, 1, 2}, {0, 3}, {0, 4}, {0}, {0}} }

// BatchNormSilu appends silu(batch_norm(x, …)) in training mode as one op
// and returns its five results: z, the new running mean and variance, and
// the saved mean and inverse standard deviation (float64).
func BatchNormSilu(b *ir.Builder, x, scale, bias, runningMean, runningVar *ir.Value, epsilon, momentum float64) (z, meanOut, varOut, savedMean, savedInvStd *ir.Value) {
	op := b.Op("batch_norm_silu", ir.A("epsilon", epsilon, "momentum", momentum), x, scale, bias, runningMean, runningVar)
	return op.Result(0), op.Result(1), op.Result(2), op.Result(3), op.Result(4)
}

// gradBatchNormSilu: the gradients of x, scale and bias through z; the
// running statistics get none, and gradients flowing into the statistics
// results are not supported.
func gradBatchNormSilu(g *GradContext) ([]*ir.Value, error) {
	for j := 1; j < 5; j++ {
		if g.DY[j] != nil {
			return nil, fmt.Errorf("batch_norm_silu: the gradient of result %d (statistics) is not supported; only z is differentiable", j)
		}
	}
	dx := make([]*ir.Value, 5)
	if !g.Need(0) && !g.Need(1) && !g.Need(2) {
		return dx, nil
	}
	op := g.B.Op("batch_norm_silu_grad", nil, g.DY[0], g.X(0), g.X(1), g.X(2), g.Y(3), g.Y(4))
	for i := range 3 {
		if g.Need(i) {
			dx[i] = op.Result(i)
		}
	}
	return dx, nil
}

var bnsGradNames = [...]string{"dz", "x", "scale", "bias", "saved_mean", "saved_inv_std"}

func inferBNSiluGrad(in []ir.Type, _ ir.Attrs) ([]ir.Type, error) {
	if err := wantOperands(in, 6); err != nil {
		return nil, err
	}
	dz, x := in[0], in[1]
	if err := nnWantFloat("x", x); err != nil {
		return nil, err
	}
	if x.Rank() < 2 {
		return nil, fmt.Errorf("x %s must have rank >= 2 (N×C×…)", x)
	}
	ok := dz.DType == x.DType && dz.Rank() == x.Rank()
	for i := 0; ok && i < x.Rank(); i++ {
		ok = nnDimEq(dz.Dims[i], x.Dims[i])
	}
	if !ok {
		return nil, fmt.Errorf("dz %s must have the type of x %s", dz, x)
	}
	ch := x.Dims[1]
	for i := 2; i < 6; i++ {
		p, dt := in[i], x.DType
		if i >= 4 {
			dt = ir.F64
		}
		if p.DType != dt || p.Rank() != 1 || !nnDimEq(p.Dims[0], ch) {
			return nil, fmt.Errorf("%s %s must be 1-D of the %d channels of x %s, of dtype %s", bnsGradNames[i], p, ch, x, dt)
		}
		if ch == ir.Dynamic {
			ch = p.Dims[0]
		}
	}
	return []ir.Type{ir.TensorOf(x.DType, x.Dims...), in[2], in[2]}, nil
}

// bindBNSiluGrad returns batch_norm_silu_grad's kernel: Infer has checked
// the operands' run-time shapes. Its eight float64 per-channel vectors live
// in the workspace.
func bindBNSiluGrad(*ir.Op) (Compute, error) {
	return Compute{
		Fn: func(c *Ctx, in, out []*tensor.Tensor) error {
			dz, x := in[0], in[1]
			xs := x.Shape()
			outer, ch, inner := xs[0], xs[1], nnProd(xs[2:])
			buf := Scratch[float64](c, 8*ch)
			vec := func() []float64 {
				v := buf[:ch:ch]
				buf = buf[ch:]
				return v
			}
			scale, bias := nnFloatsInto(vec(), in[2]), nnFloatsInto(vec(), in[3])
			mean, invStd := in[4].F64(), in[5].F64()
			mul, add, meanT, invStdT, dscale, dbias := vec(), vec(), vec(), vec(), vec(), vec()
			f32 := x.DType() == tensor.F32
			for i := range ch {
				// The forward's factors, and the statistics as batch_norm
				// saves them in x's dtype.
				mul[i] = scale[i] * invStd[i]
				add[i] = bias[i] - mean[i]*mul[i]
				meanT[i], invStdT[i] = mean[i], invStd[i]
				if f32 {
					meanT[i], invStdT[i] = float64(float32(mean[i])), float64(float32(invStd[i]))
				}
			}
			th := nnThreads(c)
			if f32 {
				kernels.BatchNormSiluGrad(dz.F32(), x.F32(), outer, ch, inner, mul, add, scale, meanT, invStdT, out[0].F32(), dscale, dbias, th)
			} else {
				kernels.BatchNormSiluGrad(dz.F64(), x.F64(), outer, ch, inner, mul, add, scale, meanT, invStdT, out[0].F64(), dscale, dbias, th)
			}
			nnSetFloats(out[1], dscale)
			nnSetFloats(out[2], dbias)
			return nil
		},
		Work: func(shapes [][]int, _ int) int64 {
			return WorkBytes(8*shapes[1][1], 8)
		},
		InPlace: [][]int{{0}, nil, nil},
	}, nil
}
