package models

import (
	"github.com/gopir/gopir/data"
	"github.com/gopir/gopir/ir"
	"github.com/gopir/gopir/nn"
	"github.com/gopir/gopir/ops"
)

// gate is an MLP on MNIST whose forward pass takes one of two
// sub-networks through an `if` on a statistic of the batch:
//
//	h     = relu(flatten(x)·W1 + b1)                 784→256, shared
//	stat  = mean of every pixel of the batch (normalized x)
//	if stat > gateThreshold { logits = bright(h) } else { logits = dim(h) }
//
// where bright and dim are two 256-128-10 ReLU networks with their own
// parameters. The threshold 0 is the training set's mean pixel (the feeds
// are normalized by it), so random training batches fall on either side
// about half the time: with batch 128 and seed 0, 226 of the 468 batches
// of epoch 0 take the bright branch (TestGateBranchesOverEpoch). Each
// sub-network's gradient is non-zero only on the batches that take it
// (zeros on the others; Adam's moments still move its parameters a
// little there); the trunk learns from all.
// Both programs fetch "branch", 1 when the batch took the bright branch
// and 0 otherwise; it is logged with every training step, and Evaluate
// reports the fraction of test images that went through the bright one.
type gate struct{ mnistTask }

// gateThreshold is the batch-mean pixel (after normalization) above which
// a batch takes the bright sub-network.
const gateThreshold = 0.0

// gateHidden and gateBranchHidden are the widths of the shared layer and
// of each sub-network's hidden layer.
const (
	gateHidden       = 256
	gateBranchHidden = 128
)

func init() { Register("gate", func() Task { return &gate{mnistTask: mnistTask{evalBranch: true}} }) }

func (*gate) Name() string { return "gate" }

// Defaults: those of mlp, one epoch of batch 128 with Adam and a cosine
// decay from 3e-3.
func (*gate) Defaults() Defaults {
	return Defaults{Epochs: 1, Batch: 128, LR: 3e-3, Optimizer: "adam", Schedule: "cosine"}
}

func (*gate) Build(b *ir.Builder, m *nn.Module) (Outputs, error) {
	x := mnistInput(b, m)
	h := ops.Relu(b, m.Linear(b, "trunk", ops.Reshape(b, x, -1, data.MNISTPixels), gateHidden))
	// The sub-networks' parameters are declared here, at the top level,
	// and captured by the branches: parameters are persistable values of
	// the program, not of one branch.
	bright := gateSubnet(b, m, "bright")
	dim := gateSubnet(b, m, "dim")
	stat := ops.ReduceMean(b, x, nil, false)
	cond := ops.GreaterThan(b, stat, ops.Full(b, m.DType, gateThreshold))
	logits := b.If(cond,
		func(b *ir.Builder) []*ir.Value { return []*ir.Value{bright(b, h)} },
		func(b *ir.Builder) []*ir.Value { return []*ir.Value{dim(b, h)} })
	branch := ops.Cast(b, cond, m.DType)
	return mnistOutputs(b, m, logits[0], map[string]*ir.Value{"branch": branch}), b.Err()
}

// gateSubnet declares the parameters of a 256-128-10 ReLU network named
// name and returns the function that appends it to a (nested) builder.
func gateSubnet(b *ir.Builder, m *nn.Module, name string) func(*ir.Builder, *ir.Value) *ir.Value {
	l1 := gateLinear(b, m, name+".fc1", gateHidden, gateBranchHidden)
	l2 := gateLinear(b, m, name+".fc2", gateBranchHidden, data.MNISTClasses)
	return func(b *ir.Builder, h *ir.Value) *ir.Value {
		return l2(b, ops.Relu(b, l1(b, h)))
	}
}

// gateLinear declares the weight [in,out] and bias [out] of a linear layer
// in b (initialized as nn.Module.Linear does) and returns the function
// that applies it in any builder nested inside b.
func gateLinear(b *ir.Builder, m *nn.Module, name string, in, out int) func(*ir.Builder, *ir.Value) *ir.Value {
	w := m.Param(b, name+".w", nn.FanInUniform{}, true, in, out, in, out)
	bias := m.Param(b, name+".b", nn.FanInUniform{}, true, in, out, out)
	return func(b *ir.Builder, x *ir.Value) *ir.Value {
		return ops.Add(b, ops.Matmul(b, x, w, false, false), bias)
	}
}
