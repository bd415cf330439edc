package ops_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/gopir/gopir/autodiff"
	"github.com/gopir/gopir/exec"
	"github.com/gopir/gopir/ir"
	"github.com/gopir/gopir/memory"
	"github.com/gopir/gopir/ops"
	"github.com/gopir/gopir/tensor"
)

// fusedCase is one fused op against the ops it stands for.
type fusedCase struct {
	conv       bool     // conv2d_fused, else matmul_fused
	attrs      ir.Attrs // the convolution's or product's
	x, w       []int
	dt         ir.DType
	bias, res  bool
	act        string
	lo, hi     float64
	threads    int
	dynamicRes bool // feed the residual with dynamic dims
	pool       bool // conv2d_fused's pool:"max2x2", against max_pool2d_values after the ops
}

// unfused appends the ops the fused op replaces: the product, the bias
// (reshaped to [O,1,1] for a convolution), the residual, the activation.
func (c fusedCase) unfused(b *ir.Builder, x, w, bias, res *ir.Value) *ir.Value {
	var y *ir.Value
	if c.conv {
		y = b.Op1("conv2d", c.attrs, x, w)
		if bias != nil {
			y = ops.Add(b, y, ops.Reshape(b, bias, -1, 1, 1))
		}
	} else {
		y = b.Op1("matmul", c.attrs, x, w)
		if bias != nil {
			y = ops.Add(b, y, bias)
		}
	}
	if res != nil {
		y = ops.Add(b, y, res)
	}
	switch c.act {
	case "relu":
		y = ops.Relu(b, y)
	case "sigmoid":
		y = ops.Sigmoid(b, y)
	case "silu":
		y = ops.Silu(b, y)
	case "swish":
		y = ops.Multiply(b, y, ops.Sigmoid(b, y))
	case "clip":
		y = ops.Clip(b, y, c.lo, c.hi)
	}
	if c.pool {
		y = ops.MaxPool2DValues(b, y, []int{2, 2}, []int{2, 2}, []int{0, 0})
	}
	return y
}

// program builds the fused op (fused) or the unfused ops on feeds x, w,
// b, r and fetches the result as "y".
func (c fusedCase) program(t *testing.T, fused bool, outType ir.Type) *ir.Program {
	t.Helper()
	b := ir.NewBuilder(ir.NewProgram())
	x := ops.Data(b, "x", c.dt, c.x...)
	w := ops.Data(b, "w", c.dt, c.w...)
	var bias, res *ir.Value
	if c.bias {
		bias = ops.Data(b, "b", c.dt, c.biasLen(outType))
	}
	if c.res {
		dims := outType.Dims
		if c.dynamicRes {
			dims = make([]int, len(dims))
			for i := range dims {
				dims[i] = ir.Dynamic
			}
		}
		res = ops.Data(b, "r", c.dt, dims...)
	}
	var y *ir.Value
	switch {
	case !fused:
		y = c.unfused(b, x, w, bias, res)
	case c.conv && c.pool:
		y = ops.Conv2DFused(b, x, w, c.attrs.With("pool", ir.Str("max2x2")), ops.Epilogue{Bias: bias, Activation: c.act, Min: c.lo, Max: c.hi})
	case c.conv:
		y = ops.Conv2DFused(b, x, w, c.attrs, ops.Epilogue{Bias: bias, Residual: res, Activation: c.act, Min: c.lo, Max: c.hi})
	default:
		y = ops.MatmulFused(b, x, w, c.attrs, ops.Epilogue{Bias: bias, Residual: res, Activation: c.act, Min: c.lo, Max: c.hi})
	}
	ops.Fetch(b, "y", y)
	p, err := b.Finish()
	if err != nil {
		t.Fatalf("%v fused=%v: %v", c, fused, err)
	}
	return p
}

func (c fusedCase) biasLen(out ir.Type) int {
	if c.conv {
		return out.Dims[1]
	}
	return out.Dims[out.Rank()-1]
}

// outType is the type of the product without epilogue.
func (c fusedCase) outType(t *testing.T) ir.Type {
	t.Helper()
	name := "matmul"
	if c.conv {
		name = "conv2d"
	}
	types := nnInferOK(t, name, c.attrs, nnT(c.dt, c.x...), nnT(c.dt, c.w...))
	return types[0]
}

var fusedCases = func() []fusedCase {
	conv := ir.A("strides", []int{1, 1}, "paddings", []int{1, 1}, "dilations", []int{1, 1}, "groups", 1)
	strided := ir.A("strides", []int{2, 2}, "paddings", []int{3, 3}, "dilations", []int{1, 1}, "groups", 1)
	depthwise := ir.A("paddings", []int{1, 1}, "groups", 8)
	oneByOne := ir.A("strides", []int{2, 2})
	linear := ir.A("transpose_x", false, "transpose_y", true)
	batched := ir.A("transpose_x", true, "transpose_y", false)
	var cs []fusedCase
	for _, act := range []string{"none", "relu", "sigmoid", "silu", "swish", "clip"} {
		cs = append(cs,
			fusedCase{conv: true, attrs: conv, x: []int{2, 3, 10, 9}, w: []int{8, 3, 3, 3}, dt: ir.F32, bias: true, act: act, lo: -0.25, hi: 0.5, threads: 2},
			fusedCase{conv: true, attrs: conv, x: []int{1, 16, 6, 6}, w: []int{32, 16, 3, 3}, dt: ir.F32, bias: true, res: true, act: act, lo: 0, hi: 6, threads: 2},
			fusedCase{conv: true, attrs: strided, x: []int{3, 3, 16, 16}, w: []int{12, 3, 7, 7}, dt: ir.F64, res: true, act: act, lo: -1, hi: 1, threads: 1},
			fusedCase{conv: false, attrs: linear, x: []int{5, 20}, w: []int{7, 20}, dt: ir.F32, bias: true, act: act, lo: -0.5, hi: 0.5, threads: 2},
			fusedCase{conv: false, attrs: batched, x: []int{4, 6, 3}, w: []int{6, 5}, dt: ir.F64, bias: true, res: true, act: act, lo: -2, hi: 0, threads: 2},
		)
	}
	cs = append(cs,
		fusedCase{conv: true, attrs: depthwise, x: []int{2, 8, 7, 7}, w: []int{8, 1, 3, 3}, dt: ir.F32, bias: true, res: true, act: "relu", threads: 2},
		fusedCase{conv: true, attrs: oneByOne, x: []int{2, 8, 8, 8}, w: []int{16, 8, 1, 1}, dt: ir.F32, bias: true, act: "relu", threads: 2},
		fusedCase{conv: true, attrs: conv, x: []int{0, 3, 4, 4}, w: []int{5, 3, 3, 3}, dt: ir.F32, bias: true, res: true, act: "relu", threads: 2},
		fusedCase{conv: true, attrs: conv, x: []int{2, 0, 4, 4}, w: []int{5, 0, 3, 3}, dt: ir.F32, bias: true, act: "sigmoid", threads: 2},
		fusedCase{conv: false, attrs: linear, x: []int{1, 784}, w: []int{128, 784}, dt: ir.F32, bias: true, act: "relu", threads: 2},
		fusedCase{conv: false, attrs: linear, x: []int{3, 0}, w: []int{4, 0}, dt: ir.F32, bias: true, res: true, act: "clip", lo: 0, hi: 0.5, threads: 1},
		fusedCase{conv: true, attrs: conv, x: []int{2, 3, 10, 9}, w: []int{8, 3, 3, 3}, dt: ir.F32, res: true, act: "relu", threads: 2, dynamicRes: true},
		// With the 2×2 max pool: the direct kernel's path (a bias and
		// ReLU or none, 16 + 4 channels, an odd width), and the others.
		fusedCase{conv: true, attrs: conv, x: []int{2, 3, 10, 9}, w: []int{20, 3, 3, 3}, dt: ir.F32, bias: true, act: "relu", threads: 2, pool: true},
		fusedCase{conv: true, attrs: conv, x: []int{3, 32, 16, 16}, w: []int{64, 32, 3, 3}, dt: ir.F32, bias: true, act: "relu", threads: 2, pool: true},
		fusedCase{conv: true, attrs: conv, x: []int{2, 3, 10, 9}, w: []int{8, 3, 3, 3}, dt: ir.F32, bias: true, act: "none", threads: 1, pool: true},
		fusedCase{conv: true, attrs: conv, x: []int{1, 16, 6, 6}, w: []int{32, 16, 3, 3}, dt: ir.F32, bias: true, act: "sigmoid", threads: 2, pool: true},
		fusedCase{conv: true, attrs: strided, x: []int{3, 3, 16, 16}, w: []int{12, 3, 7, 7}, dt: ir.F64, bias: true, act: "relu", threads: 2, pool: true},
		fusedCase{conv: true, attrs: depthwise, x: []int{2, 8, 7, 7}, w: []int{8, 1, 3, 3}, dt: ir.F32, act: "clip", lo: 0, hi: 1, threads: 2, pool: true},
	)
	return cs
}()

// runFeeds compiles p and runs it on feeds, returning y.
func runFeeds(t *testing.T, a *memory.Allocator, p *ir.Program, threads int, feeds map[string]*tensor.Tensor) *tensor.Tensor {
	t.Helper()
	x, err := exec.Compile(p, exec.Options{Alloc: a, Threads: threads})
	if err != nil {
		t.Fatal(err)
	}
	res, err := x.Run(context.Background(), feeds)
	if err != nil {
		t.Fatal(err)
	}
	return res["y"]
}

// The fused ops give bit for bit what the ops they replace give.
func TestFusedOpsMatchUnfused(t *testing.T) {
	r := rand.New(rand.NewPCG(11, 12))
	for i, c := range fusedCases {
		t.Run(fmt.Sprintf("%d", i), func(t *testing.T) {
			out := c.outType(t)
			a := memory.New(memory.Options{})
			host := memory.New(memory.Options{})
			dt := tensor.DType(c.dt)
			feeds := map[string]*tensor.Tensor{
				"x": randTensor(t, host, r, dt, c.x...),
				"w": randTensor(t, host, r, dt, c.w...),
			}
			if c.bias {
				feeds["b"] = randTensor(t, host, r, dt, c.biasLen(out))
			}
			if c.res {
				feeds["r"] = randTensor(t, host, r, dt, out.Dims...)
			}
			defer func() {
				for _, f := range feeds {
					f.Release()
				}
			}()
			want := runFeeds(t, a, c.program(t, false, out), c.threads, feeds)
			got := runFeeds(t, a, c.program(t, true, out), c.threads, feeds)
			nnSameBits(t, fmt.Sprintf("%+v", c), got, want)
			release(got, want)
			wantAllocated(t, a, 0)
		})
	}
}

func TestFusedOpsInferErrors(t *testing.T) {
	f32 := func(dims ...int) ir.Type { return nnT(ir.F32, dims...) }
	x, w := f32(2, 3, 8, 8), f32(4, 3, 3, 3)
	for _, c := range []struct {
		name  string
		attrs ir.Attrs
		in    []ir.Type
		want  []string
	}{
		{"conv2d_fused", ir.A("bias", true), []ir.Type{x, w}, []string{"takes 3 operands, got 2", "bias:true"}},
		{"conv2d_fused", nil, []ir.Type{x, w, f32(4)}, []string{"takes 2 operands, got 3"}},
		{"conv2d_fused", ir.A("bias", true), []ir.Type{x, w, f32(5)}, []string{"bias tensor<5xf32>", "one value per output channel (4)"}},
		{"conv2d_fused", ir.A("bias", true), []ir.Type{x, w, f32(4, 1, 1)}, []string{"must be 1-D"}},
		{"conv2d_fused", ir.A("bias", true), []ir.Type{x, w, nnT(ir.F64, 4)}, []string{"bias tensor<4xf64> must have the dtype of x"}},
		{"conv2d_fused", ir.A("residual", true), []ir.Type{x, w, f32(2, 4, 8, 7)}, []string{"residual tensor<2x4x8x7xf32> must have the result's shape [2 4 6 6]"}},
		{"conv2d_fused", ir.A("residual", true), []ir.Type{x, w, f32(4, 6, 6)}, []string{"must have the result's shape"}},
		{"conv2d_fused", ir.A("activation", "gelu"), []ir.Type{x, w}, []string{`activation:"gelu"`, "want none, relu"}},
		{"conv2d_fused", ir.A("activation", "relu", "min", 0.0), []ir.Type{x, w}, []string{"min and max are clip's bounds"}},
		{"conv2d_fused", ir.A("activation", "clip", "min", 0.0), []ir.Type{x, w}, []string{"max"}},
		{"conv2d_fused", nil, []ir.Type{x}, []string{"takes 2 operands, got 1"}},
		{"conv2d_fused", ir.A("pool", "avg2x2"), []ir.Type{x, w}, []string{`pool:"avg2x2"`, "want none or max2x2"}},
		{"conv2d_fused", ir.A("pool", "max2x2", "residual", true), []ir.Type{x, w, f32(2, 4, 6, 6)}, []string{"takes no residual"}},
		{"conv2d_fused", ir.A("pool", "max2x2"), []ir.Type{f32(2, 3, 3, 8), w}, []string{`pool:"max2x2" on the convolution's result`, "smaller than kernel_size"}},
		{"conv2d_fused", nil, []ir.Type{x, f32(4, 2, 3, 3)}, []string{"channels"}},
		{"matmul_fused", ir.A("bias", true), []ir.Type{f32(2, 3), f32(3, 4), f32(3)}, []string{"one value per output channel (4)"}},
		{"matmul_fused", nil, []ir.Type{f32(3), f32(3, 4)}, []string{"rank >= 2"}},
		{"matmul_fused", ir.A("residual", true), []ir.Type{f32(2, 3), f32(3, 4), f32(2, 5)}, []string{"result's shape [2 4]"}},
		{"matmul_fused", nil, []ir.Type{f32(2, 3), f32(4, 4)}, []string{"contracted dims"}},
	} {
		nnInferErr(t, c.name, c.attrs, c.want, c.in...)
	}
	got := nnInferOK(t, "conv2d_fused", ir.A("bias", true, "residual", true, "activation", "clip", "min", 0.0, "max", 6.0),
		nnT(ir.F32, ir.Dynamic, 3, 8, 8), w, f32(4), nnT(ir.F32, ir.Dynamic, 4, 6, 6))
	if want := nnT(ir.F32, ir.Dynamic, 4, 6, 6); !got[0].Equal(want) {
		t.Errorf("conv2d_fused: result %s, want %s", got[0], want)
	}
	got = nnInferOK(t, "conv2d_fused", ir.A("bias", true, "activation", "relu", "pool", "max2x2"), nnT(ir.F32, ir.Dynamic, 3, 9, 8), w, f32(4))
	if want := nnT(ir.F32, ir.Dynamic, 4, 3, 3); !got[0].Equal(want) {
		t.Errorf("conv2d_fused with pool: result %s, want %s", got[0], want)
	}
}

// A residual whose dynamic dims turn out different at run time is an
// error naming both shapes, and the failed runs, like the good ones
// around them, leave nothing allocated.
func TestFusedOpsResidualMismatchAndMemory(t *testing.T) {
	c := fusedCase{conv: true, attrs: ir.A("paddings", 1), x: []int{2, 3, 6, 6}, w: []int{4, 3, 3, 3}, dt: ir.F32,
		bias: true, res: true, act: "relu", threads: 2, dynamicRes: true}
	out := c.outType(t)
	a := memory.New(memory.Options{})
	host := memory.New(memory.Options{})
	r := rand.New(rand.NewPCG(1, 1))
	x, err := exec.Compile(c.program(t, true, out), exec.Options{Alloc: a, Threads: 2})
	if err != nil {
		t.Fatal(err)
	}
	feeds := map[string]*tensor.Tensor{
		"x": randTensor(t, host, r, tensor.F32, c.x...),
		"w": randTensor(t, host, r, tensor.F32, c.w...),
		"b": randTensor(t, host, r, tensor.F32, 4),
	}
	good := randTensor(t, host, r, tensor.F32, out.Dims...)
	bad := randTensor(t, host, r, tensor.F32, 1, 4, 6, 6)
	defer release(feeds["x"], feeds["w"], feeds["b"], good, bad)
	for i := range 50 {
		feeds["r"] = good
		if i%2 == 1 {
			feeds["r"] = bad
		}
		res, err := x.Run(context.Background(), feeds)
		if i%2 == 1 {
			if err == nil || !strings.Contains(err.Error(), "residual tensor<1x4x6x6xf32> must have the result's shape [2 4 6 6]") {
				t.Fatalf("run %d: err %v", i, err)
			}
		} else {
			if err != nil {
				t.Fatalf("run %d: %v", i, err)
			}
			res.Release()
		}
		wantAllocated(t, a, 0)
	}
}

// Differentiating a fused op is an error that says what to do instead.
func TestFusedOpsRefuseGradients(t *testing.T) {
	for _, name := range []string{"conv2d_fused", "matmul_fused"} {
		b := ir.NewBuilder(ir.NewProgram())
		var y *ir.Value
		if name == "conv2d_fused" {
			y = ops.Conv2DFused(b, ops.Parameter(b, "x", ir.F32, 1, 2, 4, 4), ops.Parameter(b, "w", ir.F32, 3, 2, 3, 3), nil, ops.Epilogue{Activation: "relu"})
		} else {
			y = ops.MatmulFused(b, ops.Parameter(b, "x", ir.F32, 2, 3), ops.Parameter(b, "w", ir.F32, 3, 4), nil, ops.Epilogue{Activation: "relu"})
		}
		loss := ops.ReduceSum(b, y, nil, false)
		_, err := autodiff.Backward(b, loss, []*ir.Value{y.Def().Operand(1)})
		if err == nil || !strings.Contains(err.Error(), "differentiate the program before optimizing it") {
			t.Errorf("%s: backward error %v", name, err)
		}
	}
}

// Under every memory limit a fused op either runs or fails with
// ResourceExhausted, and leaves nothing behind.
func TestFusedOpsOutOfMemory(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 3))
	host := memory.New(memory.Options{})
	x, w := randTensor(t, host, r, tensor.F32, 2, 3, 6, 6), randTensor(t, host, r, tensor.F32, 4, 3, 3, 3)
	b, res := randTensor(t, host, r, tensor.F32, 4), randTensor(t, host, r, tensor.F32, 2, 4, 4, 4)
	defer release(x, w, b, res)
	checkOOMSweep(t, "conv2d_fused", ir.A("bias", true, "residual", true, "activation", "relu"), x, w, b, res)
	// With the pool inside: its workspace (the full-resolution output on
	// the paths that pool after) is released on every failure too.
	checkOOMSweep(t, "conv2d_fused", ir.A("bias", true, "activation", "relu", "pool", "max2x2"), x, w, b)
	xm, wm := randTensor(t, host, r, tensor.F32, 3, 5), randTensor(t, host, r, tensor.F32, 4, 5)
	bm := randTensor(t, host, r, tensor.F32, 4)
	defer release(xm, wm, bm)
	checkOOMSweep(t, "matmul_fused", ir.A("transpose_y", true, "bias", true, "activation", "sigmoid"), xm, wm, bm)
}
