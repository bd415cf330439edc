package ops

import (
	"errors"
	"fmt"
	"math"

	"github.com/gopir/gopir/ir"
	"github.com/gopir/gopir/kernels"
	"github.com/gopir/gopir/tensor"
)

// Normalisation.
//
//	batch_norm {epsilon, momentum, training, sync}
//	    (x, scale, bias, running_mean, running_var)
//	    -> (y, running_mean_out, running_var_out, saved_mean, saved_inv_std)
//	layer_norm {epsilon, begin_norm_axis} (x, scale, bias) -> (y, mean, inv_std)
//
// batch_norm normalises x of shape N×C×… (NCHW, NC, or any rank >= 2 with
// channels on axis 1) per channel; scale, bias, running_mean and
// running_var are 1-D of size C, all of x's dtype (f32 or f64). epsilon
// defaults to 1e-5, momentum to 0.1, training to true. It is purely
// functional: it never writes its operands.
//
// With training=true it uses the batch statistics (mean and biased
// variance over the N·H·W elements of each channel, in float64):
// y = (x − mean)·saved_inv_std·scale + bias with
// saved_inv_std = 1/√(var + epsilon), saved_mean = mean, and new running
// statistics in fresh tensors, PyTorch's convention:
// running_mean_out = (1−momentum)·running_mean + momentum·mean and
// running_var_out = (1−momentum)·running_var + momentum·var·n/(n−1) (the
// unbiased variance). One value per channel (n = 1) is an error, as in
// PyTorch; with none (n = 0) y is empty, the running statistics are copied
// unchanged, saved_mean is 0 and saved_inv_std 1/√epsilon.
//
// With training and sync=true (default false; synchronized batch norm,
// as torch.nn.SyncBatchNorm) the batch is the union of every rank's x in
// a data-parallel job (ops.Ctx.Comm): each rank sums its elements per
// channel, the sums and counts are summed over the ranks, and so are the
// squared deviations from the resulting mean, so that every rank
// normalises with, and updates its running statistics from, the mean
// and variance of the whole batch (n is then the whole batch's count).
// batch_norm_grad {training, sync} sums Σ dy and Σ dy·x̂ over the ranks
// for dx, while its dscale and dbias stay this rank's sums (the
// optimizer's gradient averaging adds them up). Every rank must run the
// same synchronized batch norms in the same order.
//
// With training=false it uses the running statistics; running_mean_out and
// running_var_out are the operands themselves (views sharing their
// storage, no copy), and so is saved_mean (= running_mean), while
// saved_inv_std = 1/√(running_var + epsilon) is a fresh C-sized tensor. So
// in both modes the saved results are C-sized and hold the mean and
// inverse deviation y was normalised with, which is what the backward
// needs.
//
// The executor allocates the results (Compute); the kernels' float64
// per-channel vectors (batch_norm's statistics, batch_norm_grad's sums)
// come from the workspace.
//
// layer_norm normalises x over its dims [begin_norm_axis, rank) (default
// begin_norm_axis −1: the last dim; negative values count from the end),
// with scale and bias shaped like those dims (x.shape[begin_norm_axis:]):
// y = (x − mean)·inv_std·scale + bias, inv_std = 1/√(var + epsilon)
// (biased variance, epsilon default 1e-5). mean and inv_std have shape
// x.shape[:begin_norm_axis] and x's dtype; statistics are taken in
// float64. With nothing to normalise (a size-0 dim among the normalised
// ones) y is empty, mean is 0 and inv_std 1/√epsilon, batch_norm's rule
// for a channel without values (PyTorch gives an inverse deviation of NaN
// there); the gradient is then empty or zero either way.
//
// Their gradients use two helper ops:
//
//	batch_norm_grad {training} (dy, x, scale, saved_mean, saved_inv_std) -> (dx, dscale, dbias)
//	layer_norm_grad {begin_norm_axis} (dy, x, scale, mean, inv_std) -> (dx, dscale, dbias)
//
// With x̂ = (x − mean)·inv_std, both give dbias = Σ dy and
// dscale = Σ dy·x̂ (over every axis but the channel axis for batch_norm,
// over the leading axes for layer_norm). batch_norm_grad with training
// (the default) differentiates through the batch statistics,
// dx = scale·inv_std·(dy − mean(dy) − x̂·mean(dy·x̂)) per channel; without
// it the statistics are constants and dx = dy·scale·inv_std. For
// layer_norm, with ĝ = dy·scale, dx = inv_std·(ĝ − mean(ĝ) − x̂·mean(ĝ·x̂))
// along each normalised row. Sums are taken in float64. In training mode
// y does not depend on batch_norm's running statistics; in inference mode
// they get −scale·inv_std·dbias (running_mean) and
// −½·scale·inv_std²·dscale (running_var), as an imported inference graph
// needs.

func init() {
	register(&Def{Name: "batch_norm", Infer: inferBatchNorm, Compute: bindBatchNorm, Grad: nnGradBatchNorm, Reads: batchNormReads, Collective: batchNormSynced})
	register(&Def{Name: "layer_norm", Infer: inferLayerNorm, Compute: bindLayerNorm, Grad: nnGradLayerNorm})
	register(&Def{Name: "batch_norm_grad", Grad: noSecondOrder, Infer: nnInferBNGrad, Compute: nnBindBNGrad, Collective: batchNormSynced})
	register(&Def{Name: "layer_norm_grad", Grad: noSecondOrder, Infer: nnInferLNGrad, Compute: nnBindLNGrad})
}

// batchNormSynced: batch_norm and batch_norm_grad in training mode with
// sync take their sums over the ranks.
func batchNormSynced(op *ir.Op) bool {
	training, err := nnBool(op.Attrs, "training", true)
	if err != nil {
		return false
	}
	sync, err := nnBool(op.Attrs, "sync", false)
	return err == nil && training && sync
}

type nnBNAttrs struct {
	eps, momentum  float64
	training, sync bool
}

func nnBNDecode(attrs ir.Attrs) (a nnBNAttrs, err error) {
	if a.eps, err = nnFloat(attrs, "epsilon", 1e-5); err != nil {
		return
	}
	if a.momentum, err = nnFloat(attrs, "momentum", 0.1); err != nil {
		return
	}
	if a.training, err = nnBool(attrs, "training", true); err != nil {
		return
	}
	if a.sync, err = nnBool(attrs, "sync", false); err != nil {
		return
	}
	if a.eps < 0 {
		err = fmt.Errorf("attribute epsilon:%g must be >= 0", a.eps)
	}
	return
}

var nnBNNames = [...]string{"x", "scale", "bias", "running_mean", "running_var"}

// nnBNShape checks batch_norm's operands and returns the channel count
// (Dynamic if unknown).
func nnBNShape(in []ir.Type) (int, error) {
	x := in[0]
	if err := nnWantFloat("x", x); err != nil {
		return 0, err
	}
	if x.Rank() < 2 {
		return 0, fmt.Errorf("x %s must have rank >= 2 (N×C×…)", x)
	}
	ch := x.Dims[1]
	for i := 1; i < 5; i++ {
		p := in[i]
		if err := nnSameDType(nnBNNames[i], p, x.DType, "x", x); err != nil {
			return 0, err
		}
		if p.Rank() != 1 || !nnDimEq(p.Dims[0], ch) {
			return 0, fmt.Errorf("%s %s must be 1-D of the %d channels of x %s", nnBNNames[i], p, ch, x)
		}
		if ch == ir.Dynamic {
			ch = p.Dims[0]
		}
	}
	return ch, nil
}

func inferBatchNorm(in []ir.Type, attrs ir.Attrs) ([]ir.Type, error) {
	if err := wantOperands(in, 5); err != nil {
		return nil, err
	}
	if _, err := nnBNDecode(attrs); err != nil {
		return nil, err
	}
	ch, err := nnBNShape(in)
	if err != nil {
		return nil, err
	}
	x := in[0]
	st := ir.TensorOf(x.DType, ch)
	return []ir.Type{ir.TensorOf(x.DType, x.Dims...), st, st, st, st}, nil
}

// bindBatchNorm returns batch_norm's kernel. Infer has checked the
// operands' run-time shapes and the executor allocates the results; in
// inference mode the running statistics results are views of the
// operands. The float64 per-channel statistics live in the workspace:
// 11 (training) or 7 vectors of C, and with sync one more of C+1 for the
// sums sent to the other ranks.
func bindBatchNorm(op *ir.Op) (Compute, error) {
	a, err := nnBNDecode(op.Attrs)
	if err != nil {
		return Compute{}, err
	}
	return bnCompute(a, false), nil
}

// bnCompute is batch_norm's kernel, and with silu batch_norm_silu's (in
// training mode), which applies SiLU to y as it writes it.
func bnCompute(a nnBNAttrs, silu bool) Compute {
	vecs := 7
	var view []int
	if a.training {
		vecs = 11
	} else {
		view = []int{-1, 3, 4, 3, -1}
	}
	sync := a.training && a.sync
	return Compute{
		Fn: func(c *Ctx, in, out []*tensor.Tensor) error {
			x := in[0]
			xs := x.Shape()
			outer, ch, inner := xs[0], xs[1], nnProd(xs[2:])
			count := outer * inner
			if sync && c.Comm == nil {
				return fmt.Errorf("sync: %w", errNoComm)
			}
			if a.training && count == 1 && !sync {
				return fmt.Errorf("expected more than 1 value per channel when training, got x %s", x.Type())
			}
			buf := Scratch[float64](c, vecs*ch)
			vec := func() []float64 {
				v := buf[:ch:ch]
				buf = buf[ch:]
				return v
			}
			scale, bias := nnFloatsInto(vec(), in[1]), nnFloatsInto(vec(), in[2])
			runMean, runVar := nnFloatsInto(vec(), in[3]), nnFloatsInto(vec(), in[4])
			invStd, mul, add := vec(), vec(), vec()
			th := nnThreads(c)
			mean, variance := runMean, runVar
			switch {
			case sync:
				// The statistics of the whole batch, over every rank.
				mean, variance = vec(), vec()
				sums := Scratch[float64](c, ch+1)
				var err error
				switch x.DType() {
				case tensor.F32:
					count, err = kernels.BatchNormStatsSum(x.F32(), outer, ch, inner, mean, variance, sums, th, c.allReduceF64)
				case tensor.F64:
					count, err = kernels.BatchNormStatsSum(x.F64(), outer, ch, inner, mean, variance, sums, th, c.allReduceF64)
				}
				if err != nil {
					return err
				}
				if count == 1 {
					return errors.New("expected more than 1 value per channel when training, got 1 over every rank")
				}
			case a.training:
				mean, variance = vec(), vec()
				switch x.DType() {
				case tensor.F32:
					kernels.BatchNormStats(x.F32(), outer, ch, inner, mean, variance, th)
				case tensor.F64:
					kernels.BatchNormStats(x.F64(), outer, ch, inner, mean, variance, th)
				}
			}
			bnCoefs(a.eps, scale, bias, mean, variance, invStd, mul, add)
			if a.training {
				newMean, newVar := vec(), vec()
				bnRunning(a.momentum, count, runMean, runVar, mean, variance, newMean, newVar)
				nnSetFloats(out[1], newMean)
				nnSetFloats(out[2], newVar)
				nnSetFloats(out[3], mean)
			}
			nnSetFloats(out[4], invStd)
			switch {
			case silu && x.DType() == tensor.F32:
				kernels.BatchNormSiluApply(x.F32(), out[0].F32(), outer, ch, inner, mul, add, th)
			case silu:
				kernels.BatchNormSiluApply(x.F64(), out[0].F64(), outer, ch, inner, mul, add, th)
			case x.DType() == tensor.F32:
				kernels.BatchNormApply(x.F32(), out[0].F32(), outer, ch, inner, mul, add, th)
			default:
				kernels.BatchNormApply(x.F64(), out[0].F64(), outer, ch, inner, mul, add, th)
			}
			return nil
		},
		Work: func(shapes [][]int, _ int) int64 {
			ch := shapes[0][1]
			if sync {
				return WorkBytes(vecs*ch, 8, ch+1, 8)
			}
			return WorkBytes(vecs*ch, 8)
		},
		View: view,
	}
}

// bnCoefs writes each channel's inverse deviation and the factor and
// term that normalise it (y = x·mul + add), from its mean and variance:
// batch_norm's and batch_norm_finish's arithmetic, one for both.
func bnCoefs(eps float64, scale, bias, mean, variance, invStd, mul, add []float64) {
	for i := range invStd {
		invStd[i] = 1 / math.Sqrt(variance[i]+eps)
		mul[i] = scale[i] * invStd[i]
		add[i] = bias[i] - mean[i]*mul[i]
	}
}

// bnRunning writes the running statistics that a training batch of count
// values per channel leaves (unchanged without values).
func bnRunning(momentum float64, count int, runMean, runVar, mean, variance, newMean, newVar []float64) {
	for i := range newMean {
		newMean[i], newVar[i] = runMean[i], runVar[i]
		if count > 0 {
			unbiased := variance[i] * float64(count) / float64(count-1)
			newMean[i] = (1-momentum)*runMean[i] + momentum*mean[i]
			newVar[i] = (1-momentum)*runVar[i] + momentum*unbiased
		}
	}
}

// nnFloatsInto copies the small float tensor t into dst, of its length,
// and returns dst.
func nnFloatsInto(dst []float64, t *tensor.Tensor) []float64 {
	switch t.DType() {
	case tensor.F32:
		for i, v := range t.F32() {
			dst[i] = float64(v)
		}
	case tensor.F64:
		copy(dst, t.F64())
	default:
		for i := range dst {
			dst[i] = t.Float64At(i)
		}
	}
	return dst
}

// nnSetFloats writes v into the float tensor t.
func nnSetFloats(t *tensor.Tensor, v []float64) {
	switch t.DType() {
	case tensor.F32:
		for i, x := range v {
			t.F32()[i] = float32(x)
		}
	case tensor.F64:
		copy(t.F64(), v)
	}
}

// BatchNorm appends a batch normalisation of x (N×C×…) and returns its five
// results: y, the new running mean and variance, and the saved mean and
// inverse standard deviation.
func BatchNorm(b *ir.Builder, x, scale, bias, runningMean, runningVar *ir.Value, epsilon, momentum float64, training bool) (y, meanOut, varOut, savedMean, savedInvStd *ir.Value) {
	op := b.Op("batch_norm", ir.A("epsilon", epsilon, "momentum", momentum, "training", training),
		x, scale, bias, runningMean, runningVar)
	return op.Result(0), op.Result(1), op.Result(2), op.Result(3), op.Result(4)
}

// SyncBatchNorm is BatchNorm in training mode with sync: the statistics
// are those of the batch of every rank of a data-parallel job.
func SyncBatchNorm(b *ir.Builder, x, scale, bias, runningMean, runningVar *ir.Value, epsilon, momentum float64) (y, meanOut, varOut, savedMean, savedInvStd *ir.Value) {
	op := b.Op("batch_norm", ir.A("epsilon", epsilon, "momentum", momentum, "training", true, "sync", true),
		x, scale, bias, runningMean, runningVar)
	return op.Result(0), op.Result(1), op.Result(2), op.Result(3), op.Result(4)
}

// nnLNShape checks layer_norm's operands and returns the normalised axis.
func nnLNShape(in []ir.Type, begin int) (int, error) {
	x := in[0]
	if err := nnWantFloat("x", x); err != nil {
		return 0, err
	}
	axis, err := normAxis(begin, x.Rank())
	if err != nil || x.Rank() == 0 {
		return 0, fmt.Errorf("begin_norm_axis %d is out of range for x %s", begin, x)
	}
	norm := x.Dims[axis:]
	for i, name := range []string{"scale", "bias"} {
		p := in[1+i]
		if err := nnSameDType(name, p, x.DType, "x", x); err != nil {
			return 0, err
		}
		ok := p.Rank() == len(norm)
		for j := 0; ok && j < len(norm); j++ {
			ok = nnDimEq(p.Dims[j], norm[j])
		}
		if !ok {
			return 0, fmt.Errorf("%s %s must have the normalised dims %s of x %s", name, p, dimsString(norm), x)
		}
	}
	return axis, nil
}

func inferLayerNorm(in []ir.Type, attrs ir.Attrs) ([]ir.Type, error) {
	if err := wantOperands(in, 3); err != nil {
		return nil, err
	}
	_, begin, err := nnLNDecode(attrs)
	if err != nil {
		return nil, err
	}
	axis, err := nnLNShape(in, begin)
	if err != nil {
		return nil, err
	}
	x := in[0]
	st := ir.TensorOf(x.DType, x.Dims[:axis]...)
	return []ir.Type{ir.TensorOf(x.DType, x.Dims...), st, st}, nil
}

func nnLNDecode(attrs ir.Attrs) (eps float64, begin int, err error) {
	if eps, err = nnFloat(attrs, "epsilon", 1e-5); err != nil {
		return
	}
	if eps < 0 {
		return eps, 0, fmt.Errorf("attribute epsilon:%g must be >= 0", eps)
	}
	begin, err = nnInt(attrs, "begin_norm_axis", -1)
	return
}

// bindLayerNorm returns layer_norm's kernel: Infer has checked the
// operands' run-time shapes.
func bindLayerNorm(op *ir.Op) (Compute, error) {
	eps, begin, err := nnLNDecode(op.Attrs)
	if err != nil {
		return Compute{}, err
	}
	return Compute{Fn: func(c *Ctx, in, out []*tensor.Tensor) error {
		x := in[0]
		axis, err := normAxis(begin, x.Rank())
		if err != nil {
			return err
		}
		rows, cols := nnProd(x.Shape()[:axis]), nnProd(x.Shape()[axis:])
		th := nnThreads(c)
		switch x.DType() {
		case tensor.F32:
			kernels.LayerNorm(x.F32(), in[1].F32(), in[2].F32(), out[0].F32(), out[1].F32(), out[2].F32(), rows, cols, eps, th)
		case tensor.F64:
			kernels.LayerNorm(x.F64(), in[1].F64(), in[2].F64(), out[0].F64(), out[1].F64(), out[2].F64(), rows, cols, eps, th)
		}
		return nil
	}}, nil
}

// LayerNorm appends a layer normalisation of x over its dims from
// beginNormAxis on and returns y, mean and inv_std.
func LayerNorm(b *ir.Builder, x, scale, bias *ir.Value, epsilon float64, beginNormAxis int) (y, mean, invStd *ir.Value) {
	op := b.Op("layer_norm", ir.A("epsilon", epsilon, "begin_norm_axis", beginNormAxis), x, scale, bias)
	return op.Result(0), op.Result(1), op.Result(2)
}

// nnGradBatchNorm: the gradients of x, scale and bias through y; the
// running statistics get none, and gradients flowing into the statistics
// results are not supported.
func nnGradBatchNorm(g *GradContext) ([]*ir.Value, error) {
	for j := 1; j < 5; j++ {
		if g.DY[j] != nil {
			return nil, fmt.Errorf("batch_norm: the gradient of result %d (statistics) is not supported; only y is differentiable", j)
		}
	}
	dx := make([]*ir.Value, 5)
	a, err := nnBNDecode(g.Op.Attrs)
	if err != nil {
		return nil, err
	}
	// In training mode y does not depend on the running statistics; in
	// inference mode it does, through mean and 1/√(var + ε).
	stats := !a.training && (g.Need(3) || g.Need(4))
	if !g.Need(0) && !g.Need(1) && !g.Need(2) && !stats {
		return dx, nil
	}
	attrs := ir.A("training", a.training)
	if a.sync && a.training {
		attrs = attrs.With("sync", ir.Bool(true))
	}
	op := g.B.Op("batch_norm_grad", attrs, g.DY[0], g.X(0), g.X(1), g.Y(3), g.Y(4))
	for i := range 3 {
		if g.Need(i) {
			dx[i] = op.Result(i)
		}
	}
	if stats {
		// y = (x−m)·r·s + b with r = (v+ε)^(−1/2): ∂/∂m = −s·r·Σdy =
		// −s·r·dbias, and ∂/∂v = −½·s·r²·Σdy·(x−m)·r = −½·s·r²·dscale.
		sr := Multiply(g.B, g.X(1), g.Y(4))
		if g.Need(3) {
			dx[3] = Neg(g.B, Multiply(g.B, sr, op.Result(2)))
		}
		if g.Need(4) {
			dx[4] = Multiply(g.B, Scale(g.B, Multiply(g.B, sr, g.Y(4)), -0.5, 0), op.Result(1))
		}
	}
	return dx, nil
}

// nnGradLayerNorm: the gradients of x, scale and bias through y; gradients
// flowing into mean and inv_std are not supported.
func nnGradLayerNorm(g *GradContext) ([]*ir.Value, error) {
	if g.DY[1] != nil || g.DY[2] != nil {
		return nil, fmt.Errorf("layer_norm: the gradient of mean and inv_std is not supported; only y is differentiable")
	}
	dx := make([]*ir.Value, 3)
	if !g.Need(0) && !g.Need(1) && !g.Need(2) {
		return dx, nil
	}
	_, begin, err := nnLNDecode(g.Op.Attrs)
	if err != nil {
		return nil, err
	}
	op := g.B.Op("layer_norm_grad", ir.A("begin_norm_axis", begin), g.DY[0], g.X(0), g.X(1), g.Y(1), g.Y(2))
	for i := range 3 {
		if g.Need(i) {
			dx[i] = op.Result(i)
		}
	}
	return dx, nil
}

// nnNormGradCheck checks the operands (dy, x, scale, mean, inv_std) of
// batch_norm_grad (bn) or layer_norm_grad, shared by Infer and the kernel.
// It returns the normalised axis of layer_norm_grad.
func nnNormGradCheck(bn bool, in []ir.Type, attrs ir.Attrs) (int, error) {
	if err := wantOperands(in, 5); err != nil {
		return 0, err
	}
	dy, x := in[0], in[1]
	if err := nnWantFloat("dy", dy); err != nil {
		return 0, err
	}
	ok := dy.Rank() == x.Rank()
	for i := 0; ok && i < x.Rank(); i++ {
		ok = nnDimEq(dy.Dims[i], x.Dims[i])
	}
	if !ok {
		return 0, fmt.Errorf("dy %s must have the shape of x %s", dy, x)
	}
	if bn {
		if _, err := nnBool(attrs, "training", true); err != nil {
			return 0, err
		}
		if err := nnWantFloat("x", x); err != nil {
			return 0, err
		}
		if dy.DType != x.DType {
			return 0, fmt.Errorf("dy %s must have the dtype of x %s", dy, x)
		}
		if x.Rank() < 2 {
			return 0, fmt.Errorf("x %s must have rank >= 2 (N×C×…)", x)
		}
		ch := x.Dims[1]
		for i, name := range []string{"scale", "saved_mean", "saved_inv_std"} {
			p := in[2+i]
			if p.DType != x.DType || p.Rank() != 1 || !nnDimEq(p.Dims[0], ch) {
				return 0, fmt.Errorf("%s %s must be 1-D of the %d channels of x %s, of its dtype", name, p, ch, x)
			}
			if ch == ir.Dynamic {
				ch = p.Dims[0]
			}
		}
		return 0, nil
	}
	begin, err := nnInt(attrs, "begin_norm_axis", -1)
	if err != nil {
		return 0, err
	}
	axis, err := nnLNShape([]ir.Type{x, in[2], in[2]}, begin)
	if err != nil {
		return 0, err
	}
	if dy.DType != x.DType {
		return 0, fmt.Errorf("dy %s must have the dtype of x %s", dy, x)
	}
	for i, name := range []string{"mean", "inv_std"} {
		st := in[3+i]
		ok := st.DType == x.DType && st.Rank() == axis
		for j := 0; ok && j < axis; j++ {
			ok = nnDimEq(st.Dims[j], x.Dims[j])
		}
		if !ok {
			return 0, fmt.Errorf("%s %s must have x's dtype and leading dims %s", name, st, dimsString(x.Dims[:axis]))
		}
	}
	return axis, nil
}

func nnInferBNGrad(in []ir.Type, attrs ir.Attrs) ([]ir.Type, error) {
	if _, err := nnNormGradCheck(true, in, attrs); err != nil {
		return nil, err
	}
	x := in[1]
	return []ir.Type{ir.TensorOf(x.DType, x.Dims...), in[2], in[2]}, nil
}

// nnBindBNGrad returns batch_norm_grad's kernel: Infer has checked the
// operands' run-time shapes. The float64 per-channel vectors (scale, mean,
// inv_std, dscale, dbias) live in the workspace. dx may take over dy's or
// x's buffer when it dies here (Compute.InPlace): kernels.BatchNormGrad
// sums over dy and x first, then writes each dx[i] from dy[i] and x[i].
func nnBindBNGrad(op *ir.Op) (Compute, error) {
	training, err := nnBool(op.Attrs, "training", true)
	if err != nil {
		return Compute{}, err
	}
	sync, err := nnBool(op.Attrs, "sync", false)
	if err != nil {
		return Compute{}, err
	}
	sync = sync && training
	return Compute{
		Fn: func(c *Ctx, in, out []*tensor.Tensor) error {
			if sync && c.Comm == nil {
				return fmt.Errorf("sync: %w", errNoComm)
			}
			dy, x := in[0], in[1]
			xs := x.Shape()
			outer, ch, inner := xs[0], xs[1], nnProd(xs[2:])
			buf := Scratch[float64](c, 5*ch)
			scale := nnFloatsInto(buf[0*ch:1*ch:1*ch], in[2])
			mean := nnFloatsInto(buf[1*ch:2*ch:2*ch], in[3])
			invStd := nnFloatsInto(buf[2*ch:3*ch:3*ch], in[4])
			dscale, dbias := buf[3*ch:4*ch:4*ch], buf[4*ch:5*ch:5*ch]
			th := nnThreads(c)
			var err error
			switch {
			case sync && x.DType() == tensor.F32:
				err = kernels.BatchNormGradSum(dy.F32(), x.F32(), outer, ch, inner, scale, mean, invStd, out[0].F32(), dscale, dbias, Scratch[float64](c, 2*ch+1), th, c.allReduceF64)
			case sync:
				err = kernels.BatchNormGradSum(dy.F64(), x.F64(), outer, ch, inner, scale, mean, invStd, out[0].F64(), dscale, dbias, Scratch[float64](c, 2*ch+1), th, c.allReduceF64)
			case x.DType() == tensor.F32:
				kernels.BatchNormGrad(dy.F32(), x.F32(), outer, ch, inner, scale, mean, invStd, training, out[0].F32(), dscale, dbias, th)
			default:
				kernels.BatchNormGrad(dy.F64(), x.F64(), outer, ch, inner, scale, mean, invStd, training, out[0].F64(), dscale, dbias, th)
			}
			if err != nil {
				return err
			}
			nnSetFloats(out[1], dscale)
			nnSetFloats(out[2], dbias)
			return nil
		},
		Work: func(shapes [][]int, _ int) int64 {
			ch := shapes[1][1]
			if sync {
				return WorkBytes(5*ch, 8, 2*ch+1, 8)
			}
			return WorkBytes(5*ch, 8)
		},
		InPlace: [][]int{{0, 1}, nil, nil},
	}, nil
}

func nnInferLNGrad(in []ir.Type, attrs ir.Attrs) ([]ir.Type, error) {
	if _, err := nnNormGradCheck(false, in, attrs); err != nil {
		return nil, err
	}
	x := in[1]
	return []ir.Type{ir.TensorOf(x.DType, x.Dims...), in[2], in[2]}, nil
}

// nnBindLNGrad returns layer_norm_grad's kernel: Infer has checked the
// operands' run-time shapes.
func nnBindLNGrad(op *ir.Op) (Compute, error) {
	begin, err := nnInt(op.Attrs, "begin_norm_axis", -1)
	if err != nil {
		return Compute{}, err
	}
	return Compute{Fn: func(c *Ctx, in, out []*tensor.Tensor) error {
		dy, x := in[0], in[1]
		axis, err := normAxis(begin, x.Rank())
		if err != nil {
			return err
		}
		rows, cols := nnProd(x.Shape()[:axis]), nnProd(x.Shape()[axis:])
		th := nnThreads(c)
		switch x.DType() {
		case tensor.F32:
			kernels.LayerNormGrad(dy.F32(), x.F32(), in[2].F32(), in[3].F32(), in[4].F32(), rows, cols, out[0].F32(), out[1].F32(), out[2].F32(), th)
		case tensor.F64:
			kernels.LayerNormGrad(dy.F64(), x.F64(), in[2].F64(), in[3].F64(), in[4].F64(), rows, cols, out[0].F64(), out[1].F64(), out[2].F64(), th)
		}
		return nil
	}}, nil
}
