package ppyoloe

import (
	"fmt"

	"github.com/gopir/gopir/ir"
	"github.com/gopir/gopir/nn"
	"github.com/gopir/gopir/ops"
)

// net appends the network's layers to b, declaring their parameters in m
// under PyTorch's state_dict names (see the twin in bench/peers/ppyoloe),
// so that one safetensors file serves both.
type net struct {
	b *ir.Builder
	m *nn.Module
	// deploy builds the inference form: every conv + batch norm is one
	// convolution with a bias ("NAME.fused.*") and every RepVGG block one
	// 3×3 convolution ("NAME.deploy.*"); Reparameterize computes their
	// weights from the training form's. Only for evaluation programs.
	deploy bool
}

// conv appends a square convolution with padding k/2 and parameters
// name.weight [out,in,k,k] and, with bias, name.bias [out].
func (n *net) conv(name string, x *ir.Value, out, k, stride int, bias bool, w, bi nn.Init) *ir.Value {
	t := x.Type()
	if t.Rank() != 4 || t.Dims[1] == ir.Dynamic {
		n.b.Fail(fmt.Errorf("ppyoloe: conv %s: input is %s, want NCHW with static channels", name, t))
		return x
	}
	in := t.Dims[1]
	weight := n.m.Param(n.b, name+".weight", w, true, in*k*k, out*k*k, out, in, k, k)
	y := ops.Conv2D(n.b, x, weight, []int{stride, stride}, []int{k / 2, k / 2}, []int{1, 1}, 1)
	if !bias {
		return y
	}
	bv := n.m.Param(n.b, name+".bias", bi, true, in*k*k, 0, out)
	return ops.Add(n.b, y, ops.Reshape(n.b, bv, out, 1, 1))
}

// batchNorm normalizes x per channel: batch statistics while training (the
// running statistics updated in place, momentum 0.1), running statistics
// otherwise; epsilon 1e-5. PyTorch's BatchNorm2d with its parameter names.
// With silu, SiLU follows: while training as one op (batch_norm_silu,
// whose backward keeps x and the result but not the normalised values).
func (n *net) batchNorm(name string, x *ir.Value, silu bool) *ir.Value {
	c := x.Type().Dims[1]
	scale := n.m.Param(n.b, name+".weight", nn.Ones, true, c, c, c)
	bias := n.m.Param(n.b, name+".bias", nn.Zeros, true, c, c, c)
	mean := n.m.Param(n.b, name+".running_mean", nn.Zeros, false, c, c, c)
	variance := n.m.Param(n.b, name+".running_var", nn.Ones, false, c, c, c)
	var y, meanOut, varOut *ir.Value
	switch {
	case silu && n.m.Training:
		y, meanOut, varOut, _, _ = ops.BatchNormSilu(n.b, x, scale, bias, mean, variance, bnEpsilon, bnMomentum)
	case silu:
		y, _, _, _, _ = ops.BatchNorm(n.b, x, scale, bias, mean, variance, bnEpsilon, bnMomentum, false)
		y = ops.Silu(n.b, y)
	default:
		y, meanOut, varOut, _, _ = ops.BatchNorm(n.b, x, scale, bias, mean, variance, bnEpsilon, bnMomentum, n.m.Training)
	}
	if n.m.Training {
		ops.AssignInto(n.b, mean, meanOut)
		ops.AssignInto(n.b, variance, varOut)
	}
	return y
}

// Batch norm settings (PyTorch's defaults; PaddlePaddle's momentum 0.9 is
// the same rule written the other way).
const (
	bnEpsilon  = 1e-5
	bnMomentum = 0.1
)

// convBN is the design's ConvBNLayer: a k×k convolution without bias,
// batch norm, and swish (SiLU) when act is set. Deployed, it is one
// convolution with a bias.
func (n *net) convBN(name string, x *ir.Value, out, k, stride int, act bool) *ir.Value {
	if !n.deploy {
		return n.batchNorm(name+".bn", n.conv(name+".conv", x, out, k, stride, false, nn.KaimingNormal{}, nil), act)
	}
	y := n.conv(name+".fused", x, out, k, stride, true, nn.Zeros, nn.Zeros)
	if act {
		y = ops.Silu(n.b, y)
	}
	return y
}

// repVGG is the RepVGG block: swish(BN(conv3×3 x) + BN(conv1×1 x)) while
// training; deployed, swish(conv3×3 x + bias) with the branches folded.
func (n *net) repVGG(name string, x *ir.Value) *ir.Value {
	c := x.Type().Dims[1]
	if n.deploy {
		return ops.Silu(n.b, n.conv(name+".deploy", x, c, 3, 1, true, nn.Zeros, nn.Zeros))
	}
	y := ops.Add(n.b, n.convBN(name+".conv1", x, c, 3, 1, false), n.convBN(name+".conv2", x, c, 1, 1, false))
	return ops.Silu(n.b, y)
}

// basicBlock is conv3×3-BN-swish then a RepVGG block, with the input added
// back when shortcut is set.
func (n *net) basicBlock(name string, x *ir.Value, out int, shortcut bool) *ir.Value {
	y := n.repVGG(name+".conv2", n.convBN(name+".conv1", x, out, 3, 1, true))
	if shortcut {
		return ops.Add(n.b, x, y)
	}
	return y
}

// effectiveSE is effective squeeze-and-excitation: x scaled per channel by
// hardsigmoid(fc(mean of x over H, W)), fc a 1×1 convolution with bias.
func (n *net) effectiveSE(name string, x *ir.Value) *ir.Value {
	c := x.Type().Dims[1]
	s := ops.ReduceMean(n.b, x, []int{2, 3}, true)
	s = n.conv(name+".fc", s, c, 1, 1, true, nn.KaimingNormal{}, nn.Zeros)
	return ops.Multiply(n.b, x, hardSigmoid(n.b, s))
}

// hardSigmoid is relu6(x + 3)/6 = clip(x/6 + 1/2, 0, 1).
func hardSigmoid(b *ir.Builder, x *ir.Value) *ir.Value {
	return ops.Clip(b, ops.Scale(b, x, 1.0/6, 0.5), 0, 1)
}
