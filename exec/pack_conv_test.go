package exec_test

import (
	"context"
	"testing"

	"github.com/gopir/gopir/exec"
	"github.com/gopir/gopir/ir"
	"github.com/gopir/gopir/kernels"
	"github.com/gopir/gopir/tensor"
)

// packConvProgram is two layers of an inference CNN on 2×2 maps: a
// convolution and a fused one (bias, SiLU), whose weights the pack cache
// keeps in the form the batch chooses: transposed panels at batch 1 (4
// output positions against 128 channels), plain ones at batch 32.
const packConvProgram = `{
  (%w) = "parameter" () {name:"w", shape:[128,64,3,3], dtype:f32} : () -> tensor<128x64x3x3xf32>
  (%v) = "parameter" () {name:"v", shape:[96,128,1,1], dtype:f32} : () -> tensor<96x128x1x1xf32>
  (%b) = "parameter" () {name:"b", shape:[96], dtype:f32} : () -> tensor<96xf32>
  (%x) = "data" () {name:"x", shape:[-1,64,2,2], dtype:f32} : () -> tensor<?x64x2x2xf32>
  (%h) = "conv2d" (%x, %w) {strides:[1,1], paddings:[1,1], dilations:[1,1], groups:1} : (tensor<?x64x2x2xf32>, tensor<128x64x3x3xf32>) -> tensor<?x128x2x2xf32>
  (%y) = "conv2d_fused" (%h, %v, %b) {strides:[1,1], paddings:[0,0], dilations:[1,1], groups:1, bias:true, residual:false, activation:"silu"} : (tensor<?x128x2x2xf32>, tensor<96x128x1x1xf32>, tensor<96xf32>) -> tensor<?x96x2x2xf32>
  () = "fetch" (%y) {name:"y"} : (tensor<?x96x2x2xf32>) -> ()
}`

// convPackedBytes is the bytes the cache holds for the program's two
// weights at batch n, as the allocator counts them.
func convPackedBytes(t *testing.T, n int) int64 {
	t.Helper()
	var total int64
	for _, p := range []kernels.Conv2DParams{
		{N: n, C: 64, H: 2, W: 2, O: 128, KH: 3, KW: 3, SH: 1, SW: 1, PH: 1, PW: 1, DH: 1, DW: 1, Groups: 1},
		{N: n, C: 128, H: 2, W: 2, O: 96, KH: 1, KW: 1, SH: 1, SW: 1, DH: 1, DW: 1, Groups: 1},
	} {
		if kernels.Conv2DPackForm(p) == kernels.ConvPackNone {
			t.Fatalf("batch %d: %+v reads no packed weights", n, p)
		}
		total += (int64(kernels.Conv2DPackedLen(p))*4 + 63) &^ 63
	}
	return total
}

// TestPackCacheConv: convolution weights are packed once per form and
// kept; a batch that changes the form (1 → 32 → 1) packs them again, the
// stale copies freed; the results are bitwise those without the cache;
// after every run the allocator holds the store and the copies, exactly
// as the planner predicts beforehand, and the store alone after
// ReleasePacked.
func TestPackCacheConv(t *testing.T) {
	a, st := newAlloc(), exec.NewStore()
	defer st.Release()
	for name, shape := range map[string][]int{"w": {128, 64, 3, 3}, "v": {96, 128, 1, 1}, "b": {96}} {
		n := 1
		for _, d := range shape {
			n *= d
		}
		x, err := tensor.FromF32(a, ramp(n), shape...)
		if err != nil {
			t.Fatal(err)
		}
		for i, v := range x.F32() {
			x.F32()[i] = v * 0.01
		}
		st.Set(name, x)
	}
	cached := compile(t, packConvProgram, exec.Options{Alloc: a, Store: st, PackCache: 1 << 30, Threads: 2, CheckLeaks: true})
	plain := compile(t, packConvProgram, exec.Options{Alloc: a, Store: st, Threads: 2})
	base := allocated(a)
	for _, batch := range []int{1, 1, 32, 32, 1} {
		in := feeds{"x": f32(t, ramp(batch*64*4), batch, 64, 2, 2)}
		plan, err := cached.Plan(exec.PlanOptions{Feeds: map[string]ir.Type{"x": ir.TensorOf(ir.F32, batch, 64, 2, 2)}})
		if err != nil {
			t.Fatal(err)
		}
		a.ResetPeak()
		before := allocated(a)
		got := mustRun(t, cached, in)
		st := a.Stats()
		if plan.Base != before || plan.Peak != st.Allocated.Peak || plan.End != st.Allocated.Current || plan.Packed != cached.PackedBytes() {
			t.Fatalf("batch %d: plan base %d peak %d end %d packed %d; run %d, %d, %d, %d", batch,
				plan.Base, plan.Peak, plan.End, plan.Packed, before, st.Allocated.Peak, st.Allocated.Current, cached.PackedBytes())
		}
		want := mustRun(t, plain, in)
		for i, v := range want["y"].F32() {
			if g := got["y"].F32()[i]; g != v {
				t.Fatalf("batch %d: y[%d] = %v with the pack cache, %v without", batch, i, g, v)
			}
		}
		got.Release()
		want.Release()
		releaseFeeds(in)
		packed := convPackedBytes(t, batch)
		if p := cached.PackedBytes(); p != packed || allocated(a) != base+packed {
			t.Fatalf("batch %d: packed %d, allocated %d; want %d and %d", batch, p, allocated(a), packed, base+packed)
		}
	}
	cached.ReleasePacked()
	if got := allocated(a); got != base {
		t.Fatalf("allocated %d after ReleasePacked, want the store's %d", got, base)
	}
}

// TestPackCacheConvFailedRun: a run that fails after a convolution has
// packed its weights (the next, fused convolution gets a residual of
// another batch) leaves the store and the copy, counted, and nothing
// else; runs that succeed afterwards use the copy and end where they
// started.
func TestPackCacheConvFailedRun(t *testing.T) {
	a, st := newAlloc(), exec.NewStore()
	defer st.Release()
	for name, shape := range map[string][]int{"w": {128, 64, 3, 3}, "v": {96, 128, 1, 1}} {
		n := 1
		for _, d := range shape {
			n *= d
		}
		x, err := tensor.FromF32(a, ramp(n), shape...)
		if err != nil {
			t.Fatal(err)
		}
		st.Set(name, x)
	}
	x := compile(t, `{
  (%w) = "parameter" () {name:"w", shape:[128,64,3,3], dtype:f32} : () -> tensor<128x64x3x3xf32>
  (%v) = "parameter" () {name:"v", shape:[96,128,1,1], dtype:f32} : () -> tensor<96x128x1x1xf32>
  (%x) = "data" () {name:"x", shape:[-1,64,2,2], dtype:f32} : () -> tensor<?x64x2x2xf32>
  (%r) = "data" () {name:"r", shape:[-1,96,2,2], dtype:f32} : () -> tensor<?x96x2x2xf32>
  (%h) = "conv2d" (%x, %w) {strides:[1,1], paddings:[1,1], dilations:[1,1], groups:1} : (tensor<?x64x2x2xf32>, tensor<128x64x3x3xf32>) -> tensor<?x128x2x2xf32>
  (%y) = "conv2d_fused" (%h, %v, %r) {strides:[1,1], paddings:[0,0], dilations:[1,1], groups:1, bias:false, residual:true, activation:"relu"} : (tensor<?x128x2x2xf32>, tensor<96x128x1x1xf32>, tensor<?x96x2x2xf32>) -> tensor<?x96x2x2xf32>
  () = "fetch" (%y) {name:"y"} : (tensor<?x96x2x2xf32>) -> ()
}`, exec.Options{Alloc: a, Store: st, PackCache: 1 << 30, Threads: 2})
	base := allocated(a)
	good := feeds{"x": f32(t, ramp(64*4), 1, 64, 2, 2), "r": f32(t, ramp(96*4), 1, 96, 2, 2)}
	bad := feeds{"x": good["x"], "r": f32(t, ramp(2*96*4), 2, 96, 2, 2)}
	defer releaseFeeds(good)
	defer bad["r"].Release()
	fed := allocated(a) - base
	for range 3 {
		if _, err := x.Run(context.Background(), bad); err == nil {
			t.Fatal("a residual of batch 2 against a result of batch 1 ran")
		}
		p := x.PackedBytes()
		if p == 0 || allocated(a) != base+fed+p {
			t.Fatalf("after a failed run: allocated %d, packed %d; want %d and the first convolution's copy", allocated(a), p, base+fed+p)
		}
	}
	for range 3 {
		mustRun(t, x, good).Release()
		if p := x.PackedBytes(); allocated(a) != base+fed+p || p != convPackedBytes(t, 1) {
			t.Fatalf("after a run: allocated %d, packed %d; want %d and %d", allocated(a), p, base+fed+p, convPackedBytes(t, 1))
		}
	}
}
