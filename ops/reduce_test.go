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

// redRef reduces x (shape) over the axes in mask, in float64, and returns
// the result with its shape.
func redRef(name string, x []float64, shape []int, mask []bool, keepdim bool) ([]float64, []int) {
	var outShape, kept []int
	for d, n := range shape {
		switch {
		case !mask[d]:
			outShape = append(outShape, n)
			kept = append(kept, n)
		case keepdim:
			outShape = append(outShape, 1)
		}
	}
	if outShape == nil {
		outShape = []int{}
	}
	out := make([]float64, ewNumel(kept))
	count := make([]int, len(out))
	for i := range out {
		switch name {
		case "reduce_max":
			out[i] = math.Inf(-1)
		case "reduce_min":
			out[i] = math.Inf(1)
		case "reduce_prod":
			out[i] = 1
		}
	}
	for i, v := range x {
		o, rem, stride := 0, i, 1
		for d := len(shape) - 1; d >= 0; d-- {
			c := rem % shape[d]
			rem /= shape[d]
			if !mask[d] {
				o += c * stride
				stride *= shape[d]
			}
		}
		count[o]++
		switch name {
		case "reduce_sum", "reduce_mean":
			out[o] += v
		case "reduce_max":
			out[o] = math.Max(out[o], v)
		case "reduce_min":
			out[o] = math.Min(out[o], v)
		case "reduce_prod":
			out[o] *= v
		}
	}
	if name == "reduce_mean" {
		for i := range out {
			out[i] /= float64(count[i])
		}
	}
	return out, outShape
}

var redTestShapes = [][]int{
	{}, {1}, {7}, {0}, {3, 5}, {1, 4}, {4, 1}, {2, 3, 4}, {5, 1, 3, 2}, {3, 0, 2},
	{2, 7, 1, 11}, {13, 17}, {211, 3}, {3, 1000, 7}, {70001}, {2, 40009},
}

func TestRedReduce(t *testing.T) {
	ewDebug(t)
	a := memory.New(memory.Options{})
	r := rand.New(rand.NewPCG(51, 52))
	for _, name := range []string{"reduce_sum", "reduce_mean", "reduce_max", "reduce_min", "reduce_prod"} {
		for _, dt := range ewNumDTypes {
			if name == "reduce_mean" && (dt == tensor.I32 || dt == tensor.I64) {
				continue
			}
			for _, shape := range redTestShapes {
				x := randTensor(t, a, r, dt, shape...)
				if name == "reduce_prod" {
					redProdFactors(x)
				}
				xv := ewVals(x)
				rank := len(shape)
				for m := 0; m < 1<<rank; m++ {
					if m == 0 && rank > 0 {
						continue // no axes means all axes
					}
					mask := make([]bool, rank)
					axes := []int{}
					for d := range rank {
						if m>>d&1 == 1 {
							mask[d] = true
							// Alternate positive and negative spellings,
							// in reverse order.
							if d%2 == 1 {
								axes = append([]int{d - rank}, axes...)
							} else {
								axes = append([]int{d}, axes...)
							}
						}
					}
					if m == 1<<rank-1 && m%3 == 0 {
						axes = []int{} // empty = all axes
					}
					for _, keepdim := range []bool{false, true} {
						attrs := ir.A("axes", axes, "keepdim", keepdim)
						what := fmt.Sprintf("%s%s %s %v", name, attrs, dt, shape)
						want, wantShape := redRef(name, xv, shape, mask, keepdim)
						empty := false
						for d, n := range shape {
							empty = empty || mask[d] && n == 0
						}
						outs, err := runOp(t, a, name, attrs, x)
						if empty && len(want) > 0 && (name == "reduce_max" || name == "reduce_min") {
							if err == nil || !strings.Contains(err.Error(), name) {
								t.Fatalf("%s: err %v, want an error naming %s", what, err, name)
							}
							wantAllocated(t, a, x.Bytes())
							continue
						}
						if err != nil {
							t.Fatalf("%s: %v", what, err)
						}
						for i := range want {
							want[i] = ewRound(dt, want[i])
						}
						tol := ewTol(dt)
						switch {
						case dt == tensor.F64 && name == "reduce_prod":
							tol = 1e-10 // 70001 roundings
						case dt == tensor.F64:
							tol = 1e-12
						}
						closeEnough(t, what, outs[0], want, wantShape, tol)
						release(outs...)
					}
				}
				release(x)
				wantAllocated(t, a, 0)
			}
		}
	}
}

// redProdFactors maps the random values of x to factors whose long
// products stay finite and exact enough: ±[0.5, 1.5) for floats, the sign
// (-1, 0 or 1) for integers.
func redProdFactors(x *tensor.Tensor) {
	switch x.DType() {
	case tensor.F32:
		for i, v := range x.F32() {
			x.F32()[i] = float32(math.Copysign(0.5+math.Abs(float64(v))/2, float64(v)))
		}
	case tensor.F64:
		for i, v := range x.F64() {
			x.F64()[i] = math.Copysign(0.5+math.Abs(v)/2, v)
		}
	case tensor.I32:
		for i, v := range x.I32() {
			x.I32()[i] = int32(max(-1, min(1, v)))
		}
	case tensor.I64:
		for i, v := range x.I64() {
			x.I64()[i] = max(-1, min(1, v))
		}
	}
}

func TestRedEmpty(t *testing.T) {
	a := memory.New(memory.Options{})
	x, _ := tensor.Zeros(a, tensor.F32, 2, 0)
	sum := mustRun(t, a, "reduce_sum", ir.A("axes", []int{1}), x)[0]
	mean := mustRun(t, a, "reduce_mean", ir.A("axes", []int{-1}), x)[0]
	prod := mustRun(t, a, "reduce_prod", ir.A("axes", []int{1}), x)[0]
	if v := sum.F32(); len(v) != 2 || v[0] != 0 || v[1] != 0 {
		t.Fatalf("sum over size 0 = %v", v)
	}
	if v := prod.F32(); len(v) != 2 || v[0] != 1 || v[1] != 1 {
		t.Fatalf("product over size 0 = %v", v)
	}
	if v := mean.F32(); len(v) != 2 || !ewNaN(float64(v[0])) || !ewNaN(float64(v[1])) {
		t.Fatalf("mean over size 0 = %v", v)
	}
	for _, name := range []string{"reduce_max", "reduce_min"} {
		_, err := runOp(t, a, name, ir.A("axes", []int{1}), x)
		if err == nil || !strings.Contains(err.Error(), name) || !strings.Contains(err.Error(), "[2 0]") {
			t.Fatalf("%s over size 0: %v", name, err)
		}
	}
	_, err := runOp(t, a, "argmax", ir.A("axis", 1), x)
	if err == nil || !strings.Contains(err.Error(), "argmax") {
		t.Fatalf("argmax over size 0: %v", err)
	}
	// Reducing the other axis gives an empty result, no error.
	mx := mustRun(t, a, "reduce_max", ir.A("axes", []int{0}), x)[0]
	am := mustRun(t, a, "argmax", ir.A("axis", 0), x)[0]
	if mx.Len() != 0 || am.Len() != 0 {
		t.Fatalf("max/argmax over axis 0 of [2 0]: %v %v", mx, am)
	}
	release(x, sum, mean, prod, mx, am)
	wantAllocated(t, a, 0)
}

// TestRedDeterministic checks that big f32 reductions give the same bits
// for any thread count and agree with a float64 reference.
func TestRedDeterministic(t *testing.T) {
	a := memory.New(memory.Options{})
	r := rand.New(rand.NewPCG(53, 54))
	x := randTensor(t, a, r, tensor.F32, 3, 150001)
	for _, axes := range [][]int{{}, {0}, {1}} {
		op, err := buildOp(t, "reduce_sum", ir.A("axes", axes), ir.TensorOf(ir.F32, 3, 150001))
		if err != nil {
			t.Fatal(err)
		}
		k, err := ops.Bind(op)
		if err != nil {
			t.Fatal(err)
		}
		var first []float32
		for _, threads := range []int{1, 2, 3, 8} {
			outs, err := k(&ops.Ctx{Alloc: a, Threads: threads}, []*tensor.Tensor{x})
			if err != nil {
				t.Fatal(err)
			}
			got := append([]float32(nil), outs[0].F32()...)
			release(outs...)
			if first == nil {
				first = got
				continue
			}
			for i := range got {
				if math.Float32bits(got[i]) != math.Float32bits(first[i]) {
					t.Fatalf("axes %v: threads %d gives %v, threads 1 gives %v", axes, threads, got[i], first[i])
				}
			}
		}
		mask := []bool{len(axes) == 0 || axes[0] == 0, len(axes) == 0 || axes[0] == 1}
		want, _ := redRef("reduce_sum", ewVals(x), x.Shape(), mask, false)
		for i, w := range want {
			if math.Abs(float64(first[i])-w) > 1e-6*(1+math.Abs(w)) {
				t.Fatalf("axes %v: sum[%d] = %v, want %v", axes, i, first[i], w)
			}
		}
	}
	release(x)
	wantAllocated(t, a, 0)
}

func TestRedArgmax(t *testing.T) {
	ewDebug(t)
	a := memory.New(memory.Options{})
	r := rand.New(rand.NewPCG(55, 56))
	for _, dt := range ewNumDTypes {
		for _, shape := range redTestShapes {
			x := ewCoarse(t, a, r, dt, shape) // many ties
			xv := ewVals(x)
			for axis := range shape {
				for _, keepdim := range []bool{false, true} {
					spell := axis
					if keepdim {
						spell = axis - len(shape)
					}
					attrs := ir.A("axis", spell, "keepdim", keepdim)
					what := fmt.Sprintf("argmax%s %s %v", attrs, dt, shape)
					A, R, B := ewNumel(shape[:axis]), shape[axis], ewNumel(shape[axis+1:])
					outs, err := runOp(t, a, "argmax", attrs, x)
					if R == 0 && A*B > 0 {
						if err == nil {
							t.Fatalf("%s: no error", what)
						}
						continue
					}
					if err != nil {
						t.Fatalf("%s: %v", what, err)
					}
					want := make([]float64, A*B)
					for i := range A {
						for j := range B {
							best := 0
							for k := 1; k < R; k++ {
								if xv[(i*R+k)*B+j] > xv[(i*R+best)*B+j] {
									best = k
								}
							}
							want[i*B+j] = float64(best)
						}
					}
					wantShape := append([]int{}, shape[:axis]...)
					if keepdim {
						wantShape = append(wantShape, 1)
					}
					wantShape = append(wantShape, shape[axis+1:]...)
					if outs[0].DType() != tensor.I64 {
						t.Fatalf("%s: dtype %s", what, outs[0].DType())
					}
					closeEnough(t, what, outs[0], want, wantShape, 0)
					release(outs...)
				}
			}
			release(x)
			wantAllocated(t, a, 0)
		}
	}
}

func TestRedArgmaxNaN(t *testing.T) {
	a := memory.New(memory.Options{})
	nan := math.NaN()
	x, _ := tensor.FromF64(a, []float64{1, nan, 5, nan, 2, 3, 9, 9, 0}, 3, 3)
	rows := mustRun(t, a, "argmax", ir.A("axis", 1), x)[0]
	cols := mustRun(t, a, "argmax", ir.A("axis", 0), x)[0]
	if v := rows.I64(); v[0] != 1 || v[1] != 0 || v[2] != 0 {
		t.Fatalf("argmax rows = %v, want [1 0 0]", v)
	}
	if v := cols.I64(); v[0] != 1 || v[1] != 0 || v[2] != 0 {
		t.Fatalf("argmax cols = %v, want [1 0 0]", v)
	}
	release(x, rows, cols)
	wantAllocated(t, a, 0)
}

func TestRedInferErrors(t *testing.T) {
	f32 := func(d ...int) ir.Type { return ir.TensorOf(ir.F32, d...) }
	ewInferErr(t, "reduce_sum", ir.A("axes", []int{1, -1}), []string{"tensor<2x3xf32>", "twice"}, f32(2, 3))
	ewInferErr(t, "reduce_max", ir.A("axes", []int{2}), []string{"tensor<2x3xf32>", "out of range"}, f32(2, 3))
	ewInferErr(t, "reduce_min", ir.A("axes", []int{-3}), []string{"tensor<2x3xf32>", "out of range"}, f32(2, 3))
	ewInferErr(t, "reduce_mean", nil, []string{"tensor<2xi32>"}, ir.TensorOf(ir.I32, 2))
	ewInferErr(t, "reduce_sum", nil, []string{"tensor<2xi1>"}, ir.TensorOf(ir.I1, 2))
	ewInferErr(t, "reduce_prod", nil, []string{"tensor<2xi1>"}, ir.TensorOf(ir.I1, 2))
	ewInferErr(t, "reduce_prod", ir.A("axes", []int{0, 0}), []string{"twice"}, f32(2))
	ewInferErr(t, "reduce_sum", ir.A("axes", 1), []string{"axes"}, f32(2))
	ewInferErr(t, "reduce_sum", ir.A("keepdim", 1), []string{"keepdim"}, f32(2))
	ewInferErr(t, "argmax", nil, []string{"axis"}, f32(2))
	ewInferErr(t, "argmax", ir.A("axis", 2), []string{"tensor<2x3xf32>", "out of range"}, f32(2, 3))
	ewInferErr(t, "argmax", ir.A("axis", 0), []string{"tensor<3xi1>"}, ir.TensorOf(ir.I1, 3))
	ewInferType(t, "reduce_sum", nil, f32(), f32(-1, 3))
	ewInferType(t, "reduce_sum", ir.A("axes", []int{}, "keepdim", true), f32(1, 1), f32(-1, 3))
	ewInferType(t, "reduce_mean", ir.A("axes", []int{-1}), f32(-1), f32(-1, 3))
	ewInferType(t, "reduce_max", ir.A("axes", []int{0, 2}, "keepdim", true), ir.TensorOf(ir.I64, 1, -1, 1), ir.TensorOf(ir.I64, 4, -1, 5))
	ewInferType(t, "argmax", ir.A("axis", -1), ir.TensorOf(ir.I64, -1), f32(-1, 3))
	ewInferType(t, "argmax", ir.A("axis", 0, "keepdim", true), ir.TensorOf(ir.I64, 1, 3), ir.TensorOf(ir.I32, -1, 3))
}

func TestRedOOMSweep(t *testing.T) {
	a := memory.New(memory.Options{})
	r := rand.New(rand.NewPCG(57, 58))
	x := randTensor(t, a, r, tensor.F64, 3, 4, 5)
	for _, name := range []string{"reduce_sum", "reduce_mean", "reduce_max", "reduce_min", "reduce_prod"} {
		checkOOMSweep(t, name, ir.A("axes", []int{1}), x)
		checkOOMSweep(t, name, nil, x)
	}
	checkOOMSweep(t, "argmax", ir.A("axis", 2, "keepdim", true), x)
	release(x)
	wantAllocated(t, a, 0)
}

func TestRedBuilders(t *testing.T) {
	b := ir.NewBuilder(ir.NewProgram())
	x := ops.Data(b, "x", ir.F32, 2, 3, 4)
	vals := []*ir.Value{
		ops.ReduceSum(b, x, []int{1}, false),
		ops.ReduceMean(b, x, []int{1}, false),
		ops.ReduceMax(b, x, []int{-2}, false),
		ops.ReduceMin(b, x, []int{1}, false),
		ops.ReduceProd(b, x, []int{-2}, false),
	}
	all := ops.ReduceSum(b, x, nil, true)
	am := ops.Argmax(b, x, 1, false)
	if err := b.Err(); err != nil {
		t.Fatal(err)
	}
	for _, v := range vals {
		if !v.Type().Equal(ir.TensorOf(ir.F32, 2, 4)) {
			t.Fatalf("%s: type %s", v.Def().Name(), v.Type())
		}
	}
	if !all.Type().Equal(ir.TensorOf(ir.F32, 1, 1, 1)) || !am.Type().Equal(ir.TensorOf(ir.I64, 2, 4)) {
		t.Fatalf("types %s %s", all.Type(), am.Type())
	}
}

func BenchmarkRedReduceSum(b *testing.B) {
	a := memory.New(memory.Options{})
	r := rand.New(rand.NewPCG(1, 1))
	x := randTensor(b, a, r, tensor.F32, 1024, 1024)
	b.SetBytes(4 << 20)
	for b.Loop() {
		out := mustRun(b, a, "reduce_sum", ir.A("axes", []int{0}), x)
		release(out...)
	}
}
