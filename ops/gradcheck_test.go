package ops_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/gopir/gopir/internal/fdcheck"

	"github.com/gopir/gopir/autodiff"
	"github.com/gopir/gopir/exec"
	"github.com/gopir/gopir/ir"
	"github.com/gopir/gopir/memory"
	"github.com/gopir/gopir/ops"
	"github.com/gopir/gopir/tensor"
)

// host holds test inputs, apart from the allocators under test.
var host = memory.New(memory.Options{})

// checkOpGrad checks an op's gradient rule against central finite
// differences: it builds loss = Σ_j Σ (result_j · r_j) with fixed random
// weights r_j over the op's float results, differentiates it with package
// autodiff with respect to every f64 input, runs it on the executor, and
// compares each gradient element with (L(x+h) − L(x−h)) / 2h. Inputs of
// other dtypes (labels, indices) are fed but not differentiated. The run
// must leave no buffer behind.
func checkOpGrad(t *testing.T, name string, attrs ir.Attrs, in ...*tensor.Tensor) {
	t.Helper()
	checkOpGradTol(t, 1e-5, name, attrs, in...)
}

// checkOpGradTol is checkOpGrad with a relative tolerance.
func checkOpGradTol(t *testing.T, tol float64, name string, attrs ir.Attrs, in ...*tensor.Tensor) {
	t.Helper()
	build := func(withGrad bool) (*ir.Program, []string) {
		b := ir.NewBuilder(ir.NewProgram())
		var vals, wrt []*ir.Value
		var wrtNames []string
		for i, x := range in {
			n := fmt.Sprintf("x%d", i)
			v := ops.Data(b, n, ir.DType(x.DType()), x.Shape()...)
			vals = append(vals, v)
			if x.DType() == tensor.F64 {
				wrt = append(wrt, v)
				wrtNames = append(wrtNames, n)
			}
		}
		op := b.Op(name, attrs, vals...)
		var loss *ir.Value
		for j, y := range op.Results() {
			if y.Type().DType != ir.F64 {
				continue
			}
			dims := make([]int, y.Type().Rank())
			for k := range dims {
				dims[k] = ir.Dynamic
			}
			w := ops.Data(b, fmt.Sprintf("r%d", j), ir.F64, dims...)
			term := ops.ReduceSum(b, ops.Multiply(b, y, w), nil, false)
			if loss == nil {
				loss = term
			} else {
				loss = ops.Add(b, loss, term)
			}
		}
		if loss == nil {
			t.Fatalf("%s has no f64 result to differentiate", name)
		}
		ops.Fetch(b, "loss", loss)
		if withGrad {
			grads, err := autodiff.Backward(b, loss, wrt)
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			for i, g := range grads {
				ops.Fetch(b, wrtNames[i]+"@GRAD", g)
			}
		}
		p, err := b.Finish()
		if err != nil {
			t.Fatalf("%s: %v\n%s", name, err, b.Program())
		}
		return p, wrtNames
	}
	gp, wrtNames := build(true)
	fp, _ := build(false)
	a := memory.New(memory.Options{})
	gx, err := exec.Compile(gp, exec.Options{Alloc: a, CheckLeaks: true})
	if err != nil {
		t.Fatalf("%s: %v\n%s", name, err, gp)
	}
	fx, err := exec.Compile(fp, exec.Options{})
	if err != nil {
		t.Fatal(err)
	}

	feeds := map[string]*tensor.Tensor{}
	for i, x := range in {
		feeds[fmt.Sprintf("x%d", i)] = x
	}
	// The weights r_j have the shapes of the results: run once to see them.
	probe := ops.Ctx{Alloc: memory.New(memory.Options{}), Threads: 1}
	op := gp.Body().Ops()[len(in)]
	k, err := ops.Bind(op)
	if err != nil {
		t.Fatal(err)
	}
	outs, err := k(&probe, in)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	r := rand.New(rand.NewPCG(11, uint64(len(name))))
	for j, y := range outs {
		if y.DType() == tensor.F64 {
			w, _ := tensor.New(host, tensor.F64, y.Shape()...)
			for i := range w.F64() {
				w.F64()[i] = r.Float64()*2 - 1
			}
			feeds[fmt.Sprintf("r%d", j)] = w
			defer w.Release()
		}
		y.Release()
	}

	lossAt := func() float64 {
		res, err := fx.Run(context.Background(), feeds)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		defer res.Release()
		return res["loss"].F64()[0]
	}
	res, err := gx.Run(context.Background(), feeds)
	if err != nil {
		t.Fatalf("%s: %v\n%s", name, err, gp)
	}
	defer func() {
		res.Release()
		if got := a.Stats().Allocated.Current; got != 0 {
			t.Errorf("%s: %d bytes allocated after the run", name, got)
		}
	}()
	for _, n := range wrtNames {
		g := res[n+"@GRAD"]
		x := feeds[n].F64()
		if g.Len() != len(x) {
			t.Fatalf("%s: gradient of %s has %d elements, want %d", name, n, g.Len(), len(x))
		}
		fdcheck.Check(t, name+": "+n, x, g.F64(), lossAt, tol)
	}
}

// f64Rand returns a tensor of uniform values in [lo, hi) on the host
// allocator.
func f64Rand(t testing.TB, r *rand.Rand, lo, hi float64, shape ...int) *tensor.Tensor {
	t.Helper()
	x, err := tensor.New(host, tensor.F64, shape...)
	if err != nil {
		t.Fatal(err)
	}
	for i := range x.F64() {
		x.F64()[i] = lo + r.Float64()*(hi-lo)
	}
	return x
}

func TestGradCheckCore(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	cases := []struct {
		name  string
		attrs ir.Attrs
		in    [][]int
	}{
		{"add", nil, [][]int{{3, 4}, {4}}},
		{"add", nil, [][]int{{1, 4}, {3, 1}}},
		{"subtract", nil, [][]int{{2, 3}, {2, 3}}},
		{"multiply", nil, [][]int{{2, 1, 3}, {4, 3}}},
		{"relu", nil, [][]int{{5, 3}}},
		{"tanh", nil, [][]int{{4}}},
		{"neg", nil, [][]int{{4}}},
		{"reduce_sum", ir.A("axes", []int{1}, "keepdim", false), [][]int{{3, 4, 2}}},
		{"reduce_sum", ir.A("axes", []int{0, 2}, "keepdim", true), [][]int{{3, 4, 2}}},
		{"reduce_sum", nil, [][]int{{3, 4}}},
		{"matmul", nil, [][]int{{3, 4}, {4, 5}}},
		{"matmul", ir.A("transpose_x", true, "transpose_y", true), [][]int{{4, 3}, {5, 4}}},
		{"matmul", nil, [][]int{{2, 3, 4}, {4, 5}}},
		{"matmul", ir.A("transpose_y", true), [][]int{{3, 4}, {2, 5, 4}}},
	}
	for _, tc := range cases {
		t.Run(fmt.Sprintf("%s%v", tc.name, tc.in), func(t *testing.T) {
			var in []*tensor.Tensor
			for _, s := range tc.in {
				x := f64Rand(t, r, -1, 1, s...)
				defer x.Release()
				in = append(in, x)
			}
			checkOpGrad(t, tc.name, tc.attrs, in...)
		})
	}
}
