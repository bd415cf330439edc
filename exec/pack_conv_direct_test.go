package exec_test

import (
	"context"
	"math"
	"testing"

	"github.com/gopir/gopir/exec"
	"github.com/gopir/gopir/ir"
	"github.com/gopir/gopir/kernels"
	"github.com/gopir/gopir/tensor"
)

// packDirectProgram is the small CNN's two convolutions (3→32 on 32×32
// with bias, ReLU and the 2×2 pool; 32→64 on 16×16 with bias and ReLU):
// with AVX-512 both run on the direct kernel at batches 1 and 8, whose
// reordered weights do not depend on the batch, so the pack cache keeps
// one copy of each across batches.
const packDirectProgram = `{
  (%w1) = "parameter" () {name:"w1", shape:[32,3,3,3], dtype:f32} : () -> tensor<32x3x3x3xf32>
  (%b1) = "parameter" () {name:"b1", shape:[32], dtype:f32} : () -> tensor<32xf32>
  (%w2) = "parameter" () {name:"w2", shape:[64,32,3,3], dtype:f32} : () -> tensor<64x32x3x3xf32>
  (%b2) = "parameter" () {name:"b2", shape:[64], dtype:f32} : () -> tensor<64xf32>
  (%x) = "data" () {name:"x", shape:[-1,3,32,32], dtype:f32} : () -> tensor<?x3x32x32xf32>
  (%h) = "conv2d_fused" (%x, %w1, %b1) {strides:[1,1], paddings:[1,1], dilations:[1,1], groups:1, bias:true, residual:false, activation:"relu", pool:"max2x2"} : (tensor<?x3x32x32xf32>, tensor<32x3x3x3xf32>, tensor<32xf32>) -> tensor<?x32x16x16xf32>
  (%y) = "conv2d_fused" (%h, %w2, %b2) {strides:[1,1], paddings:[1,1], dilations:[1,1], groups:1, bias:true, residual:false, activation:"relu"} : (tensor<?x32x16x16xf32>, tensor<64x32x3x3xf32>, tensor<64xf32>) -> tensor<?x64x16x16xf32>
  () = "fetch" (%y) {name:"y"} : (tensor<?x64x16x16xf32>) -> ()
}`

// packDirectParams is the program's two convolutions at batch n.
func packDirectParams(n int) []kernels.Conv2DParams {
	return []kernels.Conv2DParams{
		{N: n, C: 3, H: 32, W: 32, O: 32, KH: 3, KW: 3, SH: 1, SW: 1, PH: 1, PW: 1, DH: 1, DW: 1, Groups: 1},
		{N: n, C: 32, H: 16, W: 16, O: 64, KH: 3, KW: 3, SH: 1, SW: 1, PH: 1, PW: 1, DH: 1, DW: 1, Groups: 1},
	}
}

// TestPackCacheConvDirect: the direct kernel's weights are reordered once
// and kept while the batch changes (1 → 8 → 1); the results are bitwise
// those without the cache; after every run, failed ones included, the
// allocator holds the store and the copies, as the planner predicts, and
// the store alone after ReleasePacked.
func TestPackCacheConvDirect(t *testing.T) {
	a, st := newAlloc(), exec.NewStore()
	defer st.Release()
	for name, shape := range map[string][]int{"w1": {32, 3, 3, 3}, "b1": {32}, "w2": {64, 32, 3, 3}, "b2": {64}} {
		n := 1
		for _, d := range shape {
			n *= d
		}
		data := make([]float32, n)
		for i := range data {
			data[i] = float32(math.Sin(float64(i))) * 0.2
		}
		x, err := tensor.FromF32(a, data, shape...)
		if err != nil {
			t.Fatal(err)
		}
		st.Set(name, x)
	}
	cached := compile(t, packDirectProgram, exec.Options{Alloc: a, Store: st, PackCache: 1 << 30, Threads: 2, CheckLeaks: true})
	plain := compile(t, packDirectProgram, exec.Options{Alloc: a, Store: st, Threads: 2})
	base := allocated(a)
	for _, batch := range []int{1, 1, 8, 8, 1, 8} {
		in := feeds{"x": f32(t, ramp(batch*3*32*32), batch, 3, 32, 32)}
		plan, err := cached.Plan(exec.PlanOptions{Feeds: map[string]ir.Type{"x": ir.TensorOf(ir.F32, batch, 3, 32, 32)}})
		if err != nil {
			t.Fatal(err)
		}
		a.ResetPeak()
		before := allocated(a)
		got := mustRun(t, cached, in)
		s := a.Stats()
		if plan.Base != before || plan.Peak != s.Allocated.Peak || plan.End != s.Allocated.Current || plan.Packed != cached.PackedBytes() {
			t.Fatalf("batch %d: plan base %d peak %d end %d packed %d; run %d, %d, %d, %d", batch,
				plan.Base, plan.Peak, plan.End, plan.Packed, before, s.Allocated.Peak, s.Allocated.Current, cached.PackedBytes())
		}
		want := mustRun(t, plain, in)
		for i, v := range want["y"].F32() {
			if g := got["y"].F32()[i]; math.Float32bits(g) != math.Float32bits(v) {
				t.Fatalf("batch %d: y[%d] = %v with the pack cache, %v without", batch, i, g, v)
			}
		}
		got.Release()
		want.Release()
		var packed int64
		for _, p := range packDirectParams(batch) {
			packed += (int64(kernels.Conv2DPackedLen(p))*4 + 63) &^ 63
		}
		if p := cached.PackedBytes(); p != packed || allocated(a) != base+packed {
			t.Fatalf("batch %d: packed %d, allocated %d; want %d and %d", batch, p, allocated(a), packed, base+packed)
		}
		// A failed run (a feed of the wrong shape) leaves the same.
		bad := feeds{"x": f32(t, ramp(batch*3*31*32), batch, 3, 31, 32)}
		if _, err := cached.Run(context.Background(), bad); err == nil {
			t.Fatalf("batch %d: a 31×32 input ran", batch)
		}
		releaseFeeds(bad)
		releaseFeeds(in)
		if p := cached.PackedBytes(); p != packed || allocated(a) != base+packed {
			t.Fatalf("batch %d after a failed run: packed %d, allocated %d; want %d and %d", batch, p, allocated(a), packed, base+packed)
		}
	}
	cached.ReleasePacked()
	if got := allocated(a); got != base {
		t.Fatalf("allocated %d after ReleasePacked, want the store's %d", got, base)
	}
}
