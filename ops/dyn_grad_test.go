package ops_test

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/gopir/gopir/autodiff"
	"github.com/gopir/gopir/ir"
	"github.com/gopir/gopir/memory"
	"github.com/gopir/gopir/ops"
	"github.com/gopir/gopir/tensor"
)

// Gradient checks of the ops with run-time shapes (dyn_*.go, tile.go)
// against finite differences, at the top level, in an if and in a while,
// with static and dynamic operand types.

func TestDynGradRules(t *testing.T) {
	r := rand.New(rand.NewPCG(12, 12))
	x := func(shape ...int) *tensor.Tensor { return f64Rand(t, r, -1, 1, shape...) }
	v := func(vals ...int64) *tensor.Tensor { return dynVec(t, tensor.I64, vals...) }
	v32 := func(vals ...int64) *tensor.Tensor { return dynVec(t, tensor.I32, vals...) }
	in := func(ts ...*tensor.Tensor) []*tensor.Tensor { return ts }
	keep := ir.A("keepdim", true)
	cases := []shpGradCase{
		{name: "reshape_dyn", in: in(x(2, 3, 4), v(4, -1))},
		{name: "reshape_dyn", in: in(x(2, 3, 4), v(0, -1)), dyn: [][]int{{0}}},
		{name: "reshape_dyn", in: in(x(2, 3, 4), v32(-1, 2)), dyn: [][]int{{0, 2}}},
		{name: "reshape_dyn", attrs: ir.A("allowzero", true, "dims", []int{3, 8}), in: in(x(2, 3, 4), v(3, 8))},
		{name: "squeeze_dyn", in: in(x(2, 1, 3, 1), v(1, -1))},
		{name: "squeeze_dyn", in: in(x(2, 1, 3), v(1)), dyn: [][]int{{0, 1, 2}}},
		{name: "unsqueeze_dyn", in: in(x(2, 3), v(0, -1))},
		{name: "unsqueeze_dyn", in: in(x(2, 3), v32(1)), dyn: [][]int{{0, 1}}},
		{name: "expand_dyn", in: in(x(3, 1), v(2, 3, 4))},
		{name: "expand_dyn", in: in(x(1, 4), v(3, 1))},
		{name: "expand_dyn", in: in(x(3, 1), v(2, 1, 4)), dyn: [][]int{{0, 1}}},
		{name: "expand_dyn", in: in(x(2, 3), v(2, 3))},
		{name: "slice_dyn", in: in(x(5, 6), v(1, -1), v(4, -7), v(0, 1), v(2, -2))},
		{name: "slice_dyn", in: in(x(5, 6), v(-100), v(100))},
		{name: "slice_dyn", in: in(x(5, 2, 6), v(-100, 5), v(100, 0), v(0, -1), v(3, -1)), dyn: [][]int{{0, 2}}},
		{name: "slice_dyn", in: in(x(3, 4), v32(2), v32(2), v32(1))},
		{name: "slice_dyn_grad", attrs: ir.A("shape", []int{5, 6}), in: in(x(2, 3), v(1, -1), v(4, -7), v(0, 1), v(2, -2))},
		{name: "slice_dyn_grad", in: in(x(2, 2), x(2, 4), v(1), v(3), v(1)), dyn: [][]int{{0}, {0, 1}}},
		{name: "split_dyn", attrs: ir.A("axis", 1), in: in(x(2, 7), v(2, 2, 3))},
		{name: "split_dyn", attrs: ir.A("axis", -1), in: in(x(2, 7), v(2, 2, 3)), only: []int{1}},
		{name: "split_dyn", attrs: ir.A("axis", 0), in: in(x(3, 2), v32(1, 2)), dyn: [][]int{{0, 1}}, only: []int{0}},
		{name: "tile", attrs: ir.A("repeats", []int{2, 1, 3}), in: in(x(2, 3, 2))},
		{name: "tile", in: in(x(2, 3), v(3, 2))},
		{name: "tile", in: in(x(2, 3), v(2, 0)), dyn: [][]int{{0, 1}}},
		{name: "tile", attrs: ir.A("repeats", []int{2, 2}), in: in(x(2, 3)), dyn: [][]int{{1}}},
	}
	for _, op := range []string{"reduce_sum_dyn", "reduce_mean_dyn", "reduce_max_dyn", "reduce_min_dyn"} {
		cases = append(cases,
			shpGradCase{name: op, in: in(x(3, 4), v(1))},
			shpGradCase{name: op, attrs: keep, in: in(x(3, 4), v(-1))},
			shpGradCase{name: op, in: in(x(2, 3, 4), v(0, -1)), dyn: [][]int{{0, 1}}},
			shpGradCase{name: op, attrs: keep, in: in(x(2, 3, 4), v32(2, 0)), dyn: [][]int{{2}}},
			shpGradCase{name: op, in: in(x(3, 4), v())},
			shpGradCase{name: op, attrs: keep, in: in(x(3, 4), v()), dyn: [][]int{{1}}},
			shpGradCase{name: op, attrs: ir.A("noop_with_empty_axes", true), in: in(x(3, 4), v())},
		)
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

// TestDynGradResiduals checks what the rules keep from the forward pass:
// the index operands, and x only where its shape is not static.
func TestDynGradResiduals(t *testing.T) {
	for _, c := range []struct {
		name  string
		attrs ir.Attrs
		in    []ir.Type
		reads []int
	}{
		{"reshape_dyn", nil, []ir.Type{shpT(ir.F64, -1, 3), shpT(ir.I64, 2)}, nil},
		{"reshape_dyn", nil, []ir.Type{shpT(ir.F64, -1, -1), shpT(ir.I64, 2)}, []int{0}},
		{"unsqueeze_dyn", nil, []ir.Type{shpT(ir.F64, 2, 3), shpT(ir.I64, 1)}, nil},
		{"expand_dyn", nil, []ir.Type{shpT(ir.F64, 3, 1), shpT(ir.I64, 2)}, nil},
		{"expand_dyn", nil, []ir.Type{shpT(ir.F64, -1, 1), shpT(ir.I64, 2)}, []int{0}},
		{"slice_dyn", nil, []ir.Type{shpT(ir.F64, 4, 3), shpT(ir.I64, 1), shpT(ir.I64, 1)}, []int{1, 2}},
		{"slice_dyn", nil, []ir.Type{shpT(ir.F64, -1, 3), shpT(ir.I64, 1), shpT(ir.I64, 1), shpT(ir.I64, 1)}, []int{0, 1, 2, 3}},
		{"tile", nil, []ir.Type{shpT(ir.F64, 4, 3), shpT(ir.I64, 2)}, nil},
		{"tile", nil, []ir.Type{shpT(ir.F64, 4, -1), shpT(ir.I64, 2)}, []int{0}},
		{"reduce_sum_dyn", nil, []ir.Type{shpT(ir.F64, 4, 3), shpT(ir.I64, 1)}, []int{1}},
		{"reduce_mean_dyn", ir.A("keepdim", true), []ir.Type{shpT(ir.F64, 4, 3), shpT(ir.I64, 1)}, nil},
		{"reduce_sum_dyn", nil, []ir.Type{shpT(ir.F64, -1, 3), shpT(ir.I64, 1)}, []int{0, 1}},
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
		dy := []*ir.Value{ops.FullLike(b, op.Result(0), 1, ir.InvalidDType)}
		var read []int
		resolve := func(v *ir.Value) *ir.Value {
			for i, x := range op.Operands() {
				if x == v && !slices.Contains(read, i) {
					read = append(read, i)
				}
			}
			return v
		}
		need := make([]bool, op.NumOperands())
		need[0] = true
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

// TestDynGradRefusals: range with float bounds and tile_grad refuse to be
// differentiated, with an error naming the op; integer ops pass nothing.
func TestDynGradRefusals(t *testing.T) {
	for _, c := range []struct {
		build func(b *ir.Builder, x *ir.Value) *ir.Value
		want  string
	}{
		{func(b *ir.Builder, x *ir.Value) *ir.Value {
			return ops.Range(b, x, ops.Full(b, ir.F64, 5), ops.Full(b, ir.F64, 1))
		}, "range"},
		{func(b *ir.Builder, x *ir.Value) *ir.Value {
			return b.Op1("tile_grad", ir.A("shape", []int{1}), ops.Reshape(b, x, 1))
		}, "tile_grad"},
	} {
		b := ir.NewBuilder(ir.NewProgram())
		x := ops.Data(b, "x", ir.F64)
		loss := ops.ReduceSum(b, c.build(b, x), nil, false)
		_, err := autodiff.Backward(b, loss, []*ir.Value{x})
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("gradient through %s: %v, want an error naming it", c.want, err)
		}
	}
	for _, n := range []string{"shape", "size", "constant_of_shape"} {
		if d, ok := ops.Lookup(n); !ok || !d.NoGrad || d.Grad != nil {
			t.Errorf("%s: want NoGrad", n)
		}
	}
	for _, n := range []string{"reshape_dyn", "squeeze_dyn", "unsqueeze_dyn", "expand_dyn", "range", "slice_dyn",
		"slice_dyn_grad", "split_dyn", "tile", "tile_grad", "reduce_sum_dyn", "reduce_mean_dyn", "reduce_max_dyn", "reduce_min_dyn"} {
		if d, ok := ops.Lookup(n); !ok || d.Grad == nil || d.NoGrad {
			t.Errorf("%s: want a Grad rule", n)
		}
	}
}

// TestDynMemory runs every op of the family many times, on good operands
// and on operands it must refuse, and under every allocation limit up to
// what it needs: allocated bytes return to where they were each time.
func TestDynMemory(t *testing.T) {
	shpDebug(t)
	r := rand.New(rand.NewPCG(13, 13))
	x := randTensor(t, host, r, tensor.F32, 3, 1, 5)
	v := func(vals ...int64) *tensor.Tensor { return dynVec(t, tensor.I64, vals...) }
	s := func(dt tensor.DType, val float64) *tensor.Tensor {
		y, err := tensor.Scalar(host, dt, val)
		if err != nil {
			t.Fatal(err)
		}
		return y
	}
	in := func(ts ...*tensor.Tensor) []*tensor.Tensor { return ts }
	cases := []struct {
		name  string
		attrs ir.Attrs
		in    []*tensor.Tensor
		fails bool // a run-time error
		views bool // the result shares x's storage: never out of memory
		big   bool // the results hold more than 128 bytes
	}{
		{"shape", nil, in(x), false, false, false},
		{"size", nil, in(x), false, false, false},
		{"reshape_dyn", nil, in(x, v(5, -1)), false, true, false},
		{"reshape_dyn", nil, in(x, v(4, -1)), true, true, false},
		{"squeeze_dyn", nil, in(x, v(1)), false, true, false},
		{"squeeze_dyn", nil, in(x, v(0)), true, true, false},
		{"unsqueeze_dyn", nil, in(x, v(0, -1)), false, true, false},
		{"expand_dyn", nil, in(x, v(2, 3, 4, 5)), false, false, true},
		{"expand_dyn", nil, in(x, v(2, 3, 4, 4)), true, false, false},
		{"constant_of_shape", ir.A("value", 2, "dtype", ir.F64), in(v(3, 7)), false, false, true},
		{"constant_of_shape", ir.A("value", 2, "dtype", ir.F64), in(v(3, -7)), true, false, false},
		{"range", nil, in(s(tensor.F32, 0), s(tensor.F32, 50), s(tensor.F32, 0.5)), false, false, true},
		{"range", nil, in(s(tensor.I64, 0), s(tensor.I64, 50), s(tensor.I64, 0)), true, false, false},
		{"slice_dyn", nil, in(x, v(0, 4), v(2, 0), v(0, -1), v(1, -1)), false, false, false},
		{"slice_dyn", nil, in(x, v(0), v(2), v(0), v(0)), true, false, false},
		{"slice_dyn_grad", ir.A("shape", []int{3, 1, 7}), in(x, v(1), v(-1), v(2)), false, false, true},
		{"slice_dyn_grad", ir.A("shape", []int{3, 1, 7}), in(x, v(1), v(-2), v(2)), true, false, false},
		{"split_dyn", ir.A("axis", 2), in(x, v(1, 2, 2)), false, false, false},
		{"split_dyn", ir.A("axis", 2), in(x, v(1, 2, 3)), true, false, false},
		{"tile", nil, in(x, v(2, 3, 1)), false, false, true},
		{"tile", nil, in(x, v(2, -3, 1)), true, false, false},
		{"tile_grad", ir.A("shape", []int{3, 1, 1}), in(x), false, false, false},
		{"tile_grad", ir.A("shape", []int{3, 1, 2}), in(x), true, false, false},
		{"reduce_sum_dyn", nil, in(x, v(0, 2)), false, false, false},
		{"reduce_mean_dyn", ir.A("keepdim", true), in(x, v(-1)), false, false, false},
		{"reduce_max_dyn", nil, in(x, v(1, 1)), true, false, false},
		{"reduce_min_dyn", ir.A("noop_with_empty_axes", true), in(x, v()), false, true, false},
	}
	a := memory.New(memory.Options{})
	for _, c := range cases {
		for range 50 {
			outs, err := runOp(t, a, c.name, c.attrs, c.in...)
			if (err != nil) != c.fails {
				t.Fatalf("%s %s: error %v, want one: %v", c.name, c.attrs, err, c.fails)
			}
			release(outs...)
			wantAllocated(t, a, 0)
		}
		if c.fails {
			continue
		}
		// A view never fails; a result over 128 bytes fails under the
		// limit of 64.
		n := shpOOMSweep(t, c.name, c.attrs, c.in...)
		if c.views && n != 0 || c.big && n == 0 {
			t.Errorf("%s %s failed under %d limits", c.name, c.attrs, n)
		}
	}
	for _, c := range cases {
		for _, y := range c.in {
			if y != x {
				y.Release()
			}
		}
	}
	x.Release()
}
