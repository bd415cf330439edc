package ops_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/gopir/gopir/internal/fdcheck"

	"github.com/gopir/gopir/autodiff"
	"github.com/gopir/gopir/exec"
	"github.com/gopir/gopir/ir"
	"github.com/gopir/gopir/memory"
	"github.com/gopir/gopir/ops"
	"github.com/gopir/gopir/tensor"
)

// Tests of the gradient rules of the shape, indexing and random ops, and of
// their helper ops (shape_grad.go, index_grad.go).

// Where shpCheckGrad puts the op under test.
const (
	shpTop    = iota // at the top level
	shpInIf          // in both branches of an if (the then branch runs)
	shpInLoop        // in the body of a while that runs twice
)

var shpModeNames = []string{"top", "if", "while"}

// shpGradCase is one finite-difference check.
type shpGradCase struct {
	name  string
	attrs ir.Attrs
	in    []*tensor.Tensor
	// dyn lists, per input, the axes declared dynamic in its data op.
	dyn [][]int
	// only, when set, lists the results the loss uses; the others get no
	// gradient.
	only []int
}

// shpCheckGrad is checkOpGrad with dynamic input dims, a choice of results
// and a choice of where the op sits: inside an if or a while, the op's
// float operands are computed in the region (x + 0), so that what its rule
// reads comes from residuals (dynamic types, stacks), not from the top
// level. loss = Σ over the chosen float results of Σ(result·weights),
// summed over iterations in a while.
func shpCheckGrad(t *testing.T, mode int, c shpGradCase) {
	t.Helper()
	in := c.in
	// The weights have the shapes of the results: run the kernel once.
	probe := memory.New(memory.Options{})
	outs := mustRun(t, probe, c.name, c.attrs, in...)
	r := rand.New(rand.NewPCG(5, uint64(len(c.name))))
	feeds := map[string]*tensor.Tensor{}
	var used []int
	for j, y := range outs {
		if y.DType() == tensor.F64 && (c.only == nil || slices.Contains(c.only, j)) {
			w := f64Rand(t, r, -1, 1, y.Shape()...)
			defer w.Release()
			feeds[fmt.Sprintf("r%d", j)] = w
			used = append(used, j)
		}
		y.Release()
	}
	if len(used) == 0 {
		t.Fatalf("%s: no f64 result to differentiate", c.name)
	}
	for i, x := range in {
		feeds[fmt.Sprintf("x%d", i)] = x
	}
	if mode == shpInIf {
		cond, err := tensor.Scalar(host, tensor.Bool, 1)
		if err != nil {
			t.Fatal(err)
		}
		defer cond.Release()
		feeds["c"] = cond
	}

	build := func(withGrad bool) (*ir.Program, []string) {
		b := ir.NewBuilder(ir.NewProgram())
		var vals, wrt []*ir.Value
		var names []string
		for i, x := range in {
			dims := slices.Clone(x.Shape())
			if i < len(c.dyn) {
				for _, a := range c.dyn[i] {
					dims[a] = ir.Dynamic
				}
			}
			n := fmt.Sprintf("x%d", i)
			v := ops.Data(b, n, ir.DType(x.DType()), dims...)
			vals = append(vals, v)
			if x.DType() == tensor.F64 {
				wrt = append(wrt, v)
				names = append(names, n)
			}
		}
		weights := map[int]*ir.Value{}
		for _, j := range used {
			rank := feeds[fmt.Sprintf("r%d", j)].Rank()
			weights[j] = ops.Data(b, fmt.Sprintf("r%d", j), ir.F64, slices.Repeat([]int{ir.Dynamic}, rank)...)
		}
		apply := func(b *ir.Builder, local bool) []*ir.Value {
			xs := slices.Clone(vals)
			if local {
				for i, v := range xs {
					if v.Type().DType == ir.F64 {
						xs[i] = ops.Add(b, v, ops.Full(b, ir.F64, 0))
					}
				}
			}
			return b.Op(c.name, c.attrs, xs...).Results()
		}
		term := func(b *ir.Builder, ys []*ir.Value) *ir.Value {
			var loss *ir.Value
			for _, j := range used {
				s := ops.ReduceSum(b, ops.Multiply(b, ys[j], weights[j]), nil, false)
				if loss == nil {
					loss = s
				} else {
					loss = ops.Add(b, loss, s)
				}
			}
			return loss
		}
		var loss *ir.Value
		switch mode {
		case shpTop:
			loss = term(b, apply(b, false))
		case shpInIf:
			cv := ops.Data(b, "c", ir.I1)
			branch := func(b *ir.Builder) []*ir.Value { return apply(b, true) }
			loss = term(b, b.If(cv, branch, branch))
		case shpInLoop:
			n := ops.Full(b, ir.I64, 2)
			i0 := ops.Full(b, ir.I64, 0)
			res := b.While(ops.LessThan(b, i0, n), []*ir.Value{i0, ops.Full(b, ir.F64, 0)},
				func(b *ir.Builder, args []*ir.Value) (*ir.Value, []*ir.Value) {
					i1 := ops.Add(b, args[0], ops.Full(b, ir.I64, 1))
					acc := ops.Add(b, args[1], term(b, apply(b, true)))
					return ops.LessThan(b, i1, n), []*ir.Value{i1, acc}
				})
			loss = res[1]
		}
		ops.Fetch(b, "loss", loss)
		if withGrad {
			grads, err := autodiff.Backward(b, loss, wrt)
			if err != nil {
				t.Fatalf("%s: %v\n%s", c.name, err, b.Program())
			}
			for i, g := range grads {
				ops.Fetch(b, names[i]+"@GRAD", g)
			}
		}
		p, err := b.Finish()
		if err != nil {
			t.Fatalf("%s: %v\n%s", c.name, err, b.Program())
		}
		return p, names
	}
	gp, names := build(true)
	fp, _ := build(false)
	a := memory.New(memory.Options{})
	gx, err := exec.Compile(gp, exec.Options{Alloc: a, CheckLeaks: true})
	if err != nil {
		t.Fatalf("%s: %v\n%s", c.name, err, gp)
	}
	fx, err := exec.Compile(fp, exec.Options{})
	if err != nil {
		t.Fatalf("%s: %v\n%s", c.name, err, fp)
	}
	lossAt := func() float64 {
		res, err := fx.Run(context.Background(), feeds)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		defer res.Release()
		return res["loss"].F64()[0]
	}
	res, err := gx.Run(context.Background(), feeds)
	if err != nil {
		t.Fatalf("%s: %v\n%s", c.name, err, gp)
	}
	defer func() {
		res.Release()
		if got := a.Stats().Allocated.Current; got != 0 {
			t.Errorf("%s: %d bytes allocated after the run", c.name, got)
		}
	}()
	for _, n := range names {
		g := res[n+"@GRAD"]
		x := feeds[n].F64()
		if !slices.Equal(g.Shape(), feeds[n].Shape()) {
			t.Fatalf("%s: gradient of %s has shape %v, want %v", c.name, n, g.Shape(), feeds[n].Shape())
		}
		fdcheck.Check(t, c.name+": "+n, x, g.F64(), lossAt, 1e-5)
	}
}

// shpIdx returns an index tensor of dtype dt (i32 or i64).
func shpIdx(t testing.TB, dt tensor.DType, vals []int64, shape ...int) *tensor.Tensor {
	t.Helper()
	if shape == nil {
		shape = []int{len(vals)}
	}
	var x *tensor.Tensor
	var err error
	if dt == tensor.I32 {
		v32 := make([]int32, len(vals))
		for i, v := range vals {
			v32[i] = int32(v)
		}
		x, err = tensor.FromI32(host, v32, shape...)
	} else {
		x, err = tensor.FromI64(host, vals, shape...)
	}
	if err != nil {
		t.Fatal(err)
	}
	return x
}

// shpRandIdx returns random indices in [-d, d) (or [0, d)).
func shpRandIdx(t testing.TB, r *rand.Rand, dt tensor.DType, d int, neg bool, shape ...int) *tensor.Tensor {
	t.Helper()
	vals := make([]int64, shpSize(shape))
	for i := range vals {
		vals[i] = int64(r.IntN(d))
		if neg && r.IntN(2) == 0 {
			vals[i] -= int64(d)
		}
	}
	return shpIdx(t, dt, vals, shape...)
}

// ---- the rules ----

func TestShpGradRules(t *testing.T) {
	r := rand.New(rand.NewPCG(41, 42))
	x := func(shape ...int) *tensor.Tensor { return f64Rand(t, r, -1, 1, shape...) }
	i64 := func(vals []int64, shape ...int) *tensor.Tensor { return shpIdx(t, tensor.I64, vals, shape...) }
	i32 := func(vals []int64, shape ...int) *tensor.Tensor { return shpIdx(t, tensor.I32, vals, shape...) }
	slice := func(axes, starts, ends, strides []int) ir.Attrs {
		if strides == nil {
			return ir.A("axes", axes, "starts", starts, "ends", ends)
		}
		return ir.A("axes", axes, "starts", starts, "ends", ends, "strides", strides)
	}
	cases := []shpGradCase{
		// Views.
		{name: "reshape", attrs: ir.A("shape", []int{4, -1}), in: []*tensor.Tensor{x(2, 3, 4)}},
		{name: "reshape", attrs: ir.A("shape", []int{4, -1}), in: []*tensor.Tensor{x(2, 3, 4)}, dyn: [][]int{{0}}},
		{name: "reshape", attrs: ir.A("shape", []int{-1, 2}), in: []*tensor.Tensor{x(2, 3, 4)}, dyn: [][]int{{0, 2}}},
		{name: "reshape", attrs: ir.A("shape", []int{}), in: []*tensor.Tensor{x(1, 1)}},
		{name: "flatten", attrs: ir.A("start_axis", 1, "stop_axis", 2), in: []*tensor.Tensor{x(2, 3, 2, 2)}},
		{name: "flatten", attrs: ir.A("start_axis", 0, "stop_axis", -1), in: []*tensor.Tensor{x(2, 3, 2)}, dyn: [][]int{{1}}},
		{name: "flatten", attrs: ir.A("start_axis", -2, "stop_axis", -1), in: []*tensor.Tensor{x(2, 3, 2)}, dyn: [][]int{{0, 1}}},
		{name: "flatten", attrs: nil, in: []*tensor.Tensor{x()}},
		{name: "squeeze", attrs: ir.A("axes", []int{1, -1}), in: []*tensor.Tensor{x(2, 1, 3, 1)}},
		{name: "squeeze", attrs: ir.A("axes", []int{1}), in: []*tensor.Tensor{x(2, 1, 3)}, dyn: [][]int{{0, 1, 2}}},
		{name: "squeeze", attrs: ir.A("axes", []int{}), in: []*tensor.Tensor{x(1, 3, 1)}},
		{name: "squeeze", attrs: ir.A("axes", []int{}), in: []*tensor.Tensor{x(2, 3)}},
		{name: "unsqueeze", attrs: ir.A("axes", []int{0, -1}), in: []*tensor.Tensor{x(2, 3)}},
		{name: "unsqueeze", attrs: ir.A("axes", []int{1}), in: []*tensor.Tensor{x(2, 3)}, dyn: [][]int{{0, 1}}},
		// Copies.
		{name: "transpose", attrs: ir.A("perm", []int{2, 0, 1}), in: []*tensor.Tensor{x(2, 3, 4)}},
		{name: "transpose", attrs: ir.A("perm", []int{-1, -3, -2}), in: []*tensor.Tensor{x(2, 3, 4)}, dyn: [][]int{{0, 1, 2}}},
		{name: "transpose", attrs: ir.A("perm", []int{0, 1}), in: []*tensor.Tensor{x(2, 3)}},
		{name: "expand", attrs: ir.A("shape", []int{2, 3, 4}), in: []*tensor.Tensor{x(3, 1)}},
		{name: "expand", attrs: ir.A("shape", []int{3, -1}), in: []*tensor.Tensor{x(1, 4)}},
		{name: "expand", attrs: ir.A("shape", []int{2, 3, 4}), in: []*tensor.Tensor{x(3, 1)}, dyn: [][]int{{0, 1}}},
		{name: "expand", attrs: ir.A("shape", []int{2, -1, 4}), in: []*tensor.Tensor{x(3, 4)}, dyn: [][]int{{0}}},
		{name: "expand", attrs: ir.A("shape", []int{2, 3}), in: []*tensor.Tensor{x(2, 3)}},
		// concat: static sizes, one dynamic (in the middle, first, last),
		// two dynamic (split_like), size-0 operands, negative axes.
		{name: "concat", attrs: ir.A("axis", 1), in: []*tensor.Tensor{x(2, 3), x(2, 1), x(2, 4)}},
		{name: "concat", attrs: ir.A("axis", -1), in: []*tensor.Tensor{x(2, 3), x(2, 1), x(2, 4)}, dyn: [][]int{nil, {1}, {0}}},
		{name: "concat", attrs: ir.A("axis", 0), in: []*tensor.Tensor{x(2, 3), x(1, 3), x(3, 3)}, dyn: [][]int{{0}}},
		{name: "concat", attrs: ir.A("axis", 0), in: []*tensor.Tensor{x(2, 3), x(1, 3), x(3, 3)}, dyn: [][]int{nil, nil, {0}}},
		{name: "concat", attrs: ir.A("axis", 0), in: []*tensor.Tensor{x(2, 3), x(0, 3), x(1, 3), x(0, 3)}, dyn: [][]int{nil, nil, {0}}},
		{name: "concat", attrs: ir.A("axis", 0), in: []*tensor.Tensor{x(2, 3), x(1, 3), x(0, 3), x(2, 3)}, dyn: [][]int{{0}}},
		{name: "concat", attrs: ir.A("axis", -2), in: []*tensor.Tensor{x(2, 3), x(1, 3), x(3, 3)}, dyn: [][]int{{0}, nil, {0, 1}}},
		{name: "concat", attrs: ir.A("axis", 1), in: []*tensor.Tensor{x(2, 0), x(2, 2), x(2, 0)}, dyn: [][]int{{1}, nil, {1}}},
		{name: "concat", attrs: ir.A("axis", 0), in: []*tensor.Tensor{x(3)}},
		// split: all results, and some without a gradient (static and
		// dynamic zeros).
		{name: "split", attrs: ir.A("sections", []int{2, -1, 3}, "axis", 1), in: []*tensor.Tensor{x(2, 7)}},
		{name: "split", attrs: ir.A("sections", []int{2, -1, 3}, "axis", -1), in: []*tensor.Tensor{x(2, 7)}, only: []int{1}},
		{name: "split", attrs: ir.A("sections", []int{2, -1, 3}, "axis", 1), in: []*tensor.Tensor{x(2, 7)}, dyn: [][]int{{0, 1}}, only: []int{0}},
		{name: "split", attrs: ir.A("sections", []int{1, 2}, "axis", 0), in: []*tensor.Tensor{x(3, 2)}, dyn: [][]int{{1}}, only: []int{1}},
		// slice: strides, negative strides, negative axes, clamping, empty.
		{name: "slice", attrs: slice([]int{0, 1}, []int{1, -1}, []int{4, -7}, []int{2, -2}), in: []*tensor.Tensor{x(5, 6)}},
		{name: "slice", attrs: slice([]int{-1}, []int{1}, []int{100}, nil), in: []*tensor.Tensor{x(3, 4)}},
		{name: "slice", attrs: slice([]int{0, 2}, []int{-100, 5}, []int{100, 0}, []int{3, -1}), in: []*tensor.Tensor{x(5, 2, 6)}, dyn: [][]int{{0, 2}}},
		{name: "slice", attrs: slice([]int{1}, []int{2}, []int{2}, nil), in: []*tensor.Tensor{x(3, 4)}},
		{name: "slice", attrs: slice([]int{0}, []int{-1}, []int{-100}, []int{-1}), in: []*tensor.Tensor{x(4, 3)}, dyn: [][]int{{1}}},
		{name: "slice", attrs: slice([]int{1}, []int{0}, []int{4}, []int{7}), in: []*tensor.Tensor{x(2, 4)}},
		// gather: duplicates, negative indices, i32 and i64, any index
		// rank, negative axes, dynamic size along the axis.
		{name: "gather", attrs: ir.A("axis", 0), in: []*tensor.Tensor{x(5, 3), i64([]int64{1, 3, 1, -1, -4})}},
		{name: "gather", attrs: ir.A("axis", 1), in: []*tensor.Tensor{x(2, 4, 3), i32([]int64{0, 3, 3, 0, -1, 2}, 2, 3)}},
		{name: "gather", attrs: ir.A("axis", -1), in: []*tensor.Tensor{x(2, 3), i64([]int64{2}, []int{}...)}},
		{name: "gather", attrs: ir.A("axis", -2), in: []*tensor.Tensor{x(4, 3), i32([]int64{3, 3, 1})}, dyn: [][]int{{0}, {0}}},
		{name: "gather", attrs: ir.A("axis", 1), in: []*tensor.Tensor{x(2, 4, 3), i64([]int64{2, 2, -2, 0}, 2, 2)}, dyn: [][]int{{0, 1, 2}, {0, 1}}},
		{name: "gather", attrs: ir.A("axis", 0), in: []*tensor.Tensor{x(3, 2), i64(nil, 0)}},
		// topk: k < n, k = n, k = 0 excluded (no element), negative axes.
		{name: "topk", attrs: ir.A("k", 3, "axis", -1), in: []*tensor.Tensor{x(4, 6)}},
		{name: "topk", attrs: ir.A("k", 2, "axis", 0), in: []*tensor.Tensor{x(5, 3)}},
		{name: "topk", attrs: ir.A("k", 4, "axis", 1), in: []*tensor.Tensor{x(2, 4, 3)}, dyn: [][]int{{1}}},
		{name: "topk", attrs: ir.A("k", 2, "axis", -2), in: []*tensor.Tensor{x(2, 5, 3)}, dyn: [][]int{{0, 1, 2}}},
		// The helper ops' own rules.
		{name: "reshape_like", in: []*tensor.Tensor{x(2, 6), x(3, 4)}},
		{name: "reshape_like", in: []*tensor.Tensor{x(2, 6), x(3, 4)}, dyn: [][]int{{0, 1}, {0}}},
		{name: "split_like", attrs: ir.A("axis", 1, "sections", []int{-1, 3, -1}), in: []*tensor.Tensor{x(2, 7), x(2, 3), x(1, 1)}},
		{name: "split_like", attrs: ir.A("axis", 1, "sections", []int{-1, 3, -1}), in: []*tensor.Tensor{x(2, 7), x(2, 3), x(1, 1)}, dyn: [][]int{{1}}, only: []int{1}},
		{name: "slice_grad", attrs: ir.A("axes", []int{0, 1}, "starts", []int{1, -1}, "ends", []int{4, -7}, "strides", []int{2, -2}, "shape", []int{5, 6}), in: []*tensor.Tensor{x(2, 3)}},
		{name: "slice_grad", attrs: ir.A("axes", []int{1}, "starts", []int{1}, "ends", []int{3}), in: []*tensor.Tensor{x(2, 2), x(2, 4)}, dyn: [][]int{{0}, {0, 1}}},
		{name: "gather_grad", attrs: ir.A("axis", 1, "size", 5), in: []*tensor.Tensor{x(2, 4, 3), i64([]int64{1, 1, -1, 0})}},
		{name: "gather_grad", attrs: ir.A("axis", -1), in: []*tensor.Tensor{x(2, 2, 2), i32([]int64{2, 0, 2, 2}, 2, 2), x(2, 3)}, dyn: [][]int{nil, nil, {1}}},
		{name: "take_along_axis", attrs: ir.A("axis", 1), in: []*tensor.Tensor{x(3, 5), i64([]int64{0, 4, 4, -1, 2, 2, 2, 1, 0, 3, 3, -5}, 3, 4)}},
		{name: "take_along_axis", attrs: ir.A("axis", 0), in: []*tensor.Tensor{x(3, 2), i32([]int64{1, 1, 2, 0}, 2, 2)}, dyn: [][]int{{0}}},
		{name: "scatter_add_along_axis", attrs: ir.A("axis", 1, "size", 5), in: []*tensor.Tensor{x(3, 4), i64([]int64{0, 4, 4, -1, 2, 2, 2, 1, 0, 3, 3, -5}, 3, 4)}},
		{name: "scatter_add_along_axis", attrs: ir.A("axis", -2), in: []*tensor.Tensor{x(2, 2), i32([]int64{1, 1, 2, 0}, 2, 2), x(3, 2)}, dyn: [][]int{{0}, {0}, {0}}},
	}
	for _, c := range cases {
		for mode := range shpModeNames {
			t.Run(fmt.Sprintf("%s%s/%s/%v", c.name, c.attrs, shpModeNames[mode], c.dyn), func(t *testing.T) {
				shpCheckGrad(t, mode, c)
			})
		}
	}
	for _, c := range cases {
		release(c.in...)
	}
}

// TestShpGradResiduals checks what the rules keep from the forward pass:
// static shapes are read from types, so reshape, slice and concat with at
// most one dynamic size keep nothing; gather keeps only its index.
func TestShpGradResiduals(t *testing.T) {
	for _, c := range []struct {
		name  string
		attrs ir.Attrs
		in    []ir.Type
		reads []int // operands the backward reads
	}{
		{"reshape", ir.A("shape", []int{-1}), []ir.Type{shpT(ir.F64, -1, 3)}, nil},
		{"reshape", ir.A("shape", []int{-1}), []ir.Type{shpT(ir.F64, -1, -1)}, []int{0}},
		{"flatten", nil, []ir.Type{shpT(ir.F64, 2, -1, 3)}, nil},
		{"squeeze", ir.A("axes", []int{1}), []ir.Type{shpT(ir.F64, -1, -1)}, nil},
		{"unsqueeze", ir.A("axes", []int{1}), []ir.Type{shpT(ir.F64, -1, -1)}, nil},
		{"transpose", ir.A("perm", []int{1, 0}), []ir.Type{shpT(ir.F64, -1, -1)}, nil},
		{"expand", ir.A("shape", []int{2, 3}), []ir.Type{shpT(ir.F64, 1, 3)}, nil},
		{"slice", ir.A("axes", []int{0}, "starts", []int{1}, "ends", []int{3}), []ir.Type{shpT(ir.F64, 4, 3)}, nil},
		{"slice", ir.A("axes", []int{0}, "starts", []int{1}, "ends", []int{3}), []ir.Type{shpT(ir.F64, -1, 3)}, []int{0}},
		{"concat", ir.A("axis", 0), []ir.Type{shpT(ir.F64, 2, -1), shpT(ir.F64, -1, 3), shpT(ir.F64, 4, 3)}, nil},
		{"concat", ir.A("axis", 0), []ir.Type{shpT(ir.F64, -1, 3), shpT(ir.F64, 1, 3), shpT(ir.F64, -1, 3)}, []int{0, 2}},
		{"gather", ir.A("axis", 0), []ir.Type{shpT(ir.F64, 5, -1), shpT(ir.I64, -1)}, []int{1}},
		{"gather", ir.A("axis", 0), []ir.Type{shpT(ir.F64, -1, 3), shpT(ir.I64, -1)}, []int{0, 1}},
	} {
		b := ir.NewBuilder(ir.NewProgram())
		var xs []*ir.Value
		for i, typ := range c.in {
			xs = append(xs, ops.Data(b, fmt.Sprint("x", i), typ.DType, typ.Dims...))
		}
		op := b.Op(c.name, c.attrs, xs...)
		if err := b.Err(); err != nil {
			t.Fatal(err)
		}
		d, _ := ops.Lookup(c.name)
		dy := make([]*ir.Value, op.NumResults())
		for j, y := range op.Results() {
			if y.Type().DType.IsFloat() {
				dy[j] = ops.FullLike(b, y, 1, ir.InvalidDType)
			}
		}
		var read []int
		resolve := func(v *ir.Value) *ir.Value {
			for i, x := range op.Operands() {
				if x == v && !slices.Contains(read, i) {
					read = append(read, i)
				}
			}
			return v
		}
		need := slices.Repeat([]bool{true}, op.NumOperands())
		for i, x := range op.Operands() {
			need[i] = x.Type().DType.IsFloat()
		}
		if _, err := d.Grad(ops.NewGradContext(b, op, dy, need, resolve)); err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if err := b.Err(); err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		slices.Sort(read)
		if !slices.Equal(read, c.reads) {
			t.Errorf("%s %s on %v: the rule reads operands %v, want %v", c.name, c.attrs, c.in, read, c.reads)
		}
	}
}

// TestShpGradCatalog checks that every op of the shape, indexing and
// random files says how gradients flow through it.
func TestShpGradCatalog(t *testing.T) {
	noGrad := []string{"one_hot", "arange", "uniform_random", "gaussian_random"}
	withGrad := []string{"reshape", "transpose", "squeeze", "unsqueeze", "flatten", "expand", "concat", "split",
		"slice", "gather", "topk", "reshape_like", "split_like", "slice_grad", "gather_grad", "take_along_axis",
		"scatter_add_along_axis"}
	for _, n := range noGrad {
		d, ok := ops.Lookup(n)
		if !ok || !d.NoGrad || d.Grad != nil {
			t.Errorf("%s: want NoGrad and no Grad rule", n)
		}
	}
	for _, n := range withGrad {
		d, ok := ops.Lookup(n)
		if !ok || d.Grad == nil || d.NoGrad {
			t.Errorf("%s: want a Grad rule", n)
		}
	}
}

// ---- the helper ops' forward ----

// shpRunThreads builds the op for the given (possibly dynamic) operand
// types and runs its kernel on in with the given thread count.
func shpRunThreads(t testing.TB, a *memory.Allocator, threads int, name string, attrs ir.Attrs, types []ir.Type, in ...*tensor.Tensor) []*tensor.Tensor {
	t.Helper()
	op, err := buildOp(t, name, attrs, types...)
	if err != nil {
		t.Fatalf("%s: build: %v", name, err)
	}
	k, err := ops.Bind(op)
	if err != nil {
		t.Fatalf("%s: bind: %v", name, err)
	}
	outs, err := k(&ops.Ctx{Alloc: a, Threads: threads}, in)
	if err != nil {
		t.Fatalf("%s %s: %v", name, attrs, err)
	}
	for i, o := range outs {
		if !op.Result(i).Type().Refines(ir.TensorOf(ir.DType(o.DType()), o.Shape()...)) &&
			!ir.TensorOf(ir.DType(o.DType()), o.Shape()...).Refines(op.Result(i).Type()) {
			t.Fatalf("%s: result %d is %s, op type says %s", name, i, o.Type(), op.Result(i).Type())
		}
	}
	return outs
}

// shpTypes returns the types of in, with every dim dynamic when dyn.
func shpTypes(dyn bool, in ...*tensor.Tensor) []ir.Type {
	types := make([]ir.Type, len(in))
	for i, x := range in {
		dims := slices.Clone(x.Shape())
		if dyn {
			dims = slices.Repeat([]int{ir.Dynamic}, len(dims))
		}
		types[i] = ir.TensorOf(ir.DType(x.DType()), dims...)
	}
	return types
}

func TestShpGradReshapeLike(t *testing.T) {
	shpDebug(t)
	r := rand.New(rand.NewPCG(51, 52))
	a := memory.New(memory.Options{})
	for _, dt := range shpDTypes {
		for range 10 {
			shape := shpShape(r, r.IntN(4))
			n := shpSize(shape)
			to := []int{n}
			if n > 1 && n%2 == 0 {
				to = []int{2, n / 2, 1}
			}
			x := randTensor(t, a, r, dt, shape...)
			like := randTensor(t, a, r, tensor.I32, to...)
			for _, dyn := range []bool{false, true} {
				before := a.Stats().Allocated.Current
				refs := x.Refs()
				out := shpRunThreads(t, a, 2, "reshape_like", nil, shpTypes(dyn, x, like), x, like)[0]
				if out.Storage() != x.Storage() || x.Refs() != refs+1 || a.Stats().Allocated.Current != before {
					t.Fatalf("reshape_like %v as %v: not a view", shape, to)
				}
				closeEnough(t, "reshape_like", out, shpVals(x), to, 0)
				out.Release()
			}
			release(x, like)
		}
	}
	wantAllocated(t, a, 0)
	x := randTensor(t, a, r, tensor.F32, 2, 3)
	like := randTensor(t, a, r, tensor.F32, 5)
	shpWantErr(t, "reshape_like", nil, shpTypes(false, x, like), "6 elements", "5 elements")
	shpWantKernelErr(t, a, "reshape_like", nil, shpTypes(true, x, like), []*tensor.Tensor{x, like}, "cannot reshape")
	release(x, like)
	wantAllocated(t, a, 0)
	b := ir.NewBuilder(ir.NewProgram())
	v := ops.ReshapeLike(b, ops.Data(b, "x", ir.F32, -1, 4), ops.Data(b, "y", ir.I64, 2, -1, 2))
	if !v.Type().Equal(shpT(ir.F32, 2, -1, 2)) || b.Err() != nil {
		t.Fatalf("ReshapeLike: %v %v", v.Type(), b.Err())
	}
}

func TestShpGradSplitLike(t *testing.T) {
	shpDebug(t)
	r := rand.New(rand.NewPCG(53, 54))
	a := memory.New(memory.Options{})
	for _, dt := range shpDTypes {
		for range 15 {
			rank := 1 + r.IntN(3)
			axis := r.IntN(rank)
			shape := shpShape(r, rank)
			n := 1 + r.IntN(4)
			sizes := make([]int, n)
			sections := make([]int, n)
			var likes []*tensor.Tensor
			for i := range sizes {
				sizes[i] = shpDim(r)
				sections[i] = sizes[i]
				if r.IntN(2) == 0 {
					sections[i] = -1
					ls := slices.Clone(shape)
					ls[axis] = sizes[i]
					likes = append(likes, randTensor(t, a, r, tensor.F32, ls...))
				}
			}
			shape[axis] = 0
			for _, s := range sizes {
				shape[axis] += s
			}
			x := randTensor(t, a, r, dt, shape...)
			attrs := ir.A("axis", axis-rank*r.IntN(2), "sections", sections)
			in := append([]*tensor.Tensor{x}, likes...)
			for _, dyn := range []bool{false, true} {
				outs := shpRunThreads(t, a, 3, "split_like", attrs, shpTypes(dyn, in...), in...)
				off := 0
				for i, o := range outs {
					want := slices.Clone(shape)
					want[axis] = sizes[i]
					ref := shpRef(shpVals(x), want, func(idx []int) int {
						src := slices.Clone(idx)
						src[axis] += off
						return shpRavel(src, shape)
					})
					closeEnough(t, fmt.Sprintf("split_like %v %s piece %d", shape, attrs, i), o, ref, want, 0)
					o.Release()
					off += sizes[i]
				}
			}
			release(in...)
		}
	}
	wantAllocated(t, a, 0)
	x := randTensor(t, a, r, tensor.F64, 2, 5)
	l1 := randTensor(t, a, r, tensor.F64, 2, 3)
	attrs := ir.A("axis", 1, "sections", []int{1, -1})
	shpWantErr(t, "split_like", attrs, shpTypes(false, x, l1), "add up to 4", "size 5")
	shpWantErr(t, "split_like", attrs, shpTypes(false, x), "more -1 entries than the 0 like operands")
	shpWantErr(t, "split_like", attrs, shpTypes(false, x, l1, l1), "1 -1 entries for 2 like operands")
	shpWantKernelErr(t, a, "split_like", attrs, shpTypes(true, x, l1), []*tensor.Tensor{x, l1}, "add up to 4", "size 5")
	release(x, l1)
	wantAllocated(t, a, 0)
}

// shpSliceSel lists, per axis of shape, the indices slice {axes, starts,
// ends, strides} selects, using the numpy reference shpSliceIndices.
func shpSliceSel(shape, axes, starts, ends, strides []int) [][]int {
	sel := make([][]int, len(shape))
	for i, d := range shape {
		sel[i] = make([]int, d)
		for j := range sel[i] {
			sel[i][j] = j
		}
	}
	for k, a := range axes {
		if a < 0 {
			a += len(shape)
		}
		sel[a] = shpSliceIndices(starts[k], ends[k], strides[k], shape[a])
	}
	return sel
}

// shpRandSlice draws slice attributes for shape: a random subset of axes
// (possibly negative), bounds past either end, strides in ±[1, 3].
func shpRandSlice(r *rand.Rand, shape []int) (axes, starts, ends, strides []int) {
	for a, d := range shape {
		if r.IntN(3) == 0 {
			continue
		}
		ax := a
		if r.IntN(2) == 0 {
			ax -= len(shape)
		}
		axes = append(axes, ax)
		starts = append(starts, r.IntN(2*d+5)-d-2)
		ends = append(ends, r.IntN(2*d+5)-d-2)
		s := 1 + r.IntN(3)
		if r.IntN(2) == 0 {
			s = -s
		}
		strides = append(strides, s)
	}
	return
}

func TestShpGradSliceGrad(t *testing.T) {
	shpDebug(t)
	r := rand.New(rand.NewPCG(55, 56))
	a := memory.New(memory.Options{})
	check := func(dt tensor.DType, shape []int, threads int) {
		t.Helper()
		axes, starts, ends, strides := shpRandSlice(r, shape)
		sel := shpSliceSel(shape, axes, starts, ends, strides)
		dyShape := make([]int, len(shape))
		for i, s := range sel {
			dyShape[i] = len(s)
		}
		dy := randTensor(t, a, r, dt, dyShape...)
		want := make([]float64, shpSize(shape))
		vals := shpVals(dy)
		for p := range vals {
			idx := shpUnravel(p, dyShape)
			for i, j := range idx {
				idx[i] = sel[i][j]
			}
			want[shpRavel(idx, shape)] = vals[p]
		}
		like := randTensor(t, a, r, tensor.I64, shape...)
		base := ir.A("axes", axes, "starts", starts, "ends", ends, "strides", strides)
		for _, dyn := range []bool{false, true} {
			before := a.Stats().Allocated.Current
			var out *tensor.Tensor
			if dyn {
				out = shpRunThreads(t, a, threads, "slice_grad", base, shpTypes(true, dy, like), dy, like)[0]
			} else {
				attrs := append(slices.Clone(base), ir.A("shape", shape)...)
				out = shpRunThreads(t, a, threads, "slice_grad", attrs, shpTypes(false, dy), dy)[0]
			}
			closeEnough(t, fmt.Sprintf("slice_grad %v %s", shape, base), out, want, shape, 0)
			out.Release()
			wantAllocated(t, a, before)
		}
		release(dy, like)
	}
	for _, dt := range shpDTypes {
		for range 30 {
			check(dt, shpShape(r, r.IntN(4)), 2)
		}
	}
	check(tensor.F32, []int{301, 257}, 4) // in parallel
	check(tensor.F64, []int{7, 64, 129}, 3)
	wantAllocated(t, a, 0)

	// Errors: dy not of the slice's shape, statically and at run time.
	dy := randTensor(t, a, r, tensor.F32, 2, 3)
	like := randTensor(t, a, r, tensor.F32, 5, 6)
	attrs := ir.A("axes", []int{0}, "starts", []int{1}, "ends", []int{4})
	shpWantErr(t, "slice_grad", append(slices.Clone(attrs), ir.A("shape", []int{5, 6})...), shpTypes(false, dy), "tensor<2x3xf32>", "[3 6]")
	shpWantErr(t, "slice_grad", append(slices.Clone(attrs), ir.A("shape", []int{5, 6})...), shpTypes(false, dy, like), "not both")
	shpWantErr(t, "slice_grad", attrs, shpTypes(false, dy), "shape")
	shpWantKernelErr(t, a, "slice_grad", attrs, shpTypes(true, dy, like), []*tensor.Tensor{dy, like}, "tensor<2x3xf32>", "[3 6]")
	release(dy, like)
	wantAllocated(t, a, 0)
	b := ir.NewBuilder(ir.NewProgram())
	v := ops.SliceGrad(b, ops.Data(b, "dy", ir.F32, -1, 2), ops.Data(b, "x", ir.F64, -1, 5), nil, []int{1}, []int{0}, []int{2}, []int{1})
	w := ops.SliceGrad(b, ops.Data(b, "dz", ir.F32, 2), nil, []int{6}, []int{0}, []int{-1}, []int{-100}, []int{-3})
	if !v.Type().Equal(shpT(ir.F32, -1, 5)) || !w.Type().Equal(shpT(ir.F32, 6)) || b.Err() != nil {
		t.Fatalf("SliceGrad: %v %v %v", v.Type(), w.Type(), b.Err())
	}
}

// shpRefGatherGrad is the adjoint of gather by definition: every element of
// dy is added, in order, to the element of x's shape gather read it from.
func shpRefGatherGrad(dy, index *tensor.Tensor, shape []int, axis int) []float64 {
	want := make([]float64, shpSize(shape))
	k := index.Rank()
	for p, v := range shpVals(dy) {
		idx := shpUnravel(p, dy.Shape())
		i := int(index.Float64At(shpRavel(idx[axis:axis+k], index.Shape())))
		if i < 0 {
			i += shape[axis]
		}
		want[shpRavel(slices.Concat(idx[:axis], []int{i}, idx[axis+k:]), shape)] += v
	}
	return want
}

func TestShpGradGatherGrad(t *testing.T) {
	shpDebug(t)
	r := rand.New(rand.NewPCG(57, 58))
	a := memory.New(memory.Options{})
	check := func(dt, idt tensor.DType, shape []int, axis int, ishape []int, threads int) {
		t.Helper()
		index := shpRandIdx(t, r, idt, max(shape[axis], 1), true, ishape...)
		if shape[axis] == 0 {
			release(index)
			index = shpIdx(t, idt, nil, 0)
		}
		dyShape := slices.Concat(shape[:axis], index.Shape(), shape[axis+1:])
		dy := randTensor(t, a, r, dt, dyShape...)
		want := shpRefGatherGrad(dy, index, shape, axis)
		like := randTensor(t, a, r, tensor.Bool, shape...)
		tol := 1e-12
		if dt == tensor.F32 {
			tol = 1e-5
		}
		ax := axis - len(shape)*r.IntN(2)
		for _, dyn := range []bool{false, true} {
			var out *tensor.Tensor
			if dyn {
				out = shpRunThreads(t, a, threads, "gather_grad", ir.A("axis", ax), shpTypes(true, dy, index, like), dy, index, like)[0]
			} else {
				out = shpRunThreads(t, a, threads, "gather_grad", ir.A("axis", ax, "size", shape[axis]), shpTypes(false, dy, index), dy, index)[0]
			}
			closeEnough(t, fmt.Sprintf("gather_grad %v axis %d index %v", shape, ax, index.Shape()), out, want, shape, tol)
			out.Release()
		}
		release(dy, index, like)
	}
	for _, dt := range []tensor.DType{tensor.F32, tensor.F64} {
		for _, idt := range []tensor.DType{tensor.I32, tensor.I64} {
			for range 25 {
				shape := shpShape(r, 1+r.IntN(3))
				check(dt, idt, shape, r.IntN(len(shape)), shpShape(r, r.IntN(3)), 2)
			}
		}
	}
	// Large, in parallel, with many duplicates: by rows and by columns.
	check(tensor.F64, tensor.I64, []int{13, 3000}, 0, []int{40}, 4)
	check(tensor.F32, tensor.I32, []int{400, 9}, 1, []int{5, 20}, 3)
	wantAllocated(t, a, 0)

	dy := randTensor(t, a, r, tensor.F32, 2, 3)
	bad := shpIdx(t, tensor.I64, []int64{0, 4, 1})
	good := shpIdx(t, tensor.I64, []int64{0, 1})
	attrs := ir.A("axis", 1, "size", 4)
	shpWantKernelErr(t, a, "gather_grad", attrs, shpTypes(false, dy, bad), []*tensor.Tensor{dy, bad}, "index 4 at position [1]", "size 4")
	shpWantKernelErr(t, a, "gather_grad", attrs, shpTypes(true, dy, good), []*tensor.Tensor{dy, good}, "does not hold index")
	shpWantErr(t, "gather_grad", attrs, shpTypes(false, dy, good), "does not hold index")
	shpWantErr(t, "gather_grad", ir.A("axis", 2, "size", 4), shpTypes(false, dy, bad), "axis 2")
	shpWantErr(t, "gather_grad", ir.A("axis", 1), shpTypes(false, dy, bad), "size")
	shpWantErr(t, "gather_grad", attrs, shpTypes(false, bad, bad), "f32 or f64")
	release(dy, bad, good)
	wantAllocated(t, a, 0)
	b := ir.NewBuilder(ir.NewProgram())
	v := ops.GatherGrad(b, ops.Data(b, "dy", ir.F32, 3, 2, 7, -1), ops.Data(b, "i", ir.I64, 2, 7), nil, 1, 4)
	w := ops.GatherGrad(b, ops.Data(b, "dz", ir.F64, 3), ops.Data(b, "j", ir.I32), ops.Data(b, "x", ir.F32, 3, -1), -1, 0)
	if !v.Type().Equal(shpT(ir.F32, 3, 4, -1)) || !w.Type().Equal(shpT(ir.F64, 3, -1)) || b.Err() != nil {
		t.Fatalf("GatherGrad: %v %v %v", v.Type(), w.Type(), b.Err())
	}
}

func TestShpGradAlongAxis(t *testing.T) {
	shpDebug(t)
	r := rand.New(rand.NewPCG(59, 60))
	a := memory.New(memory.Options{})
	check := func(dt, idt tensor.DType, shape []int, axis, k, threads int) {
		t.Helper()
		ishape := slices.Clone(shape)
		ishape[axis] = k
		if shape[axis] == 0 {
			ishape[axis] = 0
		}
		index := shpRandIdx(t, r, idt, max(shape[axis], 1), true, ishape...)
		x := randTensor(t, a, r, dt, shape...)
		ax := axis - len(shape)*r.IntN(2)
		at := func(idx []int) []int {
			i := int(index.Float64At(shpRavel(idx, ishape)))
			if i < 0 {
				i += shape[axis]
			}
			src := slices.Clone(idx)
			src[axis] = i
			return src
		}
		// take_along_axis, for every dtype.
		want := shpRef(shpVals(x), ishape, func(idx []int) int { return shpRavel(at(idx), shape) })
		for _, dyn := range []bool{false, true} {
			out := shpRunThreads(t, a, threads, "take_along_axis", ir.A("axis", ax), shpTypes(dyn, x, index), x, index)[0]
			closeEnough(t, fmt.Sprintf("take_along_axis %v axis %d index %v", shape, ax, ishape), out, want, ishape, 0)
			out.Release()
		}
		// scatter_add_along_axis, its adjoint, for floats.
		if dt == tensor.F32 || dt == tensor.F64 {
			src := randTensor(t, a, r, dt, ishape...)
			want := make([]float64, shpSize(shape))
			for p, v := range shpVals(src) {
				want[shpRavel(at(shpUnravel(p, ishape)), shape)] += v
			}
			tol := 1e-12
			if dt == tensor.F32 {
				tol = 1e-5
			}
			for _, dyn := range []bool{false, true} {
				var out *tensor.Tensor
				if dyn {
					out = shpRunThreads(t, a, threads, "scatter_add_along_axis", ir.A("axis", ax), shpTypes(true, src, index, x), src, index, x)[0]
				} else {
					out = shpRunThreads(t, a, threads, "scatter_add_along_axis", ir.A("axis", ax, "size", shape[axis]), shpTypes(false, src, index), src, index)[0]
				}
				closeEnough(t, fmt.Sprintf("scatter_add_along_axis %v axis %d index %v", shape, ax, ishape), out, want, shape, tol)
				out.Release()
			}
			release(src)
		}
		release(x, index)
	}
	for _, dt := range shpDTypes {
		for _, idt := range []tensor.DType{tensor.I32, tensor.I64} {
			for range 20 {
				shape := shpShape(r, 1+r.IntN(3))
				check(dt, idt, shape, r.IntN(len(shape)), shpDim(r), 2)
			}
		}
	}
	check(tensor.F64, tensor.I64, []int{3, 50, 1500}, 1, 70, 4)
	check(tensor.F32, tensor.I32, []int{2000, 30}, 1, 45, 3)
	wantAllocated(t, a, 0)

	x := randTensor(t, a, r, tensor.F32, 2, 3)
	bad := shpIdx(t, tensor.I64, []int64{0, 3, 1, -4}, 2, 2)
	wrong := shpIdx(t, tensor.I64, []int64{0, 1, 1}, 3, 1)
	shpWantKernelErr(t, a, "take_along_axis", ir.A("axis", 1), shpTypes(false, x, bad), []*tensor.Tensor{x, bad}, "index 3 at position [0 1]", "size 3")
	shpWantKernelErr(t, a, "take_along_axis", ir.A("axis", 1), shpTypes(true, x, wrong), []*tensor.Tensor{x, wrong}, "differs from", "outside axis 1")
	shpWantErr(t, "take_along_axis", ir.A("axis", 1), shpTypes(false, x, wrong), "differs from", "outside axis 1")
	src := randTensor(t, a, r, tensor.F64, 2, 2)
	sattrs := ir.A("axis", 1, "size", 3)
	shpWantKernelErr(t, a, "scatter_add_along_axis", sattrs, shpTypes(false, src, bad), []*tensor.Tensor{src, bad}, "index 3 at position [0 1]", "size 3")
	shpWantKernelErr(t, a, "scatter_add_along_axis", sattrs, shpTypes(true, src, wrong), []*tensor.Tensor{src, wrong}, "differs in shape")
	shpWantErr(t, "scatter_add_along_axis", sattrs, shpTypes(false, src, wrong), "differs in shape")
	shpWantErr(t, "scatter_add_along_axis", sattrs, shpTypes(false, bad, bad), "f32 or f64")
	shpWantErr(t, "scatter_add_along_axis", ir.A("axis", 1), shpTypes(false, src, bad), "size")
	shpWantErr(t, "scatter_add_along_axis", sattrs, shpTypes(false, src, bad, src), "not both")
	release(x, bad, wrong, src)
	wantAllocated(t, a, 0)
}

// TestShpGradThreads checks that the scatter-adds give the same bits on
// any number of threads, with many repeated indices.
func TestShpGradThreads(t *testing.T) {
	r := rand.New(rand.NewPCG(61, 62))
	a := memory.New(memory.Options{})
	dy := randTensor(t, a, r, tensor.F32, 3000, 256)
	index := shpRandIdx(t, r, tensor.I64, 50, true, 3000)
	src := randTensor(t, a, r, tensor.F32, 4, 2000, 9)
	along := shpRandIdx(t, r, tensor.I32, 7, true, 4, 2000, 9)
	x := randTensor(t, a, r, tensor.F32, 4, 7, 9)
	var ref [3][]byte
	for _, threads := range []int{1, 2, 3, 8} {
		outs := []*tensor.Tensor{
			shpRunThreads(t, a, threads, "gather_grad", ir.A("axis", 0, "size", 50), shpTypes(false, dy, index), dy, index)[0],
			shpRunThreads(t, a, threads, "scatter_add_along_axis", ir.A("axis", 1, "size", 7), shpTypes(false, src, along), src, along)[0],
			shpRunThreads(t, a, threads, "take_along_axis", ir.A("axis", 1), shpTypes(false, x, along), x, along)[0],
		}
		for i, o := range outs {
			if ref[i] == nil {
				ref[i] = slices.Clone(o.Raw())
			} else if !slices.Equal(ref[i], o.Raw()) {
				t.Fatalf("result %d on %d threads differs from 1 thread", i, threads)
			}
		}
		release(outs...)
	}
	release(dy, index, src, along, x)
	wantAllocated(t, a, 0)
}

func TestShpGradOOMSweep(t *testing.T) {
	r := rand.New(rand.NewPCG(63, 64))
	a := memory.New(memory.Options{})
	x := randTensor(t, a, r, tensor.F64, 3, 2, 5)
	like := randTensor(t, a, r, tensor.F32, 5, 6)
	dy := randTensor(t, a, r, tensor.F32, 3, 6)
	l1 := randTensor(t, a, r, tensor.I64, 3, 1, 5)
	idx := shpIdx(t, tensor.I64, []int64{1, 0, -1, 1}, 2, 2)
	along := shpIdx(t, tensor.I32, []int64{0, 1, 2, 3, 4, -1, 0, 0, 0, 0, 1, 1, 1, 1, 1, 2, 2, 2, 2, 2, 3, 3, 3, 3, 3, 4, 4, 4, 4, 4}, 3, 2, 5)
	gdy := randTensor(t, a, r, tensor.F64, 3, 2, 2, 5)
	if n := shpOOMSweep(t, "reshape_like", nil, x, like); n != 0 {
		t.Fatalf("reshape_like, a view, failed under %d limits", n)
	}
	for _, c := range []struct {
		name  string
		attrs ir.Attrs
		in    []*tensor.Tensor
		fails int
	}{
		// 5·6 f32 = 120 bytes: one limit fails.
		{"slice_grad", ir.A("axes", []int{0}, "starts", []int{-1}, "ends", []int{-100}, "strides", []int{-2}, "shape", []int{5, 6}), []*tensor.Tensor{dy}, 1},
		// 3·2·5 f64 = 240 bytes: three limits fail.
		{"gather_grad", ir.A("axis", 1, "size", 2), []*tensor.Tensor{gdy, idx}, 3},
		{"take_along_axis", ir.A("axis", -1), []*tensor.Tensor{x, along}, 3},
		{"scatter_add_along_axis", ir.A("axis", 2, "size", 5), []*tensor.Tensor{x, along}, 3},
		// Pieces of 120 and 120 bytes: the second allocation fails too.
		{"split_like", ir.A("axis", 1, "sections", []int{-1, 1}), []*tensor.Tensor{x, l1}, 2},
	} {
		if n := shpOOMSweep(t, c.name, c.attrs, c.in...); n < c.fails {
			t.Fatalf("%s failed under %d limits, want at least %d", c.name, n, c.fails)
		}
	}
	release(x, like, dy, l1, idx, along, gdy)
	wantAllocated(t, a, 0)
}
