package optimize_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/gopir/gopir/exec"
	"github.com/gopir/gopir/ir"
	"github.com/gopir/gopir/memory"
	"github.com/gopir/gopir/ops"
	"github.com/gopir/gopir/optimize"
	"github.com/gopir/gopir/tensor"
	"github.com/gopir/gopir/train"
)

// passCase is one program and what a pass must make of it.
type passCase struct {
	name     string
	pass     string
	build    func(b *ir.Builder) // feeds ("data"), parameters and fetches
	rewrites int
	ops      []string // the ops left, in order, but data, parameter and fetch
	exact    bool     // the same bits as before, else within 1e-5
}

// Shorthands for the builders of the cases.
func data(b *ir.Builder, name string, dims ...int) *ir.Value {
	return ops.Data(b, name, ir.F32, dims...)
}
func param(b *ir.Builder, name string, dims ...int) *ir.Value {
	return ops.Parameter(b, name, ir.F32, dims...)
}
func fetch(b *ir.Builder, v *ir.Value) { ops.Fetch(b, "y", v) }
func conv(b *ir.Builder, x, w *ir.Value) *ir.Value {
	return ops.Conv2D(b, x, w, nil, []int{1, 1}, nil, 0)
}

// fusedConv is a conv2d_fused 3×3 (padding 1) from c to o channels with
// a bias and ReLU, and with the data "r" as residual when res is set.
func fusedConv(b *ir.Builder, x *ir.Value, c, o int, res bool) *ir.Value {
	w, bias := param(b, fmt.Sprintf("w%d", o), o, c, 3, 3), param(b, fmt.Sprintf("b%d", o), o)
	e := ops.Epilogue{Bias: bias, Activation: "relu"}
	if res {
		d := x.Type().Dims
		e.Residual = data(b, "r", d[0], o, d[2], d[3])
	}
	return ops.Conv2DFused(b, x, w, ir.A("paddings", []int{1, 1}), e)
}
func chanBias(b *ir.Builder, name string, c int) *ir.Value {
	return ops.Reshape(b, param(b, name, c), c, 1, 1)
}
func bn(b *ir.Builder, x *ir.Value, c int, training bool) *ir.Value {
	y, _, _, _, _ := ops.BatchNorm(b, x, param(b, "bn.scale", c), param(b, "bn.bias", c), param(b, "bn.mean", c), param(b, "bn.var", c), 1e-5, 0.1, training)
	return y
}
func constant(b *ir.Builder, v float64, dims ...int) *ir.Value {
	vals := make([]float64, max(1, ir.TensorOf(ir.F32, dims...).NumElements()))
	for i := range vals {
		vals[i] = v
	}
	d, err := ir.DenseOf(ir.TensorOf(ir.F32, dims...), vals)
	if err != nil {
		b.Fail(err)
	}
	return ops.Constant(b, d)
}

var passCases = []passCase{
	// identities
	{"reshape to itself", "identities", func(b *ir.Builder) {
		fetch(b, ops.Relu(b, ops.Reshape(b, data(b, "x", 2, 3), 2, 3)))
	}, 1, []string{"relu"}, true},
	{"reshape that changes the shape", "identities", func(b *ir.Builder) {
		fetch(b, ops.Relu(b, ops.Reshape(b, data(b, "x", 2, 3), 3, 2)))
	}, 0, []string{"reshape", "relu"}, true},
	{"transposes", "identities", func(b *ir.Builder) {
		x := data(b, "x", 3, 3)
		fetch(b, ops.Transpose(b, ops.Transpose(b, x, 0, 1), 1, 0))
	}, 1, []string{"transpose"}, true},
	{"cast assign stop_gradient", "identities", func(b *ir.Builder) {
		x := data(b, "x", 4)
		fetch(b, ops.Neg(b, ops.StopGradient(b, ops.Assign(b, ops.Cast(b, x, ir.F32)))))
	}, 3, []string{"neg"}, true},
	{"dropout", "identities", func(b *ir.Builder) {
		x := data(b, "x", 40)
		eval, _ := ops.Dropout(b, x, 0.5, false, 0)
		train, _ := ops.Dropout(b, eval, 0.5, true, 0)
		_, mask := ops.Dropout(b, train, 0.5, false, 0)
		ops.Fetch(b, "m", mask)
		fetch(b, train)
	}, 1, []string{"dropout", "dropout"}, true},
	{"neutral elements", "identities", func(b *ir.Builder) {
		x := data(b, "x", 2, 3)
		y := ops.Add(b, x, constant(b, 0, 3))
		y = ops.Multiply(b, ops.Full(b, ir.F32, 1, 2, 3), y)
		y = ops.Divide(b, y, constant(b, 1))
		y = ops.Subtract(b, y, ops.Full(b, ir.F32, 0, 1))
		fetch(b, ops.Scale(b, y, 1, 0))
	}, 5, nil, true},
	{"not neutral", "identities", func(b *ir.Builder) {
		x := data(b, "x", 3)
		y := ops.Add(b, x, constant(b, 0, 2, 3))          // broadcasts x
		y = ops.Subtract(b, constant(b, 0, 2, 3), y)      // 0 − y
		y = ops.Divide(b, constant(b, 1, 2, 3), y)        // 1 / y
		y = ops.Multiply(b, y, ops.Full(b, ir.F32, 2, 1)) // by 2
		fetch(b, ops.Scale(b, y, 1, 0.5))
	}, 0, []string{"constant", "add", "constant", "subtract", "constant", "divide", "full", "multiply", "scale"}, true},

	// batch_norm folding
	{"conv and batch_norm", "fold_batch_norm", func(b *ir.Builder) {
		fetch(b, ops.Relu(b, bn(b, conv(b, data(b, "x", 2, 3, 6, 6), param(b, "w", 4, 3, 3, 3)), 4, false)))
	}, 1, []string{"conv2d", "reshape", "add", "relu"}, false},
	{"conv, bias and batch_norm", "fold_batch_norm", func(b *ir.Builder) {
		y := ops.Add(b, conv(b, data(b, "x", 2, 3, 6, 6), param(b, "w", 4, 3, 3, 3)), chanBias(b, "b", 4))
		fetch(b, bn(b, y, 4, false))
	}, 1, []string{"conv2d", "reshape", "add"}, false},
	{"linear and batch_norm", "fold_batch_norm", func(b *ir.Builder) {
		y := ops.Add(b, ops.Matmul(b, data(b, "x", 5, 7), param(b, "w", 6, 7), false, true), param(b, "b", 6))
		fetch(b, bn(b, y, 6, false))
	}, 1, []string{"matmul", "add"}, false},
	{"matmul (not transposed) and batch_norm", "fold_batch_norm", func(b *ir.Builder) {
		fetch(b, bn(b, ops.Matmul(b, data(b, "x", 5, 7), param(b, "w", 7, 6), false, false), 6, false))
	}, 1, []string{"matmul", "add"}, false},
	{"batch_norm in training mode", "fold_batch_norm", func(b *ir.Builder) {
		fetch(b, bn(b, conv(b, data(b, "x", 2, 3, 6, 6), param(b, "w", 4, 3, 3, 3)), 4, true))
	}, 0, []string{"conv2d", "batch_norm"}, true},
	{"batch_norm whose inverse deviation is used", "fold_batch_norm", func(b *ir.Builder) {
		c := conv(b, data(b, "x", 2, 3, 6, 6), param(b, "w", 4, 3, 3, 3))
		y, _, _, _, inv := ops.BatchNorm(b, c, param(b, "s", 4), param(b, "b", 4), param(b, "m", 4), param(b, "var", 4), 1e-5, 0.1, false)
		fetch(b, y)
		ops.Fetch(b, "inv", inv)
	}, 0, []string{"conv2d", "batch_norm"}, true},
	{"conv used twice", "fold_batch_norm", func(b *ir.Builder) {
		c := conv(b, data(b, "x", 2, 3, 6, 6), param(b, "w", 4, 3, 3, 3))
		fetch(b, bn(b, c, 4, false))
		ops.Fetch(b, "c", c)
	}, 0, []string{"conv2d", "batch_norm"}, true},
	{"weights not known", "fold_batch_norm", func(b *ir.Builder) {
		fetch(b, bn(b, conv(b, data(b, "x", 2, 3, 6, 6), data(b, "w", 4, 3, 3, 3)), 4, false))
	}, 0, []string{"conv2d", "batch_norm"}, true},

	// scale and shift folding
	{"conv times and plus per channel", "fold_scale_shift", func(b *ir.Builder) {
		c := conv(b, data(b, "x", 2, 3, 6, 6), param(b, "w", 4, 3, 3, 3))
		y := ops.Multiply(b, c, ops.Reshape(b, param(b, "s", 4), 1, 4, 1, 1))
		fetch(b, ops.Add(b, y, chanBias(b, "t", 4)))
	}, 1, []string{"conv2d", "reshape", "add"}, false},
	{"linear over a scalar minus one", "fold_scale_shift", func(b *ir.Builder) {
		y := ops.Matmul(b, data(b, "x", 5, 7), param(b, "w", 6, 7), false, true)
		fetch(b, ops.Subtract(b, ops.Divide(b, y, constant(b, 2)), ops.Full(b, ir.F32, 1, 1)))
	}, 1, []string{"matmul", "add"}, false},
	{"bias, scale, neg", "fold_scale_shift", func(b *ir.Builder) {
		c := ops.Add(b, conv(b, data(b, "x", 2, 3, 6, 6), param(b, "w", 4, 3, 3, 3)), chanBias(b, "b", 4))
		fetch(b, ops.Scale(b, ops.Neg(b, c), 2, 1))
	}, 1, []string{"conv2d", "reshape", "add"}, false},
	{"one bias add is left alone", "fold_scale_shift", func(b *ir.Builder) {
		fetch(b, ops.Add(b, conv(b, data(b, "x", 2, 3, 6, 6), param(b, "w", 4, 3, 3, 3)), chanBias(b, "b", 4)))
	}, 0, []string{"conv2d", "reshape", "add"}, true},
	{"not per channel", "fold_scale_shift", func(b *ir.Builder) {
		c := conv(b, data(b, "x", 2, 3, 6, 6), param(b, "w", 4, 3, 3, 3))
		y := ops.Multiply(b, c, param(b, "s", 4, 6, 6))
		fetch(b, ops.Divide(b, constant(b, 1), ops.Divide(b, y, constant(b, 0))))
	}, 0, []string{"conv2d", "multiply", "constant", "constant", "divide", "divide"}, true},

	// epilogue fusion
	{"conv, bias, relu", "fuse_epilogue", func(b *ir.Builder) {
		fetch(b, ops.Relu(b, ops.Add(b, conv(b, data(b, "x", 2, 3, 6, 6), param(b, "w", 4, 3, 3, 3)), chanBias(b, "b", 4))))
	}, 1, []string{"conv2d_fused"}, true},
	{"conv, bias, residual, relu", "fuse_epilogue", func(b *ir.Builder) {
		x := data(b, "x", 2, 4, 6, 6)
		y := ops.Add(b, conv(b, x, param(b, "w", 4, 4, 3, 3)), chanBias(b, "b", 4))
		fetch(b, ops.Relu(b, ops.Add(b, y, x)))
	}, 1, []string{"conv2d_fused"}, true},
	{"residual of the same dynamic batch", "fuse_epilogue", func(b *ir.Builder) {
		x := data(b, "x", ir.Dynamic, 4, 6, 6)
		r := ops.Sigmoid(b, x)
		fetch(b, ops.Add(b, r, conv(b, x, param(b, "w", 4, 4, 3, 3))))
	}, 1, []string{"sigmoid", "conv2d_fused"}, true},
	{"residual of another dynamic batch", "fuse_epilogue", func(b *ir.Builder) {
		x := data(b, "x", ir.Dynamic, 4, 6, 6)
		fetch(b, ops.Add(b, data(b, "r", ir.Dynamic, 4, 6, 6), conv(b, x, param(b, "w", 4, 4, 3, 3))))
	}, 0, []string{"conv2d", "add"}, true},
	{"residual that broadcasts", "fuse_epilogue", func(b *ir.Builder) {
		y := ops.Add(b, conv(b, data(b, "x", 2, 3, 6, 6), param(b, "w", 4, 3, 3, 3)), chanBias(b, "b", 4))
		fetch(b, ops.Relu(b, ops.Add(b, y, data(b, "r", 1, 4, 6, 6))))
	}, 1, []string{"conv2d_fused", "add", "relu"}, true},
	{"residual before bias", "fuse_epilogue", func(b *ir.Builder) {
		x := data(b, "x", 2, 4, 6, 6)
		y := ops.Add(b, conv(b, x, param(b, "w", 4, 4, 3, 3)), x)
		fetch(b, ops.Relu(b, ops.Add(b, y, chanBias(b, "b", 4))))
	}, 1, []string{"conv2d_fused", "reshape", "add", "relu"}, true},
	{"linear, bias", "fuse_epilogue", func(b *ir.Builder) {
		fetch(b, ops.Add(b, param(b, "b", 1, 6), ops.Matmul(b, data(b, "x", 5, 7), param(b, "w", 6, 7), false, true)))
	}, 1, []string{"reshape", "matmul_fused"}, true},
	{"batched matmul, bias, clip", "fuse_epilogue", func(b *ir.Builder) {
		y := ops.Add(b, ops.Matmul(b, data(b, "x", 3, 5, 7), param(b, "w", 7, 6), false, false), param(b, "b", 6))
		fetch(b, ops.Clip(b, y, 0, 0.5))
	}, 1, []string{"matmul_fused"}, true},
	{"conv and swish", "fuse_epilogue", func(b *ir.Builder) {
		c := ops.Add(b, conv(b, data(b, "x", 2, 3, 6, 6), param(b, "w", 4, 3, 3, 3)), chanBias(b, "b", 4))
		fetch(b, ops.Multiply(b, ops.Sigmoid(b, c), c))
	}, 1, []string{"conv2d_fused"}, true},
	{"conv and silu, sigmoid", "fuse_epilogue", func(b *ir.Builder) {
		x := data(b, "x", 2, 3, 6, 6)
		ops.Fetch(b, "s", ops.Sigmoid(b, conv(b, x, param(b, "w", 4, 3, 3, 3))))
		fetch(b, ops.Silu(b, conv(b, x, param(b, "w2", 4, 3, 3, 3))))
	}, 2, []string{"conv2d_fused", "conv2d_fused"}, true},
	// max pooling without indices
	{"max_pool2d whose indices are unused", "drop_pool_indices", func(b *ir.Builder) {
		y, _ := ops.MaxPool2D(b, data(b, "x", 2, 3, 9, 8), []int{3, 3}, []int{2, 2}, []int{1, 1})
		z, _ := ops.MaxPool2D(b, y, []int{2, 2}, nil, nil)
		fetch(b, ops.Relu(b, z))
	}, 2, []string{"max_pool2d_values", "max_pool2d_values", "relu"}, true},
	{"max_pool2d whose indices are fetched", "drop_pool_indices", func(b *ir.Builder) {
		y, idx := ops.MaxPool2D(b, data(b, "x", 2, 3, 9, 8), []int{5, 5}, []int{1, 1}, []int{2, 2})
		ops.Fetch(b, "i", idx)
		fetch(b, y)
	}, 0, []string{"max_pool2d"}, true},
	// a 2×2 max pool into the fused convolution before it
	{"conv, bias, relu, 2×2 max pool", "fuse_pool", func(b *ir.Builder) {
		fetch(b, ops.MaxPool2DValues(b, fusedConv(b, data(b, "x", 2, 3, 10, 9), 3, 20, false), []int{2, 2}, nil, nil))
	}, 1, []string{"conv2d_fused"}, true},
	{"two blocks", "fuse_pool", func(b *ir.Builder) {
		y := ops.MaxPool2DValues(b, fusedConv(b, data(b, "x", 3, 3, 16, 16), 3, 32, false), []int{2, 2}, []int{2, 2}, []int{0, 0})
		fetch(b, ops.MaxPool2DValues(b, fusedConv(b, y, 32, 64, false), []int{2, 2}, nil, nil))
	}, 2, []string{"conv2d_fused", "conv2d_fused"}, true},
	{"a 3×3 pool", "fuse_pool", func(b *ir.Builder) {
		fetch(b, ops.MaxPool2DValues(b, fusedConv(b, data(b, "x", 2, 3, 10, 9), 3, 8, false), []int{3, 3}, []int{2, 2}, nil))
	}, 0, []string{"conv2d_fused", "max_pool2d_values"}, true},
	{"a 2×2 pool with stride 1", "fuse_pool", func(b *ir.Builder) {
		fetch(b, ops.MaxPool2DValues(b, fusedConv(b, data(b, "x", 2, 3, 10, 9), 3, 8, false), []int{2, 2}, []int{1, 1}, nil))
	}, 0, []string{"conv2d_fused", "max_pool2d_values"}, true},
	{"a padded 2×2 pool", "fuse_pool", func(b *ir.Builder) {
		fetch(b, ops.MaxPool2DValues(b, fusedConv(b, data(b, "x", 2, 3, 10, 9), 3, 8, false), []int{2, 2}, nil, []int{1, 1}))
	}, 0, []string{"conv2d_fused", "max_pool2d_values"}, true},
	{"convolution result read twice", "fuse_pool", func(b *ir.Builder) {
		y := fusedConv(b, data(b, "x", 2, 3, 10, 9), 3, 8, false)
		ops.Fetch(b, "full", y)
		fetch(b, ops.MaxPool2DValues(b, y, []int{2, 2}, nil, nil))
	}, 0, []string{"conv2d_fused", "max_pool2d_values"}, true},
	{"convolution with a residual", "fuse_pool", func(b *ir.Builder) {
		fetch(b, ops.MaxPool2DValues(b, fusedConv(b, data(b, "x", 2, 3, 10, 9), 3, 8, true), []int{2, 2}, nil, nil))
	}, 0, []string{"conv2d_fused", "max_pool2d_values"}, true},
	// softmax with float32 exponentials
	{"f32 softmaxes", "softmax_f32", func(b *ir.Builder) {
		y := ops.Softmax(b, data(b, "x", 2, 3, 17), -1)
		fetch(b, ops.Softmax(b, ops.Relu(b, y), 1))
	}, 2, []string{"softmax_f32", "relu", "softmax_f32"}, false},
	{"f64 softmax and log_softmax", "softmax_f32", func(b *ir.Builder) {
		ops.Fetch(b, "l", ops.LogSoftmax(b, data(b, "z", 2, 17), -1))
		fetch(b, ops.Softmax(b, ops.Data(b, "x", ir.F64, 2, 17), -1))
	}, 0, []string{"log_softmax", "softmax"}, true},

	{"conv used twice", "fuse_epilogue", func(b *ir.Builder) {
		c := conv(b, data(b, "x", 2, 3, 6, 6), param(b, "w", 4, 3, 3, 3))
		fetch(b, ops.Relu(b, c))
		ops.Fetch(b, "c", c)
	}, 0, []string{"conv2d", "relu"}, true},
}

// The table: each pass rewrites what it should and nothing else, leaves
// its input alone, and the new program computes what the old one did.
func TestPasses(t *testing.T) {
	for _, c := range passCases {
		t.Run(c.pass+"/"+c.name, func(t *testing.T) {
			b := ir.NewBuilder(ir.NewProgram())
			c.build(b)
			p, err := b.Finish()
			if err != nil {
				t.Fatal(err)
			}
			alloc := memory.New(memory.Options{})
			store := randomParams(t, p, alloc)
			defer store.Release()
			var before bytes.Buffer
			ir.Print(&before, p)
			params := optimize.NewParams(store, alloc)
			defer params.Release()
			res, err := optimize.Inference(p, params, c.pass)
			if err != nil {
				t.Fatal(err)
			}
			var after bytes.Buffer
			ir.Print(&after, p)
			if before.String() != after.String() {
				t.Errorf("the pass changed its input")
			}
			if n := res.Counts[0].Rewrites; n != c.rewrites {
				t.Errorf("%d rewrites, want %d", n, c.rewrites)
			}
			if got := opNames(res.Program); !slices.Equal(got, c.ops) {
				var out bytes.Buffer
				ir.Print(&out, res.Program)
				t.Errorf("ops %q, want %q:\n%s", got, c.ops, out.String())
			}
			want := runOnce(t, p, store, alloc)
			got := runOnce(t, res.Program, params.Store(), alloc)
			for n := range want {
				var err error
				if c.exact {
					err = sameBits(got[n], want[n])
				} else {
					err = closeTo(got[n], want[n], 1e-5)
				}
				if err != nil {
					t.Errorf("fetch %s: %v", n, err)
				}
			}
			want.Release()
			got.Release()
		})
	}
}

// opNames lists the ops of p's top level but data, parameter and fetch.
func opNames(p *ir.Program) []string {
	var names []string
	for _, op := range p.Body().Ops() {
		switch op.Name() {
		case "data", "parameter", "fetch":
		default:
			names = append(names, op.Name())
		}
	}
	return names
}

// randomParams gives every parameter of p random values (variances
// positive) in a new store.
func randomParams(t *testing.T, p *ir.Program, a *memory.Allocator) *exec.Store {
	t.Helper()
	r := rand.New(rand.NewPCG(5, 6))
	store := exec.NewStore()
	for _, op := range p.Body().Ops() {
		if op.Name() != "parameter" {
			continue
		}
		name, _ := op.Attrs.Str("name")
		typ := op.Result(0).Type()
		x, err := tensor.New(a, tensor.DType(typ.DType), typ.Dims...)
		if err != nil {
			t.Fatal(err)
		}
		for i := range x.Len() {
			v := r.Float64()*2 - 1
			if strings.Contains(name, "var") {
				v = 0.5 + r.Float64()
			}
			x.SetFloat64At(i, v)
		}
		store.Set(name, x)
	}
	return store
}

// runOnce runs p on random feeds (dynamic dims 2) made from a fixed
// seed, so that two programs with the same feeds get the same values.
func runOnce(t *testing.T, p *ir.Program, store *exec.Store, a *memory.Allocator) exec.Results {
	t.Helper()
	x, err := exec.Compile(p, exec.Options{Alloc: a, Store: store, Threads: 2, Seed: 3})
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(7, 8))
	host := memory.New(memory.Options{})
	feeds := map[string]*tensor.Tensor{}
	for _, f := range x.Feeds() {
		dims := slices.Clone(f.Type.Dims)
		for i, d := range dims {
			if d == ir.Dynamic {
				dims[i] = 2
			}
		}
		v, err := tensor.New(host, tensor.DType(f.Type.DType), dims...)
		if err != nil {
			t.Fatal(err)
		}
		for i := range v.Len() {
			v.SetFloat64At(i, r.Float64()*4-2)
		}
		feeds[f.Name] = v
	}
	defer releaseAll(feeds)
	res, err := x.Run(context.Background(), feeds)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// Programs with a backward or with updates are refused, with a typed
// error naming the op.
func TestRefusesTrainingPrograms(t *testing.T) {
	training, err := train.BuildTraining(train.Config{Model: "mlp"})
	if err != nil {
		t.Fatal(err)
	}
	grad := ir.NewBuilder(ir.NewProgram())
	x := data(grad, "x", 4)
	fetch(grad, ops.ReluGrad(grad, ops.Relu(grad, x), x))
	gp, err := grad.Finish()
	if err != nil {
		t.Fatal(err)
	}
	upd := ir.NewBuilder(ir.NewProgram())
	w := param(upd, "w", 4)
	ops.SGDUpdate(upd, w, data(upd, "g", 4), param(upd, "lr"), 0)
	up, err := upd.Finish()
	if err != nil {
		t.Fatal(err)
	}
	eval, err := train.BuildEvaluation("mlp")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		p    *ir.Program
		want string
	}{
		{"training step", training, "is part of a backward pass"},
		{"update", up, `"sgd_update" updates its operands in place`},
		{"gradient op", gp, `"relu_grad" is part of a backward pass`},
		{"evaluation program", eval, ""},
	} {
		_, err := optimize.Inference(c.p, nil)
		var be *optimize.BackwardError
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%s: %v", c.name, err)
		case c.want != "" && (!errors.As(err, &be) || !strings.Contains(err.Error(), c.want)):
			t.Errorf("%s: error %v, want a BackwardError saying %q", c.name, err, c.want)
		}
	}
	if _, err := optimize.Inference(eval, nil, "no_such_pass"); err == nil || !strings.Contains(err.Error(), `no pass "no_such_pass"`) {
		t.Errorf("unknown pass: %v", err)
	}
}
