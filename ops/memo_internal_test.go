package ops

import (
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/gopir/gopir/ir"
	"github.com/gopir/gopir/memory"
	"github.com/gopir/gopir/tensor"
)

func TestShapeMemo(t *testing.T) {
	var m shapeMemo[int]
	if _, ok := m.lookup([]int{2, 3}); ok {
		t.Fatal("empty memo found a value")
	}
	m.store(7, []int{2, 3}, []int{})
	for _, c := range []struct {
		shapes [][]int
		ok     bool
	}{
		{[][]int{{2, 3}, {}}, true},
		{[][]int{{2, 3}}, false},
		{[][]int{{2, 3}, {1}}, false},
		{[][]int{{2}, {3}}, false},
		{[][]int{{2, 3, 0}}, false},
		{[][]int{{3, 2}, {}}, false},
		{[][]int{{}, {2, 3}}, false},
	} {
		v, ok := m.lookup(c.shapes...)
		if ok != c.ok || ok && v != 7 {
			t.Errorf("lookup %v = %d, %v; want found %v", c.shapes, v, ok, c.ok)
		}
	}
}

// TestShapeMemoKernels runs kernels that keep what they derive from
// shapes (matmul, resize, pad, pad_grad) on operands of changing dynamic
// dims, one bound kernel for all, against a kernel bound afresh for each.
func TestShapeMemoKernels(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 5))
	a := memory.New(memory.Options{})
	type kase struct {
		name   string
		attrs  ir.Attrs
		types  []ir.Type
		shapes [][][]int // per run, the operands' shapes
	}
	for _, k := range []kase{
		{"matmul", nil, []ir.Type{ir.TensorOf(ir.F32, ir.Dynamic, ir.Dynamic, 3), ir.TensorOf(ir.F32, ir.Dynamic, 3, 4)},
			[][][]int{{{2, 5, 3}, {1, 3, 4}}, {{2, 5, 3}, {2, 3, 4}}, {{1, 5, 3}, {2, 3, 4}}, {{2, 5, 3}, {1, 3, 4}}, {{3, 1, 3}, {3, 3, 4}}}},
		{"resize", ir.A("axes", []int{1}, "sizes", []int{7}, "scales", []float64{1.5}, "mode", "cubic"), []ir.Type{ir.TensorOf(ir.F64, ir.Dynamic, ir.Dynamic)},
			[][][]int{{{2, 5}}, {{3, 5}}, {{2, 4}}, {{2, 5}}}},
		{"pad", ir.A("pads", []int{1, -1, 2, 0}, "mode", "reflect"), []ir.Type{ir.TensorOf(ir.F32, ir.Dynamic, ir.Dynamic)},
			[][][]int{{{3, 4}}, {{2, 4}}, {{3, 6}}, {{3, 4}}}},
		{"pad_grad", ir.A("pads", []int{1, -1, 2, 0}, "mode", "edge"), []ir.Type{ir.TensorOf(ir.F64, ir.Dynamic, ir.Dynamic)},
			[][][]int{{{6, 4}}, {{5, 4}}, {{6, 7}}, {{6, 4}}}},
	} {
		b := ir.NewBuilder(ir.NewProgram())
		var vals []*ir.Value
		for i, ty := range k.types {
			vals = append(vals, Data(b, string(rune('a'+i)), ty.DType, ty.Dims...))
		}
		op := b.Op(k.name, k.attrs, vals...)
		if err := b.Err(); err != nil {
			t.Fatal(err)
		}
		kept, err := Bind(op)
		if err != nil {
			t.Fatal(err)
		}
		c := &Ctx{Alloc: a, Threads: 2}
		for _, shapes := range k.shapes {
			in := make([]*tensor.Tensor, len(shapes))
			for i, s := range shapes {
				x, err := tensor.New(a, tensor.DType(k.types[i].DType), s...)
				if err != nil {
					t.Fatal(err)
				}
				for j := range x.Len() {
					if x.DType() == tensor.F32 {
						x.F32()[j] = r.Float32()
					} else {
						x.F64()[j] = r.Float64()
					}
				}
				in[i] = x
			}
			got, err := kept(c, in)
			if err != nil {
				t.Fatalf("%s %v: %v", k.name, shapes, err)
			}
			fresh, err := Bind(op)
			if err != nil {
				t.Fatal(err)
			}
			want, err := fresh(c, in)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got[0].Shape(), want[0].Shape()) || !slices.Equal(got[0].Raw(), want[0].Raw()) {
				t.Errorf("%s %v: the kept kernel gives %v, a fresh one %v", k.name, shapes, got[0], want[0])
			}
			releaseAll(got)
			releaseAll(want)
			releaseAll(in)
		}
	}
	if n := a.Stats().Allocated.Current; n != 0 {
		t.Errorf("%d bytes left allocated", n)
	}
}

// TestBindComputeCache: the kernel ops.Bind makes of a Compute op infers
// the results and the workspace again when the thread count or an
// operand's dtype changes, not only its shape.
func TestBindComputeCache(t *testing.T) {
	a := memory.New(memory.Options{})
	b := ir.NewBuilder(ir.NewProgram())
	x := Data(b, "x", ir.F32, 8, 6, 14, 14)
	w := Data(b, "w", ir.F32, 16, 6, 5, 5)
	conv := b.Op("conv2d", nil, x, w)
	m := b.Op("matmul", nil, Data(b, "p", ir.F32, 3, 4), Data(b, "q", ir.F32, 4, 2))
	if err := b.Err(); err != nil {
		t.Fatal(err)
	}
	k, err := Bind(conv)
	if err != nil {
		t.Fatal(err)
	}
	xt, _ := tensor.New(a, tensor.F32, 8, 6, 14, 14)
	wt, _ := tensor.New(a, tensor.F32, 16, 6, 5, 5)
	clear(xt.Raw())
	clear(wt.Raw())
	for _, th := range []int{1, 4, 2, 1} { // more threads take more workspace
		out, err := k(&Ctx{Alloc: a, Threads: th}, []*tensor.Tensor{xt, wt})
		if err != nil {
			t.Fatal(err)
		}
		releaseAll(out)
	}
	releaseAll([]*tensor.Tensor{xt, wt})
	k, err = Bind(m)
	if err != nil {
		t.Fatal(err)
	}
	for _, dt := range []tensor.DType{tensor.F32, tensor.F64, tensor.F32} {
		p, _ := tensor.New(a, dt, 3, 4)
		q, _ := tensor.New(a, dt, 4, 2)
		clear(p.Raw())
		clear(q.Raw())
		out, err := k(&Ctx{Alloc: a}, []*tensor.Tensor{p, q})
		if err != nil {
			t.Fatal(err)
		}
		if out[0].DType() != dt {
			t.Errorf("matmul of %s operands gave %s", dt, out[0].DType())
		}
		releaseAll(out)
		releaseAll([]*tensor.Tensor{p, q})
	}
	if n := a.Stats().Allocated.Current; n != 0 {
		t.Errorf("%d bytes left allocated", n)
	}
}
