package ops_test

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/gopir/gopir/internal/fdcheck"

	"github.com/gopir/gopir/autodiff"
	"github.com/gopir/gopir/exec"
	"github.com/gopir/gopir/ir"
	"github.com/gopir/gopir/memory"
	"github.com/gopir/gopir/ops"
	"github.com/gopir/gopir/tensor"
)

// Gradient tests of the elementwise, comparison, cast and reduction ops.
// Static shapes go through checkOpGrad; dynamic shapes, casts and helper
// ops through ewgCheckModel, a finite-difference check of a whole
// program.

// ewgIn describes one input of a table case: its shape and the range of
// its values; away keeps |x| ≥ away (non-differentiable points).
type ewgIn struct {
	shape  []int
	lo, hi float64
	away   float64
}

func ewgU(shape ...int) ewgIn { return ewgIn{shape: shape, lo: -1, hi: 1} }

func ewgR(lo, hi float64, shape ...int) ewgIn { return ewgIn{shape: shape, lo: lo, hi: hi} }

// ewgAway is uniform in ±[0.1, 1).
func ewgAway(shape ...int) ewgIn { return ewgIn{shape: shape, lo: -1, hi: 1, away: 0.1} }

func (in ewgIn) make(t testing.TB, r *rand.Rand) *tensor.Tensor {
	x := f64Rand(t, r, in.lo, in.hi, in.shape...)
	if in.away > 0 {
		for i, v := range x.F64() {
			if math.Abs(v) < in.away {
				x.F64()[i] = math.Copysign(in.away+math.Abs(v), v)
			}
		}
	}
	return x
}

type ewgCase struct {
	name  string
	attrs ir.Attrs
	in    []ewgIn
	tol   float64
}

func (tc ewgCase) String() string {
	var s []string
	for _, in := range tc.in {
		s = append(s, fmt.Sprint(in.shape))
	}
	return fmt.Sprintf("%s%v%s", tc.name, tc.attrs, strings.Join(s, ""))
}

func ewgRunTable(t *testing.T, cases []ewgCase) {
	r := rand.New(rand.NewPCG(3, 4))
	for _, tc := range cases {
		t.Run(tc.String(), func(t *testing.T) {
			var in []*tensor.Tensor
			for _, spec := range tc.in {
				x := spec.make(t, r)
				defer x.Release()
				in = append(in, x)
			}
			tol := tc.tol
			if tol == 0 {
				tol = 1e-5
			}
			checkOpGradTol(t, tol, tc.name, tc.attrs, in...)
		})
	}
}

// ewgPairs are broadcasting shape pairs for binary ops.
var ewgPairs = [][2][]int{
	{{3, 4}, {3, 4}},
	{{2, 1, 3}, {4, 3}},
	{{}, {3, 4}},
	{{3, 4}, {}},
	{{1, 4}, {3, 1}},
	{{4}, {2, 3, 4}},
}

func TestEwGradBinary(t *testing.T) {
	var cases []ewgCase
	for _, p := range ewgPairs {
		a, b := p[0], p[1]
		cases = append(cases,
			ewgCase{name: "add", in: []ewgIn{ewgU(a...), ewgU(b...)}},
			ewgCase{name: "subtract", in: []ewgIn{ewgU(a...), ewgU(b...)}},
			ewgCase{name: "multiply", in: []ewgIn{ewgU(a...), ewgU(b...)}},
			ewgCase{name: "divide", in: []ewgIn{ewgU(a...), ewgR(0.5, 2, b...)}},
			ewgCase{name: "divide", in: []ewgIn{ewgU(a...), ewgR(-2, -0.5, b...)}},
			ewgCase{name: "maximum", in: []ewgIn{ewgU(a...), ewgU(b...)}},
			ewgCase{name: "minimum", in: []ewgIn{ewgU(a...), ewgU(b...)}},
			ewgCase{name: "pow", in: []ewgIn{ewgR(0.3, 2, a...), ewgR(-1.5, 2.5, b...)}},
		)
	}
	cases = append(cases,
		ewgCase{name: "scale", attrs: ir.A("scale", 2.5, "bias", -1.0), in: []ewgIn{ewgU(3, 4)}},
		ewgCase{name: "scale", attrs: ir.A("scale", 1.0, "bias", 3.0), in: []ewgIn{ewgU(5)}},
		ewgCase{name: "scale", attrs: ir.A("bias", 3.0), in: []ewgIn{ewgU()}},
		ewgCase{name: "scale", attrs: ir.A("scale", -0.5), in: []ewgIn{ewgU(2, 3)}},
	)
	ewgRunTable(t, cases)
}

func TestEwGradUnary(t *testing.T) {
	shapes := [][]int{{5, 3}, {}, {2, 3, 4}}
	var cases []ewgCase
	for _, s := range shapes {
		cases = append(cases,
			ewgCase{name: "relu", in: []ewgIn{ewgAway(s...)}},
			ewgCase{name: "sigmoid", in: []ewgIn{ewgR(-4, 4, s...)}},
			ewgCase{name: "tanh", in: []ewgIn{ewgR(-2, 2, s...)}},
			ewgCase{name: "exp", in: []ewgIn{ewgR(-2, 2, s...)}},
			ewgCase{name: "log", in: []ewgIn{ewgR(0.2, 3, s...)}},
			ewgCase{name: "sqrt", in: []ewgIn{ewgR(0.2, 3, s...)}},
			ewgCase{name: "rsqrt", in: []ewgIn{ewgR(0.2, 3, s...)}},
			ewgCase{name: "abs", in: []ewgIn{ewgAway(s...)}},
			ewgCase{name: "neg", in: []ewgIn{ewgU(s...)}},
			ewgCase{name: "square", in: []ewgIn{ewgR(-2, 2, s...)}},
			ewgCase{name: "gelu", in: []ewgIn{ewgR(-4, 4, s...)}},
			ewgCase{name: "gelu", attrs: ir.A("approximate", false), in: []ewgIn{ewgR(-4, 4, s...)}},
			ewgCase{name: "gelu", attrs: ir.A("approximate", true), in: []ewgIn{ewgR(-4, 4, s...)}},
			ewgCase{name: "silu", in: []ewgIn{ewgR(-5, 5, s...)}},
			ewgCase{name: "softplus", in: []ewgIn{ewgR(-5, 5, s...)}},
			ewgCase{name: "clip", attrs: ir.A("min", -0.5, "max", 0.4), in: []ewgIn{ewgU(s...)}},
			ewgCase{name: "clip", attrs: ir.A("min", math.Inf(-1), "max", 0.2), in: []ewgIn{ewgU(s...)}},
			ewgCase{name: "clip", attrs: ir.A("min", -0.3, "max", math.Inf(1)), in: []ewgIn{ewgU(s...)}},
			ewgCase{name: "clip", attrs: ir.A("min", math.Inf(-1), "max", math.Inf(1)), in: []ewgIn{ewgU(s...)}},
			ewgCase{name: "assign", in: []ewgIn{ewgU(s...)}},
		)
	}
	// Large arguments: the tails of the smooth activations.
	cases = append(cases,
		ewgCase{name: "gelu", in: []ewgIn{ewgR(-12, 12, 20)}},
		ewgCase{name: "gelu", attrs: ir.A("approximate", true), in: []ewgIn{ewgR(-12, 12, 20)}},
		ewgCase{name: "silu", in: []ewgIn{ewgR(-30, 30, 20)}},
		ewgCase{name: "softplus", in: []ewgIn{ewgR(-30, 30, 20)}},
		ewgCase{name: "sigmoid", in: []ewgIn{ewgR(-30, 30, 20)}},
	)
	ewgRunTable(t, cases)
}

func TestEwGradWhere(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	for _, s := range [][3][]int{
		{{3, 4}, {3, 4}, {3, 4}},
		{{3, 4}, {4}, {3, 1}},
		{{2, 1, 3}, {}, {4, 3}},
		{{}, {2, 3}, {3}},
		{{4, 1}, {1, 5}, {}},
	} {
		t.Run(fmt.Sprint(s), func(t *testing.T) {
			cond := ewgBools(t, r, s[0]...)
			defer cond.Release()
			x, y := f64Rand(t, r, -1, 1, s[1]...), f64Rand(t, r, -1, 1, s[2]...)
			defer x.Release()
			defer y.Release()
			checkOpGrad(t, "where", nil, cond, x, y)
		})
	}
}

func ewgBools(t testing.TB, r *rand.Rand, shape ...int) *tensor.Tensor {
	t.Helper()
	n := 1
	for _, d := range shape {
		n *= d
	}
	data := make([]bool, n)
	for i := range data {
		data[i] = r.IntN(2) == 1
	}
	c, err := tensor.FromBool(host, data, shape...)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// ewgAxes are (shape, axes) pairs for the reductions; nil axes mean all.
var ewgAxes = []struct {
	shape []int
	axes  []int
}{
	{[]int{3, 4, 2}, []int{1}},
	{[]int{3, 4, 2}, []int{0, 2}},
	{[]int{3, 4, 2}, []int{-1}},
	{[]int{3, 4, 2}, []int{2, 0, 1}},
	{[]int{3, 4, 2}, nil},
	{[]int{5}, []int{0}},
	{[]int{2, 1, 3}, []int{1}}, // only size-1 dims reduced
	{[]int{}, nil},
}

func TestRedGrad(t *testing.T) {
	var cases []ewgCase
	for _, a := range ewgAxes {
		for _, keep := range []bool{false, true} {
			attrs := ir.A("keepdim", keep)
			if a.axes != nil {
				attrs = ir.A("keepdim", keep, "axes", a.axes)
			}
			for _, name := range []string{"reduce_sum", "reduce_mean", "reduce_max", "reduce_min"} {
				cases = append(cases, ewgCase{name: name, attrs: attrs, in: []ewgIn{ewgU(a.shape...)}})
			}
		}
	}
	ewgRunTable(t, cases)
}

// ewgModel builds a forward program on b and returns its scalar loss and
// the feeds ("data" ops) to differentiate with respect to.
type ewgModel func(b *ir.Builder) (loss *ir.Value, wrt []*ir.Value)

// ewgCheckModel differentiates the model's loss with autodiff, runs it on
// the executor with the leak check and compares every gradient element
// with central differences of the forward program. It returns the
// program with the backward, for inspection.
func ewgCheckModel(t *testing.T, tol float64, m ewgModel, feeds map[string]*tensor.Tensor) *ir.Program {
	t.Helper()
	build := func(withGrad bool) (*ir.Program, []string) {
		b := ir.NewBuilder(ir.NewProgram())
		loss, wrt := m(b)
		ops.Fetch(b, "loss", loss)
		var names []string
		for _, w := range wrt {
			n, err := w.Def().Attrs.Str("name")
			if err != nil {
				t.Fatal(err)
			}
			names = append(names, n)
		}
		if withGrad {
			grads, err := autodiff.Backward(b, loss, wrt)
			if err != nil {
				t.Fatal(err)
			}
			for i, g := range grads {
				ops.Fetch(b, names[i]+"@GRAD", g)
			}
		}
		p, err := b.Finish()
		if err != nil {
			t.Fatalf("%v\n%s", err, b.Program())
		}
		return p, names
	}
	gp, names := build(true)
	fp, _ := build(false)
	a := memory.New(memory.Options{})
	gx, err := exec.Compile(gp, exec.Options{Alloc: a, CheckLeaks: true})
	if err != nil {
		t.Fatalf("%v\n%s", err, gp)
	}
	fx, err := exec.Compile(fp, exec.Options{})
	if err != nil {
		t.Fatal(err)
	}
	lossAt := func() float64 {
		res, err := fx.Run(context.Background(), feeds)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Release()
		l := res["loss"]
		if l.DType() == tensor.F32 {
			return float64(l.F32()[0])
		}
		return l.F64()[0]
	}
	res, err := gx.Run(context.Background(), feeds)
	if err != nil {
		t.Fatalf("%v\n%s", err, gp)
	}
	defer func() {
		res.Release()
		if got := a.Stats().Allocated.Current; got != 0 {
			t.Errorf("%d bytes allocated after the run", got)
		}
	}()
	for _, n := range names {
		g, x := res[n+"@GRAD"], feeds[n].F64()
		if !slices.Equal(g.Shape(), feeds[n].Shape()) {
			t.Fatalf("gradient of %s has shape %v, want %v", n, g.Shape(), feeds[n].Shape())
		}
		fdcheck.Check(t, n, x, g.F64(), lossAt, tol)
	}
	return gp
}

// ewgRunGrads runs the model's gradients with the leak check and returns
// their values, in the order of wrt.
func ewgRunGrads(t *testing.T, m ewgModel, feeds map[string]*tensor.Tensor) [][]float64 {
	t.Helper()
	b := ir.NewBuilder(ir.NewProgram())
	loss, wrt := m(b)
	grads, err := autodiff.Backward(b, loss, wrt)
	if err != nil {
		t.Fatal(err)
	}
	for i, g := range grads {
		ops.Fetch(b, fmt.Sprintf("g%d", i), g)
	}
	p, err := b.Finish()
	if err != nil {
		t.Fatalf("%v\n%s", err, b.Program())
	}
	a := memory.New(memory.Options{})
	x, err := exec.Compile(p, exec.Options{Alloc: a, CheckLeaks: true})
	if err != nil {
		t.Fatal(err)
	}
	res, err := x.Run(context.Background(), feeds)
	if err != nil {
		t.Fatalf("%v\n%s", err, p)
	}
	defer res.Release()
	out := make([][]float64, len(grads))
	for i := range out {
		out[i] = ewVals(res[fmt.Sprintf("g%d", i)])
	}
	return out
}

// ewgOpModel is op name on feeds x0.. whose dims listed in dyn[i] are
// dynamic, with loss Σ result·w; w is fed as "w".
func ewgOpModel(name string, attrs ir.Attrs, in []*tensor.Tensor, dyn [][]int) ewgModel {
	return func(b *ir.Builder) (*ir.Value, []*ir.Value) {
		var vals, wrt []*ir.Value
		for i, x := range in {
			dims := slices.Clone(x.Shape())
			if i < len(dyn) {
				for _, d := range dyn[i] {
					dims[d] = ir.Dynamic
				}
			}
			v := ops.Data(b, fmt.Sprintf("x%d", i), ir.DType(x.DType()), dims...)
			vals = append(vals, v)
			if x.DType() == tensor.F64 {
				wrt = append(wrt, v)
			}
		}
		y := b.Op1(name, attrs, vals...)
		wdims := make([]int, y.Type().Rank())
		for i := range wdims {
			wdims[i] = ir.Dynamic
		}
		w := ops.Data(b, "w", ir.F64, wdims...)
		return ops.ReduceSum(b, ops.Multiply(b, y, w), nil, false), wrt
	}
}

// ewgFeeds names the inputs x0.. and adds random weights w shaped like
// the op's result; release them with ewgRelease.
func ewgFeeds(t *testing.T, r *rand.Rand, name string, attrs ir.Attrs, in ...*tensor.Tensor) map[string]*tensor.Tensor {
	t.Helper()
	outs := mustRun(t, host, name, attrs, in...)
	defer release(outs...)
	feeds := map[string]*tensor.Tensor{"w": f64Rand(t, r, -1, 1, outs[0].Shape()...)}
	for i, x := range in {
		feeds[fmt.Sprintf("x%d", i)] = x
	}
	return feeds
}

// TestRedGradDynamic differentiates reductions with dynamic dims: a
// dynamic reduced dim goes through reduce_grad, a dynamic kept dim still
// through expand.
func TestRedGradDynamic(t *testing.T) {
	r := rand.New(rand.NewPCG(8, 9))
	cases := []struct {
		shape []int
		axes  []int
		dyn   []int
		helps bool // whether reduce_grad is expected
	}{
		{[]int{3, 4, 2}, []int{1}, []int{1}, true},
		{[]int{3, 4, 2}, []int{1}, []int{0, 2}, false},
		{[]int{3, 4, 2}, []int{0, 2}, []int{0, 1, 2}, true},
		{[]int{3, 4, 2}, nil, []int{2}, true},
		{[]int{2, 1, 3}, []int{1}, []int{0, 2}, false},
		{[]int{4, 5}, []int{-1}, []int{0, 1}, true},
	}
	for _, tc := range cases {
		for _, keep := range []bool{false, true} {
			for _, name := range []string{"reduce_sum", "reduce_mean", "reduce_max", "reduce_min"} {
				attrs := ir.A("keepdim", keep)
				if tc.axes != nil {
					attrs = ir.A("keepdim", keep, "axes", tc.axes)
				}
				t.Run(fmt.Sprintf("%s%v%v?%v", name, attrs, tc.shape, tc.dyn), func(t *testing.T) {
					x := f64Rand(t, r, -1, 1, tc.shape...)
					defer x.Release()
					feeds := ewgFeeds(t, r, name, attrs, x)
					defer feeds["w"].Release()
					p := ewgCheckModel(t, 1e-5, ewgOpModel(name, attrs, []*tensor.Tensor{x}, [][]int{tc.dyn}), feeds)
					if name == "reduce_sum" || name == "reduce_mean" {
						// The loss's own sum may use reduce_grad too: look
						// only at those that read x's shape.
						got := false
						for _, op := range p.Body().Ops() {
							if op.Name() == "reduce_grad" && op.Operand(1) == p.Body().Ops()[0].Result(0) {
								got = true
							}
						}
						if got != tc.helps {
							t.Errorf("backward uses reduce_grad: %v, want %v\n%s", got, tc.helps, p)
						}
					}
				})
			}
		}
	}
}

// TestEwGradDynamic differentiates broadcasting ops whose operands have
// dynamic dims, so that their gradients are reduced at run time.
func TestEwGradDynamic(t *testing.T) {
	r := rand.New(rand.NewPCG(10, 11))
	cases := []struct {
		name  string
		attrs ir.Attrs
		in    []ewgIn
		dyn   [][]int
	}{
		{"add", nil, []ewgIn{ewgU(2, 1, 3), ewgU(4, 3)}, [][]int{{0, 1, 2}, {0, 1}}},
		{"subtract", nil, []ewgIn{ewgU(3, 4), ewgU()}, [][]int{{0}, nil}},
		{"multiply", nil, []ewgIn{ewgU(1, 4), ewgU(3, 1)}, [][]int{{0, 1}, {0, 1}}},
		{"divide", nil, []ewgIn{ewgU(2, 1, 3), ewgR(0.5, 2, 4, 3)}, [][]int{{1}, {0}}},
		{"maximum", nil, []ewgIn{ewgU(), ewgU(3, 4)}, [][]int{nil, {0, 1}}},
		{"minimum", nil, []ewgIn{ewgU(4), ewgU(2, 3, 4)}, [][]int{{0}, {0, 1, 2}}},
		{"pow", nil, []ewgIn{ewgR(0.3, 2, 3, 4), ewgR(-1, 2, 4)}, [][]int{{0, 1}, {0}}},
		{"sigmoid", nil, []ewgIn{ewgU(3, 4)}, [][]int{{0, 1}}},
		{"gelu", nil, []ewgIn{ewgR(-3, 3, 3, 4)}, [][]int{{0}}},
		{"silu", nil, []ewgIn{ewgR(-3, 3, 3, 4)}, [][]int{{1}}},
		{"clip", ir.A("min", -0.5, "max", 0.5), []ewgIn{ewgU(3, 4)}, [][]int{{0, 1}}},
	}
	for _, tc := range cases {
		t.Run(fmt.Sprintf("%s%v", tc.name, tc.dyn), func(t *testing.T) {
			var in []*tensor.Tensor
			for _, spec := range tc.in {
				x := spec.make(t, r)
				defer x.Release()
				in = append(in, x)
			}
			feeds := ewgFeeds(t, r, tc.name, tc.attrs, in...)
			defer feeds["w"].Release()
			ewgCheckModel(t, 1e-5, ewgOpModel(tc.name, tc.attrs, in, tc.dyn), feeds)
		})
	}
	// where, with a condition that broadcasts.
	t.Run("where", func(t *testing.T) {
		cond := ewgBools(t, r, 2, 1, 3)
		defer cond.Release()
		x, y := f64Rand(t, r, -1, 1, 4, 3), f64Rand(t, r, -1, 1, 3)
		defer x.Release()
		defer y.Release()
		in := []*tensor.Tensor{cond, x, y}
		feeds := ewgFeeds(t, r, "where", nil, in...)
		defer feeds["w"].Release()
		ewgCheckModel(t, 1e-5, ewgOpModel("where", nil, in, [][]int{{0, 2}, {0}, {0}}), feeds)
	})
}

// TestRedGradSumExpand checks that the gradient of a reduction with a
// static operand is an expand of dy, with no zeros tensor and no add.
func TestRedGradSumExpand(t *testing.T) {
	for _, name := range []string{"reduce_sum", "reduce_mean"} {
		b := ir.NewBuilder(ir.NewProgram())
		x := ops.Data(b, "x", ir.F32, 8, 16, 4)
		loss := ops.ReduceSum(b, b.Op1(name, ir.A("axes", []int{1}, "keepdim", false), x), nil, false)
		fwd := len(b.Program().Body().Ops())
		if _, err := autodiff.Backward(b, loss, []*ir.Value{x}); err != nil {
			t.Fatal(err)
		}
		var bwd []string
		for _, op := range b.Program().Body().Ops()[fwd:] {
			bwd = append(bwd, op.Name())
		}
		for _, bad := range []string{"add", "reduce_grad"} {
			if slices.Contains(bwd, bad) {
				t.Errorf("%s: backward %v uses %s", name, bwd, bad)
			}
		}
		if !slices.Contains(bwd, "expand") {
			t.Errorf("%s: backward %v has no expand", name, bwd)
		}
		// The only full-size buffer is the expand's: "full" ops may only
		// make scalars (the loss seed), never x's shape.
		for _, op := range b.Program().Body().Ops()[fwd:] {
			if strings.HasPrefix(op.Name(), "full") && op.Result(0).Type().NumElements() > 1 {
				t.Errorf("%s: backward makes %s with %q", name, op.Result(0).Type(), op.Name())
			}
		}
	}
}

// ewgGradsOf runs the gradient of Σ op(in) with respect to the float
// inputs and returns the gradients' values.
func ewgGradsOf(t *testing.T, name string, attrs ir.Attrs, in ...*tensor.Tensor) [][]float64 {
	t.Helper()
	feeds := map[string]*tensor.Tensor{}
	for i, x := range in {
		feeds[fmt.Sprintf("x%d", i)] = x
	}
	return ewgRunGrads(t, func(b *ir.Builder) (*ir.Value, []*ir.Value) {
		var vals, wrt []*ir.Value
		for i, x := range in {
			v := ops.Data(b, fmt.Sprintf("x%d", i), ir.DType(x.DType()), x.Shape()...)
			vals = append(vals, v)
			if x.DType() == tensor.F64 || x.DType() == tensor.F32 {
				wrt = append(wrt, v)
			}
		}
		return ops.ReduceSum(b, b.Op1(name, attrs, vals...), nil, false), wrt
	}, feeds)
}

func ewgF64(t testing.TB, data []float64, shape ...int) *tensor.Tensor {
	t.Helper()
	x, err := tensor.FromF64(host, data, shape...)
	if err != nil {
		t.Fatal(err)
	}
	return x
}

// ewgSame compares gradients exactly, NaN matching NaN.
func ewgSame(t *testing.T, what string, got, want []float64) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %v, want %v", what, got, want)
	}
	for i := range got {
		if got[i] != want[i] && !(math.IsNaN(got[i]) && math.IsNaN(want[i])) {
			t.Errorf("%s: %v, want %v", what, got, want)
			return
		}
	}
}

// TestEwGradEdges checks the conventions at non-differentiable points:
// ties, zeros, clip boundaries and pow's edge cases.
func TestEwGradEdges(t *testing.T) {
	nan := math.NaN()
	x := ewgF64(t, []float64{1, 2, 3, nan}, 4)
	y := ewgF64(t, []float64{1, 5, 0, 1}, 4)
	defer x.Release()
	defer y.Release()
	g := ewgGradsOf(t, "maximum", nil, x, y)
	ewgSame(t, "maximum dx", g[0], []float64{0.5, 0, 1, 1})
	ewgSame(t, "maximum dy", g[1], []float64{0.5, 1, 0, 1})
	g = ewgGradsOf(t, "minimum", nil, x, y)
	ewgSame(t, "minimum dx", g[0], []float64{0.5, 1, 0, 1})
	ewgSame(t, "minimum dy", g[1], []float64{0.5, 0, 1, 1})

	// Broadcast ties: a scalar against a row sums its shares.
	s := ewgF64(t, []float64{2}, 1)
	row := ewgF64(t, []float64{2, 1, 2, 3}, 4)
	defer s.Release()
	defer row.Release()
	g = ewgGradsOf(t, "maximum", nil, s, row)
	ewgSame(t, "maximum scalar dx", g[0], []float64{0.5 + 1 + 0.5})
	ewgSame(t, "maximum scalar dy", g[1], []float64{0.5, 0, 0.5, 1})

	a := ewgF64(t, []float64{-2, 0, 3, -0.0}, 4)
	defer a.Release()
	ewgSame(t, "abs", ewgGradsOf(t, "abs", nil, a)[0], []float64{-1, 0, 1, 0})

	c := ewgF64(t, []float64{-1, -0.5, 0, 0.5, 1, nan}, 6)
	defer c.Release()
	ewgSame(t, "clip", ewgGradsOf(t, "clip", ir.A("min", -0.5, "max", 0.5), c)[0], []float64{0, 1, 1, 1, 0, 0})
	ewgSame(t, "clip (-inf, 0.5]", ewgGradsOf(t, "clip", ir.A("min", math.Inf(-1), "max", 0.5), c)[0], []float64{1, 1, 1, 1, 0, 0})
	ewgSame(t, "clip [-0.5, inf)", ewgGradsOf(t, "clip", ir.A("min", -0.5, "max", math.Inf(1)), c)[0], []float64{0, 1, 1, 1, 1, 0})

	// pow: x=0,y=2 → dx 0, dy 0 (masked); x=0,y=0 → dx 0 (masked), dy 0;
	// x=0,y=0.5 → dx +Inf, dy 0; x=-2,y=3 → dx 12, dy NaN (log of a
	// negative number); x=2,y=3 → the smooth case.
	px := ewgF64(t, []float64{0, 0, 0, -2, 2}, 5)
	py := ewgF64(t, []float64{2, 0, 0.5, 3, 3}, 5)
	defer px.Release()
	defer py.Release()
	g = ewgGradsOf(t, "pow", nil, px, py)
	ewgSame(t, "pow dx", g[0], []float64{0, 0, math.Inf(1), 12, 12})
	ewgSame(t, "pow dy", g[1], []float64{0, 0, 0, nan, 8 * math.Log(2)})

	// reduce_max / reduce_min share ties equally.
	m := ewgF64(t, []float64{1, 3, 3, 2, 2, 2, 5, -1, 0}, 3, 3)
	defer m.Release()
	ewgSame(t, "reduce_max rows", ewgGradsOf(t, "reduce_max", ir.A("axes", []int{1}), m)[0],
		[]float64{0, 0.5, 0.5, 1.0 / 3, 1.0 / 3, 1.0 / 3, 1, 0, 0})
	ewgSame(t, "reduce_min rows keepdim", ewgGradsOf(t, "reduce_min", ir.A("axes", []int{1}, "keepdim", true), m)[0],
		[]float64{1, 0, 0, 1.0 / 3, 1.0 / 3, 1.0 / 3, 0, 1, 0})
	ewgSame(t, "reduce_max all", ewgGradsOf(t, "reduce_max", nil, m)[0],
		[]float64{0, 0, 0, 0, 0, 0, 1, 0, 0})
	ewgSame(t, "reduce_min cols", ewgGradsOf(t, "reduce_min", ir.A("axes", []int{0}), m)[0],
		[]float64{1, 0, 0, 0, 0, 0, 0, 1, 1})
}

// TestEwGradCast checks casts: between floats the gradient is cast back;
// through an integer or i1 none flows.
func TestEwGradCast(t *testing.T) {
	r := rand.New(rand.NewPCG(12, 13))
	x := f64Rand(t, r, -3, 3, 3, 4)
	w := f64Rand(t, r, -1, 1, 3, 4)
	defer x.Release()
	defer w.Release()
	feeds := map[string]*tensor.Tensor{"x": x, "w": w}
	// f64 → f32 → f64 with a product in f32 in between: the gradient, cast
	// back to f64, is 2·x·w² (and 2·w·x²) to f32's precision. (Finite
	// differences would drown in f32 rounding.)
	g := ewgRunGrads(t, func(b *ir.Builder) (*ir.Value, []*ir.Value) {
		xv := ops.Data(b, "x", ir.F64, 3, 4)
		wv := ops.Data(b, "w", ir.F64, 3, 4)
		h := ops.Multiply(b, ops.Cast(b, xv, ir.F32), ops.Cast(b, wv, ir.F32))
		return ops.ReduceSum(b, ops.Cast(b, ops.Square(b, h), ir.F64), nil, false), []*ir.Value{xv, wv}
	}, feeds)
	for i, xi := range x.F64() {
		wi := w.F64()[i]
		if want := 2 * xi * wi * wi; math.Abs(g[0][i]-want) > 1e-5*(1+math.Abs(want)) {
			t.Errorf("d/dx[%d] through f32 = %g, want %g", i, g[0][i], want)
		}
		if want := 2 * wi * xi * xi; math.Abs(g[1][i]-want) > 1e-5*(1+math.Abs(want)) {
			t.Errorf("d/dw[%d] through f32 = %g, want %g", i, g[1][i], want)
		}
	}
	// A same-dtype cast is the identity.
	ewgCheckModel(t, 1e-6, func(b *ir.Builder) (*ir.Value, []*ir.Value) {
		xv := ops.Data(b, "x", ir.F64, -1, 4)
		wv := ops.Data(b, "w", ir.F64, 3, 4)
		return ops.ReduceSum(b, ops.Multiply(b, ops.Cast(b, xv, ir.F64), wv), nil, false), []*ir.Value{xv}
	}, feeds)
	// Through i64 and i1 nothing flows: x's gradient is w·1 from the
	// direct term only.
	for _, dt := range []ir.DType{ir.I64, ir.I32, ir.I1} {
		g := ewgRunGrads(t, func(b *ir.Builder) (*ir.Value, []*ir.Value) {
			xv := ops.Data(b, "x", ir.F64, 3, 4)
			wv := ops.Data(b, "w", ir.F64, 3, 4)
			through := ops.Cast(b, ops.Cast(b, xv, dt), ir.F64)
			return ops.ReduceSum(b, ops.Multiply(b, ops.Add(b, xv, through), wv), nil, false), []*ir.Value{xv}
		}, feeds)
		ewgSame(t, "cast through "+dt.String(), g[0], w.F64())
	}
	// The rule itself returns nil for a float → int cast.
	d, _ := ops.Lookup("cast")
	b := ir.NewBuilder(ir.NewProgram())
	xv := ops.Data(b, "x", ir.F64, 3)
	op := ops.Cast(b, xv, ir.I64).Def()
	dy := ops.Data(b, "dy", ir.I64, 3)
	dx, err := d.Grad(ops.NewGradContext(b, op, []*ir.Value{dy}, []bool{true}, func(v *ir.Value) *ir.Value { return v }))
	if err != nil || len(dx) != 1 || dx[0] != nil {
		t.Errorf("gradient of a cast to i64: %v, %v; want [nil]", dx, err)
	}
}

// TestEwGradHelperOps checks gelu_grad and silu_grad: their f32 kernels
// against f64, their gradient in dy, and the error for the second
// derivative in x.
func TestEwGradHelperOps(t *testing.T) {
	r := rand.New(rand.NewPCG(14, 15))
	x := f64Rand(t, r, -6, 6, 5, 7)
	dy := f64Rand(t, r, -1, 1, 5, 7)
	w := f64Rand(t, r, -1, 1, 5, 7)
	defer x.Release()
	defer dy.Release()
	defer w.Release()
	x32, dy32 := ewgToF32(t, x), ewgToF32(t, dy)
	defer x32.Release()
	defer dy32.Release()
	for _, tc := range []struct {
		name  string
		attrs ir.Attrs
	}{
		{"gelu_grad", nil},
		{"gelu_grad", ir.A("approximate", true)},
		{"silu_grad", nil},
	} {
		t.Run(fmt.Sprint(tc.name, tc.attrs), func(t *testing.T) {
			o64 := mustRun(t, host, tc.name, tc.attrs, x, dy)
			o32 := mustRun(t, host, tc.name, tc.attrs, x32, dy32)
			defer release(o64...)
			defer release(o32...)
			for i, v := range o64[0].F64() {
				if got := float64(o32[0].F32()[i]); math.Abs(got-v) > 1e-5*(1+math.Abs(v)) {
					t.Errorf("f32 [%d] = %g, f64 %g", i, got, v)
				}
			}
			// The gradient in dy, x held fixed.
			feeds := map[string]*tensor.Tensor{"x": x, "dy": dy, "w": w}
			ewgCheckModel(t, 1e-6, func(b *ir.Builder) (*ir.Value, []*ir.Value) {
				xv := ops.Data(b, "x", ir.F64, -1, 7)
				dv := ops.Data(b, "dy", ir.F64, 5, -1)
				wv := ops.Data(b, "w", ir.F64, 5, 7)
				y := b.Op1(tc.name, tc.attrs, xv, dv)
				return ops.ReduceSum(b, ops.Multiply(b, y, wv), nil, false), []*ir.Value{dv}
			}, feeds)
			// The second derivative in x is refused with a clear error.
			b := ir.NewBuilder(ir.NewProgram())
			xv := ops.Data(b, "x", ir.F64, 5, 7)
			dv := ops.Data(b, "dy", ir.F64, 5, 7)
			loss := ops.ReduceSum(b, b.Op1(tc.name, tc.attrs, xv, dv), nil, false)
			if _, err := autodiff.Backward(b, loss, []*ir.Value{xv}); err == nil || !strings.Contains(err.Error(), "second derivative") {
				t.Errorf("second derivative in x: err = %v", err)
			}
		})
	}
	// Values at the extremes are finite and the limits.
	ext := ewgF64(t, []float64{math.Inf(-1), -1e300, -40, 0, 40, 1e300, math.Inf(1)}, 7)
	ones := ewgF64(t, []float64{1, 1, 1, 1, 1, 1, 1}, 7)
	defer ext.Release()
	defer ones.Release()
	for _, attrs := range []ir.Attrs{nil, ir.A("approximate", true)} {
		out := mustRun(t, host, "gelu_grad", attrs, ext, ones)
		ewgSame(t, fmt.Sprint("gelu_grad", attrs), out[0].F64(), []float64{0, 0, 0, 0.5, 1, 1, 1})
		release(out...)
	}
	out := mustRun(t, host, "silu_grad", nil, ext, ones)
	got := out[0].F64()
	if got[0] != 0 || got[1] != 0 || got[3] != 0.5 || got[5] != 1 || got[6] != 1 || math.Abs(got[2]) > 1e-15 || math.Abs(got[4]-1) > 1e-15 {
		t.Errorf("silu_grad at extremes: %v", got)
	}
	release(out...)
	// Shape checks.
	ewInferErr(t, "gelu_grad", nil, []string{"differ in shape"}, ir.TensorOf(ir.F32, 3, 4), ir.TensorOf(ir.F32, 4, 3))
	ewInferErr(t, "silu_grad", nil, []string{"different dtypes"}, ir.TensorOf(ir.F32, 3), ir.TensorOf(ir.F64, 3))
	ewInferErr(t, "silu_grad", nil, []string{"not supported"}, ir.TensorOf(ir.I32, 3), ir.TensorOf(ir.I32, 3))
	ewInferType(t, "gelu_grad", nil, ir.TensorOf(ir.F32, 3, 4), ir.TensorOf(ir.F32, -1, 4), ir.TensorOf(ir.F32, 3, -1))
	short := ewgF64(t, []float64{1, 2}, 2)
	defer short.Release()
	if _, err := ewRunDynamic(t, host, "silu_grad", nil, []ir.Type{ir.TensorOf(ir.F64, -1), ir.TensorOf(ir.F64, -1)}, ext, short); err == nil {
		t.Error("silu_grad on shapes [7] and [2]: no error")
	}
}

func ewgToF32(t testing.TB, x *tensor.Tensor) *tensor.Tensor {
	t.Helper()
	d := make([]float32, x.Len())
	for i, v := range x.F64() {
		d[i] = float32(v)
	}
	y, err := tensor.FromF32(host, d, x.Shape()...)
	if err != nil {
		t.Fatal(err)
	}
	return y
}

// TestRedGradHelperOp checks reduce_grad directly: values, f32, mean over
// zero elements, type errors, and its own gradient.
func TestRedGradHelperOp(t *testing.T) {
	dy := ewgF64(t, []float64{1, 2, 3}, 3)
	x := ewgF64(t, make([]float64, 12), 3, 4)
	defer dy.Release()
	defer x.Release()
	out := mustRun(t, host, "reduce_grad", ir.A("axes", []int{1}, "mean", true), dy, x)
	ewgSame(t, "reduce_grad mean", out[0].F64(), []float64{.25, .25, .25, .25, .5, .5, .5, .5, .75, .75, .75, .75})
	release(out...)
	out = mustRun(t, host, "reduce_grad", ir.A("axes", []int{1}), dy, x)
	ewgSame(t, "reduce_grad sum", out[0].F64(), []float64{1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3})
	release(out...)
	dy32 := ewgToF32(t, dy)
	defer dy32.Release()
	out = mustRun(t, host, "reduce_grad", ir.A("axes", []int{-1}, "keepdim", false, "mean", true), dy32, x)
	if got := out[0].F32(); got[4] != 0.5 || out[0].Shape()[1] != 4 {
		t.Errorf("reduce_grad f32: %v", got)
	}
	release(out...)
	// Zero elements reduced: an empty result, no division by zero.
	empty := ewgF64(t, nil, 3, 0)
	defer empty.Release()
	out = mustRun(t, host, "reduce_grad", ir.A("axes", []int{1}, "mean", true), dy, empty)
	if out[0].Len() != 0 {
		t.Errorf("reduce_grad to [3 0]: %v", out[0].Shape())
	}
	release(out...)
	// Mismatches.
	ewInferErr(t, "reduce_grad", ir.A("axes", []int{1}), []string{"does not fit"}, ir.TensorOf(ir.F64, 4), ir.TensorOf(ir.F64, 3, 4))
	ewInferErr(t, "reduce_grad", ir.A("axes", []int{1}, "keepdim", true), []string{"does not fit"}, ir.TensorOf(ir.F64, 3), ir.TensorOf(ir.F64, 3, 4))
	ewInferType(t, "reduce_grad", ir.A("axes", []int{0}, "keepdim", true), ir.TensorOf(ir.F32, -1, 4), ir.TensorOf(ir.F32, 1, 4), ir.TensorOf(ir.F64, -1, 4))
	if _, err := ewRunDynamic(t, host, "reduce_grad", ir.A("axes", []int{0}),
		[]ir.Type{ir.TensorOf(ir.F64, -1), ir.TensorOf(ir.F64, -1, -1)}, dy, x); err == nil {
		t.Error("reduce_grad of [3] to [3 4] over axis 0: no error")
	}
	// Its gradient in dy is the reduction itself.
	r := rand.New(rand.NewPCG(16, 17))
	for _, mean := range []bool{false, true} {
		for _, keep := range []bool{false, true} {
			attrs := ir.A("axes", []int{0, 2}, "keepdim", keep, "mean", mean)
			shape := []int{2, 3}
			if keep {
				shape = []int{1, 2, 1, 3}
			}
			d := f64Rand(t, r, -1, 1, shape...)
			like := ewgF64(t, make([]float64, 3*2*4*3), 3, 2, 4, 3)
			feeds := ewgFeeds(t, r, "reduce_grad", attrs, d, like)
			ewgCheckModel(t, 1e-6, ewgOpModel("reduce_grad", attrs, []*tensor.Tensor{d, like}, [][]int{nil, {0, 2}}), feeds)
			release(d, like, feeds["w"])
		}
	}
}

// ewgNoGrad lists the ops of this family through which no gradient flows;
// every other op of the family must have a rule.
var ewgNoGrad = []string{
	"equal", "not_equal", "less_than", "less_equal", "greater_than", "greater_equal",
	"logical_and", "logical_or", "logical_not", "full_like", "argmax",
}

var ewgWithGrad = []string{
	"add", "subtract", "multiply", "divide", "maximum", "minimum", "pow", "scale",
	"relu", "sigmoid", "tanh", "exp", "log", "sqrt", "rsqrt", "abs", "neg", "square",
	"gelu", "silu", "softplus", "clip",
	"where", "cast", "assign",
	"reduce_sum", "reduce_mean", "reduce_max", "reduce_min",
	"gelu_grad", "silu_grad", "reduce_grad",
}

func TestEwGradMarked(t *testing.T) {
	for _, n := range ewgNoGrad {
		d, ok := ops.Lookup(n)
		if !ok {
			t.Errorf("%s is not registered", n)
			continue
		}
		if !d.NoGrad || d.Grad != nil {
			t.Errorf("%s: NoGrad %v, Grad set %v; want NoGrad only", n, d.NoGrad, d.Grad != nil)
		}
	}
	for _, n := range ewgWithGrad {
		d, ok := ops.Lookup(n)
		if !ok {
			t.Errorf("%s is not registered", n)
			continue
		}
		if d.NoGrad || d.Grad == nil {
			t.Errorf("%s: NoGrad %v, Grad set %v; want a rule", n, d.NoGrad, d.Grad != nil)
		}
	}
}

// TestEwGradNoGradOps checks that differentiating through a NoGrad op of
// this family gives zeros, not an error.
func TestEwGradNoGradOps(t *testing.T) {
	b := ir.NewBuilder(ir.NewProgram())
	x := ops.Data(b, "x", ir.F64, 2, 3)
	c := ops.LogicalNot(b, ops.LogicalAnd(b, ops.GreaterThan(b, x, ops.FullLike(b, x, 0, ir.InvalidDType)), ops.Equal(b, x, x)))
	i := ops.Cast(b, ops.Argmax(b, x, 1, false), ir.F64)
	loss := ops.Add(b, ops.ReduceSum(b, ops.Cast(b, c, ir.F64), nil, false), ops.ReduceSum(b, i, nil, false))
	if _, err := autodiff.Backward(b, loss, []*ir.Value{x}); err != nil {
		t.Fatal(err)
	}
}

// TestEwGradF32 runs every rule on f32 operands (the rules build scalar
// constants and casts of the operand dtype) and compares with f64.
func TestEwGradF32(t *testing.T) {
	r := rand.New(rand.NewPCG(18, 19))
	cases := []ewgCase{
		{name: "divide", in: []ewgIn{ewgU(2, 1, 3), ewgR(0.5, 2, 4, 3)}},
		{name: "maximum", in: []ewgIn{ewgU(3, 4), ewgU(4)}},
		{name: "minimum", in: []ewgIn{ewgU(), ewgU(3)}},
		{name: "pow", in: []ewgIn{ewgR(0.3, 2, 3, 4), ewgR(-1, 2, 4)}},
		{name: "scale", attrs: ir.A("scale", 3.0), in: []ewgIn{ewgU(5)}},
		{name: "sigmoid", in: []ewgIn{ewgU(5)}},
		{name: "exp", in: []ewgIn{ewgU(5)}},
		{name: "log", in: []ewgIn{ewgR(0.2, 2, 5)}},
		{name: "sqrt", in: []ewgIn{ewgR(0.2, 2, 5)}},
		{name: "rsqrt", in: []ewgIn{ewgR(0.2, 2, 5)}},
		{name: "abs", in: []ewgIn{ewgAway(5)}},
		{name: "square", in: []ewgIn{ewgU(5)}},
		{name: "gelu", in: []ewgIn{ewgR(-3, 3, 5)}},
		{name: "gelu", attrs: ir.A("approximate", true), in: []ewgIn{ewgR(-3, 3, 5)}},
		{name: "silu", in: []ewgIn{ewgR(-3, 3, 5)}},
		{name: "softplus", in: []ewgIn{ewgR(-3, 3, 5)}},
		{name: "clip", attrs: ir.A("min", -0.3, "max", 0.3), in: []ewgIn{ewgU(9)}},
		{name: "assign", in: []ewgIn{ewgU(5)}},
		{name: "reduce_sum", attrs: ir.A("axes", []int{1}), in: []ewgIn{ewgU(3, 4)}},
		{name: "reduce_mean", attrs: ir.A("axes", []int{0}, "keepdim", true), in: []ewgIn{ewgU(3, 4)}},
		{name: "reduce_max", attrs: ir.A("axes", []int{1}), in: []ewgIn{ewgU(3, 4)}},
		{name: "reduce_min", in: []ewgIn{ewgU(3, 4)}},
	}
	for _, tc := range cases {
		t.Run(tc.String(), func(t *testing.T) {
			var in64, in32 []*tensor.Tensor
			for _, spec := range tc.in {
				x := spec.make(t, r)
				// Round to f32 first, so that both runs see one input.
				for i, v := range x.F64() {
					x.F64()[i] = float64(float32(v))
				}
				x32 := ewgToF32(t, x)
				defer x.Release()
				defer x32.Release()
				in64, in32 = append(in64, x), append(in32, x32)
			}
			want := ewgGradsOf(t, tc.name, tc.attrs, in64...)
			got := ewgGradsOf(t, tc.name, tc.attrs, in32...)
			for k := range want {
				for i := range want[k] {
					if math.Abs(got[k][i]-want[k][i]) > 1e-5*(1+math.Abs(want[k][i])) {
						t.Errorf("operand %d [%d]: f32 %g, f64 %g", k, i, got[k][i], want[k][i])
					}
				}
			}
		})
	}
	// where on f32: each column's count of true conditions goes to x.
	cond := ewgBools(t, r, 3, 4)
	x := f64Rand(t, r, -1, 1, 4)
	x32 := ewgToF32(t, x)
	defer cond.Release()
	defer x.Release()
	defer x32.Release()
	g := ewgGradsOf(t, "where", nil, cond, x32, x32)
	want := [2][]float64{make([]float64, 4), make([]float64, 4)}
	for i, c := range cond.Bool() {
		if c {
			want[0][i%4]++
		} else {
			want[1][i%4]++
		}
	}
	ewgSame(t, "where f32 dx", g[0], want[0])
	ewgSame(t, "where f32 dy", g[1], want[1])
}
