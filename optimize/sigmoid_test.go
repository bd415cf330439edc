package optimize_test

import (
	"math"
	"slices"
	"testing"

	"github.com/gopir/gopir/ir"
	"github.com/gopir/gopir/memory"
	"github.com/gopir/gopir/ops"
	"github.com/gopir/gopir/optimize"
)

// sigmoid_f32 takes the f32 sigmoids, top level and in a region, and
// leaves the f64 one and the one fused into a convolution; the results
// are within 2 float32 ulps of the sigmoids'.
func TestSigmoidF32Pass(t *testing.T) {
	b := ir.NewBuilder(ir.NewProgram())
	x := data(b, "x", -1, 3, 8, 8)
	fetch(b, ops.Sigmoid(b, fusedConv(b, x, 3, 4, false)))
	ops.Fetch(b, "f64", ops.Sigmoid(b, ops.Data(b, "d", ir.F64, 5)))
	c := ops.Data(b, "c", ir.I1)
	y := b.If(c, func(b *ir.Builder) []*ir.Value {
		return []*ir.Value{ops.Sigmoid(b, ops.Scale(b, x, 30, 0))}
	}, func(b *ir.Builder) []*ir.Value { return []*ir.Value{x} })
	ops.Fetch(b, "z", y[0])
	p, err := b.Finish()
	if err != nil {
		t.Fatal(err)
	}
	alloc := memory.New(memory.Options{})
	store := randomParams(t, p, alloc)
	defer store.Release()
	params := optimize.NewParams(store, alloc)
	defer params.Release()
	res, err := optimize.Inference(p, params, "sigmoid_f32")
	if err != nil {
		t.Fatal(err)
	}
	if n := res.Counts[0].Rewrites; n != 2 {
		t.Errorf("%d rewrites, want 2", n)
	}
	var names []string
	res.Program.Walk(func(op *ir.Op) bool {
		if op.Name() == "sigmoid" || op.Name() == "sigmoid_f32" {
			names = append(names, op.Name()+":"+op.Operand(0).Type().DType.String())
		}
		return true
	})
	if want := []string{"sigmoid_f32:f32", "sigmoid:f64", "sigmoid_f32:f32"}; !slices.Equal(names, want) {
		t.Errorf("sigmoids %q, want %q", names, want)
	}
	for _, cond := range []bool{false, true} {
		want := runFoldCase(t, p, store, alloc, cond)
		got := runFoldCase(t, res.Program, params.Store(), alloc, cond)
		for n, w := range want {
			g := got[n]
			if w.DType() != g.DType() || w.Len() != g.Len() {
				t.Fatalf("%s: %s, want %s", n, g.Type(), w.Type())
			}
			for i := range w.Len() {
				a, b := float32(g.Float64At(i)), float32(w.Float64At(i))
				if d := math.Abs(float64(a - b)); d > 2*float64(math.Nextafter32(b, 2)-b) && !(a != a && b != b) {
					t.Fatalf("%s[%d] = %g, want %g", n, i, a, b)
				}
			}
		}
		want.Release()
		got.Release()
	}
}
