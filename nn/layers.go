package nn

import (
	"fmt"

	"github.com/gopir/gopir/ir"
	"github.com/gopir/gopir/ops"
)

// Linear is y = x·W + b over the last dim of x, with W of shape
// [in, out] and PyTorch's default initialization.
func (m *Module) Linear(b *ir.Builder, name string, x *ir.Value, out int) *ir.Value {
	in, ok := lastDim(b, "Linear "+name, x)
	if !ok {
		return x
	}
	w := m.Param(b, name+".w", FanInUniform{}, true, in, out, in, out)
	bias := m.Param(b, name+".b", FanInUniform{}, true, in, out, out)
	return ops.Add(b, ops.Matmul(b, x, w, false, false), bias)
}

// ConvOpts are the options of Conv2D; zero values mean stride 1, no
// padding, dilation 1, one group, with a bias.
type ConvOpts struct {
	Stride, Pad, Dilation, Groups int
	NoBias                        bool
}

// Conv2D convolves NCHW x with a square kernel into out channels.
func (m *Module) Conv2D(b *ir.Builder, name string, x *ir.Value, out, kernel int, o ConvOpts) *ir.Value {
	t := x.Type()
	if t.Rank() != 4 || t.Dims[1] == ir.Dynamic {
		b.Fail(fmt.Errorf("Conv2D %s: input is %s; want NCHW with a static channel count", name, t))
		return x
	}
	in := t.Dims[1]
	stride, dil, groups := or1(o.Stride), or1(o.Dilation), or1(o.Groups)
	fanIn := in / groups * kernel * kernel
	w := m.Param(b, name+".w", FanInUniform{}, true, fanIn, out/groups*kernel*kernel, out, in/groups, kernel, kernel)
	y := ops.Conv2D(b, x, w, []int{stride, stride}, []int{o.Pad, o.Pad}, []int{dil, dil}, groups)
	if o.NoBias {
		return y
	}
	bias := m.Param(b, name+".b", FanInUniform{}, true, fanIn, 0, out, 1, 1)
	return ops.Add(b, y, bias)
}

// BatchNorm normalizes NC or NCHW x per channel: with batch statistics
// while training (and updates the running statistics in place), with the
// running statistics otherwise. Momentum 0.1 and epsilon 1e-5, as PyTorch.
// With m.SyncBN in a data-parallel job the batch statistics are those of
// every rank's shard together (ops.SyncBatchNorm); otherwise each rank
// normalises with its own shard's, as DDP does by default.
func (m *Module) BatchNorm(b *ir.Builder, name string, x *ir.Value) *ir.Value {
	t := x.Type()
	if t.Rank() < 2 || t.Dims[1] == ir.Dynamic {
		b.Fail(fmt.Errorf("BatchNorm %s: input is %s; want N×C×… with a static channel count", name, t))
		return x
	}
	c := t.Dims[1]
	scale := m.Param(b, name+".scale", Ones, true, c, c, c)
	bias := m.Param(b, name+".bias", Zeros, true, c, c, c)
	mean := m.Param(b, name+".running_mean", Zeros, false, c, c, c)
	variance := m.Param(b, name+".running_var", Ones, false, c, c, c)
	var y, meanOut, varOut *ir.Value
	if m.Training && m.SyncBN && m.Replicas > 1 {
		y, meanOut, varOut, _, _ = ops.SyncBatchNorm(b, x, scale, bias, mean, variance, 1e-5, 0.1)
	} else {
		y, meanOut, varOut, _, _ = ops.BatchNorm(b, x, scale, bias, mean, variance, 1e-5, 0.1, m.Training)
	}
	if m.Training {
		ops.AssignInto(b, mean, meanOut)
		ops.AssignInto(b, variance, varOut)
	}
	return y
}

// LayerNorm normalizes over the last dim of x, with a learned scale and
// bias.
func (m *Module) LayerNorm(b *ir.Builder, name string, x *ir.Value) *ir.Value {
	d, ok := lastDim(b, "LayerNorm "+name, x)
	if !ok {
		return x
	}
	scale := m.Param(b, name+".scale", Ones, true, d, d, d)
	bias := m.Param(b, name+".bias", Zeros, true, d, d, d)
	y, _, _ := ops.LayerNorm(b, x, scale, bias, 1e-5, -1)
	return y
}

// Dropout zeroes elements with probability p while training and is the
// identity otherwise.
func (m *Module) Dropout(b *ir.Builder, x *ir.Value, p float64) *ir.Value {
	if !m.Training || p == 0 {
		return x
	}
	y, _ := ops.Dropout(b, x, p, true, 0)
	return y
}

func lastDim(b *ir.Builder, what string, x *ir.Value) (int, bool) {
	t := x.Type()
	if t.Rank() == 0 || t.Dims[t.Rank()-1] == ir.Dynamic {
		b.Fail(fmt.Errorf("%s: input is %s; want a static last dim", what, t))
		return 0, false
	}
	return t.Dims[t.Rank()-1], true
}

func or1(v int) int {
	if v == 0 {
		return 1
	}
	return v
}
