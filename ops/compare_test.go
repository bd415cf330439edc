package ops_test

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/gopir/gopir/ir"
	"github.com/gopir/gopir/memory"
	"github.com/gopir/gopir/ops"
	"github.com/gopir/gopir/tensor"
)

var ewCompareRefs = []struct {
	name  string
	bools bool // also on i1
	ref   func(x, y float64) bool
}{
	{"equal", true, func(x, y float64) bool { return x == y }},
	{"not_equal", true, func(x, y float64) bool { return x != y }},
	{"less_than", false, func(x, y float64) bool { return x < y }},
	{"less_equal", false, func(x, y float64) bool { return x <= y }},
	{"greater_than", false, func(x, y float64) bool { return x > y }},
	{"greater_equal", false, func(x, y float64) bool { return x >= y }},
	{"logical_and", true, func(x, y float64) bool { return x != 0 && y != 0 }},
	{"logical_or", true, func(x, y float64) bool { return x != 0 || y != 0 }},
}

func ewB2F(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// ewCoarse returns a random tensor with few distinct values, so that
// equal elements are common.
func ewCoarse(t testing.TB, a *memory.Allocator, r *rand.Rand, dt tensor.DType, shape []int) *tensor.Tensor {
	x := randTensor(t, a, r, dt, shape...)
	switch dt {
	case tensor.F32:
		for i := range x.F32() {
			x.F32()[i] = float32(r.IntN(3)) / 2
		}
	case tensor.F64:
		for i := range x.F64() {
			x.F64()[i] = float64(r.IntN(3)) / 2
		}
	}
	return x
}

func TestEwCompare(t *testing.T) {
	ewDebug(t)
	a := memory.New(memory.Options{})
	r := rand.New(rand.NewPCG(31, 32))
	for _, op := range ewCompareRefs {
		logical := strings.HasPrefix(op.name, "logical")
		for _, dt := range ewAllDTypes {
			if dt == tensor.Bool && !op.bools || logical && dt != tensor.Bool {
				continue
			}
			for _, sh := range ewPairs {
				what := fmt.Sprintf("%s %s %v %v", op.name, dt, sh[0], sh[1])
				x := ewCoarse(t, a, r, dt, sh[0])
				y := ewCoarse(t, a, r, dt, sh[1])
				out := mustRun(t, a, op.name, nil, x, y)[0]
				if out.DType() != tensor.Bool {
					t.Fatalf("%s: result %s", what, out.Type())
				}
				shape := ewOut(sh[0], sh[1])
				xv, yv := ewVals(x), ewVals(y)
				want := make([]float64, ewNumel(shape))
				for i := range want {
					want[i] = ewB2F(op.ref(xv[ewIndex(shape, sh[0], i)], yv[ewIndex(shape, sh[1], i)]))
				}
				closeEnough(t, what, out, want, shape, 0)
				release(out, x, y)
				wantAllocated(t, a, 0)
			}
		}
	}
}

func TestEwCompareNaN(t *testing.T) {
	a := memory.New(memory.Options{})
	x, _ := tensor.FromF32(a, []float32{float32(math.NaN()), 1})
	y, _ := tensor.FromF32(a, []float32{float32(math.NaN()), float32(math.NaN())})
	for _, op := range ewCompareRefs[:6] {
		out := mustRun(t, a, op.name, nil, x, y)[0]
		want := op.name == "not_equal"
		if v := out.Bool(); v[0] != want || v[1] != want {
			t.Fatalf("%s with NaN = %v, want %v", op.name, v, want)
		}
		release(out)
	}
	release(x, y)
	wantAllocated(t, a, 0)
}

func TestEwLogicalNot(t *testing.T) {
	a := memory.New(memory.Options{})
	r := rand.New(rand.NewPCG(33, 34))
	for _, shape := range ewUnaryShapes {
		x := randTensor(t, a, r, tensor.Bool, shape...)
		out := mustRun(t, a, "logical_not", nil, x)[0]
		xv := ewVals(x)
		want := make([]float64, len(xv))
		for i, v := range xv {
			want[i] = 1 - v
		}
		closeEnough(t, fmt.Sprint("logical_not ", shape), out, want, shape, 0)
		release(x, out)
	}
	wantAllocated(t, a, 0)
}

func TestEwWhere(t *testing.T) {
	ewDebug(t)
	a := memory.New(memory.Options{})
	r := rand.New(rand.NewPCG(35, 36))
	for _, dt := range ewAllDTypes {
		for _, sh := range ewTriples {
			for _, perm := range [][3]int{{0, 1, 2}, {2, 0, 1}, {1, 2, 0}} {
				cs, xs, ys := sh[perm[0]], sh[perm[1]], sh[perm[2]]
				what := fmt.Sprintf("where %s %v %v %v", dt, cs, xs, ys)
				c := randTensor(t, a, r, tensor.Bool, cs...)
				x := randTensor(t, a, r, dt, xs...)
				y := randTensor(t, a, r, dt, ys...)
				out := mustRun(t, a, "where", nil, c, x, y)[0]
				shape := ewOut(cs, xs, ys)
				cv, xv, yv := ewVals(c), ewVals(x), ewVals(y)
				want := make([]float64, ewNumel(shape))
				for i := range want {
					if cv[ewIndex(shape, cs, i)] != 0 {
						want[i] = xv[ewIndex(shape, xs, i)]
					} else {
						want[i] = yv[ewIndex(shape, ys, i)]
					}
				}
				closeEnough(t, what, out, want, shape, 0)
				release(out, c, x, y)
				wantAllocated(t, a, 0)
			}
		}
	}
}

func TestEwCompareInferErrors(t *testing.T) {
	f32 := func(d ...int) ir.Type { return ir.TensorOf(ir.F32, d...) }
	i1 := func(d ...int) ir.Type { return ir.TensorOf(ir.I1, d...) }
	for _, op := range []string{"less_than", "less_equal", "greater_than", "greater_equal"} {
		ewInferErr(t, op, nil, []string{"tensor<2xi1>"}, i1(2), i1(2))
	}
	ewInferErr(t, "equal", nil, []string{"tensor<2xf32>", "tensor<2xf64>"}, f32(2), ir.TensorOf(ir.F64, 2))
	ewInferErr(t, "not_equal", nil, []string{"[3]", "[4]"}, f32(3), f32(4))
	ewInferErr(t, "logical_and", nil, []string{"tensor<2xf32>", "i1"}, f32(2), f32(2))
	ewInferErr(t, "logical_or", nil, []string{"tensor<2xi1>", "tensor<2xf32>"}, i1(2), f32(2))
	ewInferErr(t, "logical_not", nil, []string{"tensor<?xi32>"}, ir.TensorOf(ir.I32, -1))
	ewInferErr(t, "where", nil, []string{"tensor<2xf32>", "i1"}, f32(2), f32(2), f32(2))
	ewInferErr(t, "where", nil, []string{"tensor<2xf32>", "tensor<2xi64>"}, i1(2), f32(2), ir.TensorOf(ir.I64, 2))
	ewInferErr(t, "where", nil, []string{"[2]", "[3]", "[4]"}, i1(2), f32(3), f32(4))
	ewInferErr(t, "where", nil, []string{"3 operands"}, i1(2), f32(2))
	ewInferType(t, "less_than", nil, i1(-1, 3), f32(-1, 1), f32(3))
	ewInferType(t, "equal", nil, i1(2), i1(2), i1(1))
	ewInferType(t, "where", nil, f32(4, -1, 3), i1(4, 1, 1), f32(-1, 1), f32(3))
	ewInferType(t, "where", nil, i1(2), i1(2), i1(), i1(2))
}

func TestEwCompareOOMSweep(t *testing.T) {
	a := memory.New(memory.Options{})
	r := rand.New(rand.NewPCG(37, 38))
	x := randTensor(t, a, r, tensor.I64, 3, 1, 4)
	y := randTensor(t, a, r, tensor.I64, 5, 1)
	p := randTensor(t, a, r, tensor.Bool, 3, 1, 4)
	q := randTensor(t, a, r, tensor.Bool, 5, 1)
	for _, op := range ewCompareRefs {
		if strings.HasPrefix(op.name, "logical") {
			checkOOMSweep(t, op.name, nil, p, q)
		} else {
			checkOOMSweep(t, op.name, nil, x, y)
		}
	}
	checkOOMSweep(t, "logical_not", nil, p)
	checkOOMSweep(t, "where", nil, p, x, y)
	release(x, y, p, q)
	wantAllocated(t, a, 0)
}

func TestEwCompareBuilders(t *testing.T) {
	b := ir.NewBuilder(ir.NewProgram())
	x := ops.Data(b, "x", ir.I32, 3)
	y := ops.Data(b, "y", ir.I32, 2, 1)
	c := ops.LessThan(b, x, y)
	vals := []*ir.Value{
		ops.Equal(b, x, y), ops.NotEqual(b, x, y), c, ops.LessEqual(b, x, y),
		ops.GreaterThan(b, x, y), ops.GreaterEqual(b, x, y),
		ops.LogicalAnd(b, c, c), ops.LogicalOr(b, c, c), ops.LogicalNot(b, c),
	}
	w := ops.Where(b, c, x, y)
	if err := b.Err(); err != nil {
		t.Fatal(err)
	}
	for _, v := range vals {
		if !v.Type().Equal(ir.TensorOf(ir.I1, 2, 3)) {
			t.Fatalf("%s: type %s", v.Def().Name(), v.Type())
		}
	}
	if !w.Type().Equal(ir.TensorOf(ir.I32, 2, 3)) {
		t.Fatalf("where: type %s", w.Type())
	}
}
