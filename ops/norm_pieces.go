package ops

import (
	"errors"
	"fmt"

	"github.com/gopir/gopir/ir"
	"github.com/gopir/gopir/kernels"
	"github.com/gopir/gopir/tensor"
)

// Batch norm in pieces of the batch: what remat's split over the batch
// (docs/memory.md) runs in place of a training batch_norm and its
// batch_norm_grad when a split crosses them, so that the step keeps one
// piece of the batch alive at a time and still computes the whole batch's
// bits. The statistics are sums over the batch; their states carry each
// channel's float64 lanes from piece to piece (kernels.BatchNormSumInto),
// continuing the whole-batch kernels' additions exactly:
//
//	batch_norm_sum_acc (acc, x) -> acc'                  Σx per channel, in lanes, and the count
//	batch_norm_sqdev_acc (acc, x, sums) -> acc'          Σ(x − mean)², mean from sums
//	batch_norm_finish {epsilon, momentum} (sums, sqdevs, scale, bias, running_mean, running_var)
//	    -> (running_mean_out, running_var_out, saved_mean, saved_inv_std, coef)
//	batch_norm_apply (x, coef) -> y                      y = x·coef[0][c] + coef[1][c]
//	batch_norm_grad_sum_acc (acc, dy, x, saved_mean) -> acc'   Σdy and Σdy·(x − mean)
//	batch_norm_grad_finish (acc, saved_inv_std) -> (dscale, dbias)
//	batch_norm_grad_x (dy, x, scale, saved_mean, saved_inv_std, acc) -> dx
//
// x is N×C×… as for batch_norm; a statistics state is f64 C×33
// (kernels.BNStatsWidth), a gradient state f64 C×65 (kernels.BNGradWidth),
// both starting from zeros; coef is f64 2×C, the factor and term that
// batch_norm's kernel normalises with (in float64: saved_mean and
// saved_inv_std are rounded to x's dtype). batch_norm_finish's results are
// batch_norm's (training) statistics results, batch_norm_apply's y its y,
// batch_norm_grad_finish's and batch_norm_grad_x's results
// batch_norm_grad's (training) dscale, dbias and dx, to the bit. The
// accumulating ops' result takes over acc's buffer when acc dies there.
// They are made by rematerialization after autodiff: their Grad says so.

// BNStatsWidth and BNGradWidth are a channel's share of a statistics
// state and of a gradient-sums state (their second dim).
const (
	BNStatsWidth = kernels.BNStatsWidth
	BNGradWidth  = kernels.BNGradWidth
)

func init() {
	register(&Def{Name: "batch_norm_sum_acc", Infer: inferBNSumAcc, Compute: bindBNSumAcc, Grad: bnPieceNoGrad})
	register(&Def{Name: "batch_norm_sqdev_acc", Infer: inferBNSqDevAcc, Compute: bindBNSqDevAcc, Grad: bnPieceNoGrad})
	register(&Def{Name: "batch_norm_finish", Infer: inferBNFinish, Compute: bindBNFinish, Grad: bnPieceNoGrad})
	register(&Def{Name: "batch_norm_apply", Infer: inferBNApply, Compute: bindBNApply, Grad: bnPieceNoGrad, PerSample: perSampleFirst})
	register(&Def{Name: "batch_norm_grad_sum_acc", Infer: inferBNGradSumAcc, Compute: bindBNGradSumAcc, Grad: bnPieceNoGrad})
	register(&Def{Name: "batch_norm_grad_finish", Infer: inferBNGradFinish, Compute: bindBNGradFinish, Grad: bnPieceNoGrad})
	register(&Def{Name: "batch_norm_grad_x", Infer: inferBNGradX, Compute: bindBNGradX, Grad: bnPieceNoGrad, PerSample: perSampleTwo})
}

// errBNPieceGrad: batch norm's pieces are made by rematerialization, after
// the gradient program was built.
var errBNPieceGrad = errors.New("not implemented: the gradient of batch norm's pieces (remat makes these after autodiff)")

func bnPieceNoGrad(*GradContext) ([]*ir.Value, error) { return nil, errBNPieceGrad }

// perSampleTwo: an op whose first two operands carry the batch and whose
// others do not (batch_norm_grad_x).
func perSampleTwo(op *ir.Op, batch func(*ir.Value) bool) bool {
	for i, v := range op.Operands() {
		if batch(v) != (i < 2) {
			return false
		}
	}
	return op.NumOperands() > 2
}

// bnChannels checks that x is a float N×C×… batch and returns C.
func bnChannels(what string, x ir.Type) (int, error) {
	if err := nnWantFloat(what, x); err != nil {
		return 0, err
	}
	if x.Rank() < 2 {
		return 0, fmt.Errorf("%s %s must have rank >= 2 (N×C×…)", what, x)
	}
	return x.Dims[1], nil
}

// bnWantState checks that st is an f64 state of ch channels, width wide.
func bnWantState(what string, st ir.Type, ch, width int) error {
	if st.DType != ir.F64 || st.Rank() != 2 || !nnDimEq(st.Dims[0], ch) || !nnDimEq(st.Dims[1], width) {
		return fmt.Errorf("%s %s must be f64 of %d channels × %d", what, st, ch, width)
	}
	return nil
}

// bnWantVec checks that v is 1-D of ch values of dtype dt.
func bnWantVec(what string, v ir.Type, ch int, dt ir.DType) error {
	if v.DType != dt || v.Rank() != 1 || !nnDimEq(v.Dims[0], ch) {
		return fmt.Errorf("%s %s must be 1-D of the %d channels, %s", what, v, ch, dt)
	}
	return nil
}

// bnShape is x's shape as outer×ch×inner.
func bnShape(x *tensor.Tensor) (outer, ch, inner int) {
	xs := x.Shape()
	return xs[0], xs[1], nnProd(xs[2:])
}

func inferBNSumAcc(in []ir.Type, _ ir.Attrs) ([]ir.Type, error) {
	if err := wantOperands(in, 2); err != nil {
		return nil, err
	}
	ch, err := bnChannels("x", in[1])
	if err != nil {
		return nil, err
	}
	if err := bnWantState("acc", in[0], ch, kernels.BNStatsWidth); err != nil {
		return nil, err
	}
	return []ir.Type{in[0]}, nil
}

func inferBNSqDevAcc(in []ir.Type, _ ir.Attrs) ([]ir.Type, error) {
	if err := wantOperands(in, 3); err != nil {
		return nil, err
	}
	if _, err := inferBNSumAcc(in[:2], nil); err != nil {
		return nil, err
	}
	if err := bnWantState("sums", in[2], in[1].Dims[1], kernels.BNStatsWidth); err != nil {
		return nil, err
	}
	return []ir.Type{in[0]}, nil
}

func bindBNSumAcc(*ir.Op) (Compute, error) {
	return Compute{
		Fn: func(c *Ctx, in, out []*tensor.Tensor) error {
			acc, x, y := in[0], in[1], out[0]
			outer, ch, inner := bnShape(x)
			accStart(c, y, acc)
			switch x.DType() {
			case tensor.F32:
				kernels.BatchNormSumInto(x.F32(), outer, ch, inner, y.F64(), nnThreads(c))
			default:
				kernels.BatchNormSumInto(x.F64(), outer, ch, inner, y.F64(), nnThreads(c))
			}
			return nil
		},
		InPlace: [][]int{{0}},
	}, nil
}

func bindBNSqDevAcc(*ir.Op) (Compute, error) {
	return Compute{
		Fn: func(c *Ctx, in, out []*tensor.Tensor) error {
			acc, x, sums, y := in[0], in[1], in[2], out[0]
			outer, ch, inner := bnShape(x)
			mean := Scratch[float64](c, ch)
			kernels.BatchNormMeanOf(sums.F64(), ch, mean)
			accStart(c, y, acc)
			switch x.DType() {
			case tensor.F32:
				kernels.BatchNormSqDevInto(x.F32(), outer, ch, inner, mean, y.F64(), nnThreads(c))
			default:
				kernels.BatchNormSqDevInto(x.F64(), outer, ch, inner, mean, y.F64(), nnThreads(c))
			}
			return nil
		},
		Work:    func(shapes [][]int, _ int) int64 { return WorkBytes(shapes[1][1], 8) },
		InPlace: [][]int{{0}},
	}, nil
}

func inferBNFinish(in []ir.Type, attrs ir.Attrs) ([]ir.Type, error) {
	if err := wantOperands(in, 6); err != nil {
		return nil, err
	}
	if _, err := nnBNDecode(attrs); err != nil {
		return nil, err
	}
	if in[0].Rank() != 2 {
		return nil, fmt.Errorf("sums %s must be f64 of channels × %d", in[0], kernels.BNStatsWidth)
	}
	ch := in[0].Dims[0]
	for i, name := range []string{"sums", "sqdevs"} {
		if err := bnWantState(name, in[i], ch, kernels.BNStatsWidth); err != nil {
			return nil, err
		}
	}
	dt := in[2].DType
	if !dt.IsFloat() {
		return nil, fmt.Errorf("scale %s must be f32 or f64", in[2])
	}
	for i, name := range []string{"scale", "bias", "running_mean", "running_var"} {
		if err := bnWantVec(name, in[2+i], ch, dt); err != nil {
			return nil, err
		}
		if ch == ir.Dynamic {
			ch = in[2+i].Dims[0]
		}
	}
	st := ir.TensorOf(dt, ch)
	return []ir.Type{st, st, st, st, ir.TensorOf(ir.F64, 2, ch)}, nil
}

// bindBNFinish: batch_norm's arithmetic after its statistics (bnCoefs,
// bnRunning), and its refusal of one value per channel.
func bindBNFinish(op *ir.Op) (Compute, error) {
	a, err := nnBNDecode(op.Attrs)
	if err != nil {
		return Compute{}, err
	}
	return Compute{
		Fn: func(c *Ctx, in, out []*tensor.Tensor) error {
			ch := in[0].Shape()[0]
			buf := Scratch[float64](c, 9*ch)
			vec := func() []float64 {
				v := buf[:ch:ch]
				buf = buf[ch:]
				return v
			}
			mean, variance, invStd := vec(), vec(), vec()
			count := kernels.BatchNormStatsOf(in[0].F64(), in[1].F64(), ch, mean, variance)
			if count == 1 {
				return errors.New("expected more than 1 value per channel when training, got 1")
			}
			scale, bias := nnFloatsInto(vec(), in[2]), nnFloatsInto(vec(), in[3])
			runMean, runVar := nnFloatsInto(vec(), in[4]), nnFloatsInto(vec(), in[5])
			coef := out[4].F64()
			bnCoefs(a.eps, scale, bias, mean, variance, invStd, coef[:ch], coef[ch:])
			newMean, newVar := vec(), vec()
			bnRunning(a.momentum, count, runMean, runVar, mean, variance, newMean, newVar)
			nnSetFloats(out[0], newMean)
			nnSetFloats(out[1], newVar)
			nnSetFloats(out[2], mean)
			nnSetFloats(out[3], invStd)
			return nil
		},
		Work: func(shapes [][]int, _ int) int64 { return WorkBytes(9*shapes[0][0], 8) },
	}, nil
}

func inferBNApply(in []ir.Type, _ ir.Attrs) ([]ir.Type, error) {
	if err := wantOperands(in, 2); err != nil {
		return nil, err
	}
	ch, err := bnChannels("x", in[0])
	if err != nil {
		return nil, err
	}
	if c := in[1]; c.DType != ir.F64 || c.Rank() != 2 || !nnDimEq(c.Dims[0], 2) || !nnDimEq(c.Dims[1], ch) {
		return nil, fmt.Errorf("coef %s must be f64 of 2 × the %d channels of x %s", c, ch, in[0])
	}
	return []ir.Type{in[0]}, nil
}

func bindBNApply(*ir.Op) (Compute, error) {
	return Compute{Fn: func(c *Ctx, in, out []*tensor.Tensor) error {
		x, coef := in[0], in[1].F64()
		outer, ch, inner := bnShape(x)
		switch x.DType() {
		case tensor.F32:
			kernels.BatchNormApply(x.F32(), out[0].F32(), outer, ch, inner, coef[:ch], coef[ch:], nnThreads(c))
		default:
			kernels.BatchNormApply(x.F64(), out[0].F64(), outer, ch, inner, coef[:ch], coef[ch:], nnThreads(c))
		}
		return nil
	}, InPlace: [][]int{{0}}}, nil
}

func inferBNGradSumAcc(in []ir.Type, _ ir.Attrs) ([]ir.Type, error) {
	if err := wantOperands(in, 4); err != nil {
		return nil, err
	}
	dy, x := in[1], in[2]
	ch, err := bnChannels("x", x)
	if err != nil {
		return nil, err
	}
	if err := bnSameBatch(dy, x); err != nil {
		return nil, err
	}
	if err := bnWantState("acc", in[0], ch, kernels.BNGradWidth); err != nil {
		return nil, err
	}
	if err := bnWantVec("saved_mean", in[3], ch, x.DType); err != nil {
		return nil, err
	}
	return []ir.Type{in[0]}, nil
}

// bnSameBatch checks that dy has x's shape and dtype.
func bnSameBatch(dy, x ir.Type) error {
	ok := dy.DType == x.DType && dy.Rank() == x.Rank()
	for i := 0; ok && i < x.Rank(); i++ {
		ok = nnDimEq(dy.Dims[i], x.Dims[i])
	}
	if !ok {
		return fmt.Errorf("dy %s must have the shape and dtype of x %s", dy, x)
	}
	return nil
}

func bindBNGradSumAcc(*ir.Op) (Compute, error) {
	return Compute{
		Fn: func(c *Ctx, in, out []*tensor.Tensor) error {
			acc, dy, x, y := in[0], in[1], in[2], out[0]
			outer, ch, inner := bnShape(x)
			mean := nnFloatsInto(Scratch[float64](c, ch), in[3])
			accStart(c, y, acc)
			switch x.DType() {
			case tensor.F32:
				kernels.BatchNormGradSumInto(dy.F32(), x.F32(), outer, ch, inner, mean, y.F64(), nnThreads(c))
			default:
				kernels.BatchNormGradSumInto(dy.F64(), x.F64(), outer, ch, inner, mean, y.F64(), nnThreads(c))
			}
			return nil
		},
		Work:    func(shapes [][]int, _ int) int64 { return WorkBytes(shapes[2][1], 8) },
		InPlace: [][]int{{0}},
	}, nil
}

func inferBNGradFinish(in []ir.Type, _ ir.Attrs) ([]ir.Type, error) {
	if err := wantOperands(in, 2); err != nil {
		return nil, err
	}
	is := in[1]
	if !is.DType.IsFloat() || is.Rank() != 1 {
		return nil, fmt.Errorf("saved_inv_std %s must be 1-D, f32 or f64", is)
	}
	if err := bnWantState("acc", in[0], is.Dims[0], kernels.BNGradWidth); err != nil {
		return nil, err
	}
	return []ir.Type{is, is}, nil
}

func bindBNGradFinish(*ir.Op) (Compute, error) {
	return Compute{
		Fn: func(c *Ctx, in, out []*tensor.Tensor) error {
			ch := in[1].Len()
			buf := Scratch[float64](c, 3*ch)
			invStd := nnFloatsInto(buf[:ch:ch], in[1])
			dscale, dbias := buf[ch:2*ch:2*ch], buf[2*ch:]
			kernels.BatchNormGradSumsOf(in[0].F64(), ch, invStd, dscale, dbias)
			nnSetFloats(out[0], dscale)
			nnSetFloats(out[1], dbias)
			return nil
		},
		Work: func(shapes [][]int, _ int) int64 { return WorkBytes(3*shapes[1][0], 8) },
	}, nil
}

func inferBNGradX(in []ir.Type, _ ir.Attrs) ([]ir.Type, error) {
	if err := wantOperands(in, 6); err != nil {
		return nil, err
	}
	dy, x := in[0], in[1]
	ch, err := bnChannels("x", x)
	if err != nil {
		return nil, err
	}
	if err := bnSameBatch(dy, x); err != nil {
		return nil, err
	}
	for i, name := range []string{"scale", "saved_mean", "saved_inv_std"} {
		if err := bnWantVec(name, in[2+i], ch, x.DType); err != nil {
			return nil, err
		}
	}
	if err := bnWantState("acc", in[5], ch, kernels.BNGradWidth); err != nil {
		return nil, err
	}
	return []ir.Type{x}, nil
}

// bindBNGradX: batch_norm_grad's dx from the whole batch's sums; dx may
// take over dy's or x's buffer when it dies here, as batch_norm_grad's.
func bindBNGradX(*ir.Op) (Compute, error) {
	return Compute{
		Fn: func(c *Ctx, in, out []*tensor.Tensor) error {
			dy, x := in[0], in[1]
			outer, ch, inner := bnShape(x)
			buf := Scratch[float64](c, 5*ch)
			scale := nnFloatsInto(buf[0*ch:1*ch:1*ch], in[2])
			mean := nnFloatsInto(buf[1*ch:2*ch:2*ch], in[3])
			invStd := nnFloatsInto(buf[2*ch:3*ch:3*ch], in[4])
			dscale, dbias := buf[3*ch:4*ch:4*ch], buf[4*ch:5*ch:5*ch]
			count := kernels.BatchNormGradSumsOf(in[5].F64(), ch, invStd, dscale, dbias)
			switch x.DType() {
			case tensor.F32:
				kernels.BatchNormGradX(dy.F32(), x.F32(), outer, ch, inner, scale, mean, invStd, dscale, dbias, count, out[0].F32(), nnThreads(c))
			default:
				kernels.BatchNormGradX(dy.F64(), x.F64(), outer, ch, inner, scale, mean, invStd, dscale, dbias, count, out[0].F64(), nnThreads(c))
			}
			return nil
		},
		Work:    func(shapes [][]int, _ int) int64 { return WorkBytes(5*shapes[1][1], 8) },
		InPlace: [][]int{{0, 1}},
	}, nil
}
