package ops_test

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/gopir/gopir/ir"
	"github.com/gopir/gopir/memory"
	"github.com/gopir/gopir/ops"
	"github.com/gopir/gopir/tensor"
)

// Tests of tile and tile_grad (tile.go) against naive references.

func TestTile(t *testing.T) {
	shpDebug(t)
	r := rand.New(rand.NewPCG(8, 8))
	a := memory.New(memory.Options{})
	check := func(dt tensor.DType, shape, repeats []int, threads int) {
		t.Helper()
		out := make([]int, len(shape))
		reps := make([]int64, len(shape))
		for i, d := range shape {
			out[i] = d * repeats[i]
			reps[i] = int64(repeats[i])
		}
		x := randTensor(t, a, r, dt, shape...)
		want := shpRef(shpVals(x), out, func(idx []int) int {
			src := make([]int, len(idx))
			for i, j := range idx {
				src[i] = j % shape[i]
			}
			return shpRavel(src, shape)
		})
		what := fmt.Sprintf("tile %v by %v", shape, repeats)
		y := shpRunThreads(t, a, threads, "tile", ir.A("repeats", repeats), shpTypes(false, x), x)[0]
		closeEnough(t, what, y, want, out, 0)
		y.Release()
		rv := dynVec(t, []tensor.DType{tensor.I32, tensor.I64}[r.IntN(2)], reps...)
		y = shpRunThreads(t, a, threads, "tile", ir.A("dims", out), shpTypes(false, x, rv), x, rv)[0]
		closeEnough(t, what, y, want, out, 0)
		y.Release()
		y = shpRunThreads(t, a, threads, "tile", nil, append(shpTypes(true, x), shpTypes(false, rv)...), x, rv)[0]
		closeEnough(t, what, y, want, out, 0)
		release(y, x, rv)
	}
	for _, dt := range shpDTypes {
		for range 30 {
			shape := shpShape(r, r.IntN(4))
			repeats := make([]int, len(shape))
			for i := range repeats {
				repeats[i] = []int{0, 1, 1, 2, 3}[r.IntN(5)]
			}
			check(dt, shape, repeats, 2)
		}
	}
	check(tensor.F32, []int{301, 7}, []int{2, 40}, 4) // in parallel
	wantAllocated(t, a, 0)

	x := randTensor(t, a, r, tensor.F32, 2, 3)
	for _, c := range []struct {
		reps  []int64
		attrs ir.Attrs
		err   string
	}{
		{[]int64{1, -1}, nil, ">= 0"},
		{[]int64{1, 2}, ir.A("dims", []int{2, 3}), "differs from the declared"},
		{[]int64{1, 1 << 61}, nil, "too many elements"},
	} {
		rv := dynVec(t, tensor.I64, c.reps...)
		dynWantKernelErr(t, a, "tile", c.attrs, []*tensor.Tensor{x, rv}, c.err)
		rv.Release()
	}
	rv := dynVec(t, tensor.I64, 1, 2, 3)
	shpWantKernelErr(t, a, "tile", nil, []ir.Type{shpT(ir.F32, -1, -1, -1), shpT(ir.I64, 3)}, []*tensor.Tensor{x, rv}, "3 entries")
	release(x, rv)
	wantAllocated(t, a, 0)

	dynInferType(t, "tile", ir.A("repeats", []int{2, 0, 3}), shpT(ir.F32, 4, 0, -1), shpT(ir.F32, 2, 5, -1))
	dynInferType(t, "tile", nil, shpT(ir.I64, -1, 0), shpT(ir.I64, 2, 0), shpT(ir.I64, 2))
	dynInferType(t, "tile", ir.A("dims", []int{4, -1}), shpT(ir.I64, 4, 0), shpT(ir.I64, 2, 0), shpT(ir.I64, 2))
	shpWantErr(t, "tile", ir.A("repeats", []int{2}), []ir.Type{shpT(ir.F32, 2, 3)}, "one per axis")
	shpWantErr(t, "tile", ir.A("repeats", []int{2, -1}), []ir.Type{shpT(ir.F32, 2, 3)}, ">= 0")
	shpWantErr(t, "tile", ir.A("repeats", []int{2, 2}), []ir.Type{shpT(ir.F32, 2, 3), shpT(ir.I64, 2)}, "not both")
	shpWantErr(t, "tile", ir.A("repeats", []int{2, 2}, "dims", []int{4, 6}), []ir.Type{shpT(ir.F32, 2, 3)}, "run-time repeats")
	shpWantErr(t, "tile", nil, []ir.Type{shpT(ir.F32, 2, 3), shpT(ir.I64, 3)}, "rank 2")
	shpWantErr(t, "tile", nil, []ir.Type{shpT(ir.F32, 2, 3), shpT(ir.I64, -1)}, "static length")
	shpWantErr(t, "tile", nil, []ir.Type{shpT(ir.F32, 2, 3)}, "repeats")
	b := ir.NewBuilder(ir.NewProgram())
	v := ops.Tile(b, ops.Data(b, "x", ir.F32, 2, -1), 3, 2)
	w := ops.TileDyn(b, ops.Data(b, "x2", ir.F32, 2, 3), ops.Data(b, "r", ir.I64, 2), []int{-1, 6})
	if !v.Type().Equal(shpT(ir.F32, 6, -1)) || !w.Type().Equal(shpT(ir.F32, -1, 6)) || b.Err() != nil {
		t.Fatalf("Tile, TileDyn: %v %v %v", v.Type(), w.Type(), b.Err())
	}
}

func TestTileGrad(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 9))
	a := memory.New(memory.Options{})
	for _, dt := range []tensor.DType{tensor.F32, tensor.F64} {
		for range 30 {
			shape := shpShape(r, r.IntN(4))
			dyShape := make([]int, len(shape))
			for i, d := range shape {
				dyShape[i] = d * []int{0, 1, 2, 3}[r.IntN(4)]
			}
			dy := randTensor(t, a, r, dt, dyShape...)
			want := make([]float64, shpSize(shape))
			for p, v := range shpVals(dy) {
				idx := shpUnravel(p, dyShape)
				for i := range idx {
					idx[i] %= shape[i]
				}
				want[shpRavel(idx, shape)] += v
			}
			like := randTensor(t, a, r, tensor.Bool, shape...)
			what := fmt.Sprintf("tile_grad %v to %v", dyShape, shape)
			y := shpRunThreads(t, a, 2, "tile_grad", ir.A("shape", shape), shpTypes(false, dy), dy)[0]
			closeEnough(t, what, y, want, shape, 1e-6)
			y.Release()
			y = shpRunThreads(t, a, 2, "tile_grad", nil, shpTypes(true, dy, like), dy, like)[0]
			closeEnough(t, what, y, want, shape, 1e-6)
			release(y, dy, like)
		}
	}
	wantAllocated(t, a, 0)
	dy := randTensor(t, a, r, tensor.F32, 4, 5)
	like := randTensor(t, a, r, tensor.F32, 2, 2)
	like3 := randTensor(t, a, r, tensor.F32, 2)
	shpWantKernelErr(t, a, "tile_grad", nil, shpTypes(true, dy, like), []*tensor.Tensor{dy, like}, "not a tiling")
	shpWantKernelErr(t, a, "tile_grad", nil, shpTypes(true, dy, like), []*tensor.Tensor{dy, like3}, "differs in rank")
	release(dy, like, like3)
	wantAllocated(t, a, 0)
	shpWantErr(t, "tile_grad", ir.A("shape", []int{2, 2}), []ir.Type{shpT(ir.F32, 4, 5)}, "not a tiling")
	shpWantErr(t, "tile_grad", ir.A("shape", []int{0, 2}), []ir.Type{shpT(ir.F32, 4, 4)}, "not a tiling")
	shpWantErr(t, "tile_grad", ir.A("shape", []int{2}), []ir.Type{shpT(ir.F32, 4, 4)}, "differs in rank")
	shpWantErr(t, "tile_grad", ir.A("shape", []int{2}), []ir.Type{shpT(ir.I64, 4)}, "f32 or f64")
	shpWantErr(t, "tile_grad", ir.A("shape", []int{2}), []ir.Type{shpT(ir.F32, 4), shpT(ir.F32, 2)}, "not both")
	dynInferType(t, "tile_grad", nil, shpT(ir.F64, -1, 3), shpT(ir.F64, 4, -1), shpT(ir.I1, -1, 3))
}
