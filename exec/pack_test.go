package exec_test

import (
	"context"
	"errors"
	"testing"

	"github.com/gopir/gopir/exec"
	"github.com/gopir/gopir/ir"
	"github.com/gopir/gopir/kernels"
	"github.com/gopir/gopir/memory"
	"github.com/gopir/gopir/ops"
	"github.com/gopir/gopir/tensor"
)

// packProgram is a layer of an inference program: x·wᵀ (w a parameter,
// packed by the cache) followed by a second product whose y is computed,
// which is never packed, and one inside a loop body, whose slot packs once
// for all trips.
const packProgram = `{
  (%w) = "parameter" () {name:"w", shape:[40,70], dtype:f32} : () -> tensor<40x70xf32>
  (%v) = "parameter" () {name:"v", shape:[40,24], dtype:f32} : () -> tensor<40x24xf32>
  (%x) = "data" () {name:"x", shape:[-1,70], dtype:f32} : () -> tensor<?x70xf32>
  (%n) = "data" () {name:"n", shape:[], dtype:i64} : () -> tensor<i64>
  (%h) = "matmul" (%x, %w) {transpose_x:false, transpose_y:true} : (tensor<?x70xf32>, tensor<40x70xf32>) -> tensor<?x40xf32>
  (%hh) = "matmul" (%h, %h) {transpose_x:true, transpose_y:false} : (tensor<?x40xf32>, tensor<?x40xf32>) -> tensor<40x40xf32>
  (%zero) = "full" () {shape:[], value:0, dtype:i64} : () -> tensor<i64>
  (%one) = "full" () {shape:[], value:1, dtype:i64} : () -> tensor<i64>
  (%c0) = "less_than" (%zero, %n) : (tensor<i64>, tensor<i64>) -> tensor<i1>
  (%iN, %z) = "while" (%c0, %zero, %hh) : (tensor<i1>, tensor<i64>, tensor<40x40xf32>) -> (tensor<i64>, tensor<40x40xf32>) {
  ^(%i: tensor<i64>, %a: tensor<40x40xf32>):
    (%t) = "tanh" (%a) : (tensor<40x40xf32>) -> tensor<40x40xf32>
    (%a2) = "matmul" (%t, %v) {transpose_x:false, transpose_y:false} : (tensor<40x40xf32>, tensor<40x24xf32>) -> tensor<40x24xf32>
    (%a3) = "matmul" (%a2, %v) {transpose_x:false, transpose_y:true} : (tensor<40x24xf32>, tensor<40x24xf32>) -> tensor<40x40xf32>
    (%i1) = "add" (%i, %one) : (tensor<i64>, tensor<i64>) -> tensor<i64>
    (%c1) = "less_than" (%i1, %n) : (tensor<i64>, tensor<i64>) -> tensor<i1>
    () = "yield" (%c1, %i1, %a3) : (tensor<i1>, tensor<i64>, tensor<40x40xf32>) -> ()
  }
  () = "fetch" (%h) {name:"h"} : (tensor<?x40xf32>) -> ()
  () = "fetch" (%z) {name:"z"} : (tensor<40x40xf32>) -> ()
}`

// packedLen is the bytes the cache holds for op(B) of k×n, as the
// allocator counts them.
func packedLen(k, n int) int64 {
	b := int64(kernels.PackedGemmBLen[float32](k, n)) * 4
	return (b + 63) &^ 63
}

// packFixture compiles packProgram with and without the cache, over one
// store on one allocator.
type packFixture struct {
	a             *memory.Allocator
	st            *exec.Store
	cached, plain *exec.Executable
	in            feeds
}

func newPackFixture(t *testing.T, limit int64, batch int) *packFixture {
	t.Helper()
	f := &packFixture{a: newAlloc(), st: exec.NewStore()}
	for name, shape := range map[string][]int{"w": {40, 70}, "v": {40, 24}} {
		x, err := tensor.FromF32(f.a, ramp(shape[0]*shape[1]), shape...)
		if err != nil {
			t.Fatal(err)
		}
		scale := x.F32()
		for i := range scale {
			scale[i] *= 0.05
		}
		f.st.Set(name, x)
	}
	t.Cleanup(f.st.Release)
	f.cached = compile(t, packProgram, exec.Options{Alloc: f.a, Store: f.st, PackCache: limit, Threads: 2})
	f.plain = compile(t, packProgram, exec.Options{Alloc: f.a, Store: f.st, Threads: 2})
	f.in = feeds{"x": f32(t, ramp(70*batch), batch, 70), "n": i64(t, 3)}
	t.Cleanup(func() { releaseFeeds(f.in) })
	return f
}

// same runs both programs and wants bitwise equal results.
func (f *packFixture) same(t *testing.T) {
	t.Helper()
	got, want := mustRun(t, f.cached, f.in), mustRun(t, f.plain, f.in)
	defer got.Release()
	defer want.Release()
	for name, w := range want {
		g := got[name].F32()
		for i, v := range w.F32() {
			if g[i] != v {
				t.Fatalf("%s[%d] = %v with the pack cache, %v without", name, i, g[i], v)
			}
		}
	}
}

// TestPackCache: the cache packs each parameter operand once (the loop's
// slot once for all trips), the results are bitwise those without it, and
// allocated memory is the store's plus the packed copies after every run,
// failed ones included, and the store's alone after ReleasePacked.
func TestPackCache(t *testing.T) {
	for _, batch := range []int{1, 8} {
		f := newPackFixture(t, 1<<30, batch)
		base := allocated(f.a)
		wantPacked := packedLen(70, 40) + packedLen(40, 24) + packedLen(24, 40)
		for range 3 {
			f.same(t)
			if got := f.cached.PackedBytes(); got != wantPacked {
				t.Fatalf("batch %d: %d bytes packed, want %d", batch, got, wantPacked)
			}
			if got := allocated(f.a); got != base+wantPacked {
				t.Fatalf("batch %d: allocated %d after a run, want the store's %d and the packed %d", batch, got, base, wantPacked)
			}
		}
		// A run that fails part way (cancelled when the loop starts,
		// after w is packed) leaves the store and the copies it made.
		ctx, cancel := context.WithCancel(context.Background())
		failing := compile(t, packProgram, exec.Options{Alloc: f.a, Store: f.st, PackCache: 1 << 30,
			Conditions: func(*ir.Op, bool) { cancel() }})
		for range 3 {
			if _, err := failing.Run(ctx, f.in); !errors.Is(err, context.Canceled) {
				t.Fatalf("err = %v, want a cancelled run", err)
			}
			if p := failing.PackedBytes(); p != packedLen(70, 40) || allocated(f.a) != base+wantPacked+p {
				t.Fatalf("allocated %d, packed %d after a failed run, want %d and %d", allocated(f.a), p, base+wantPacked+packedLen(70, 40), packedLen(70, 40))
			}
		}
		failing.ReleasePacked()
		f.cached.ReleasePacked()
		if got := allocated(f.a); got != base || f.cached.PackedBytes() != 0 {
			t.Fatalf("allocated %d, packed %d after ReleasePacked, want %d and 0", got, f.cached.PackedBytes(), base)
		}
		f.same(t) // packs again
	}
}

// TestPackCacheSeesWrites: a parameter replaced in the store, written by
// another program's update op, or written by Go code that touches it, is
// packed again before its next use; the results follow the new values.
func TestPackCacheSeesWrites(t *testing.T) {
	f := newPackFixture(t, 1<<30, 2)
	f.same(t)
	packed := f.cached.PackedBytes()
	base := allocated(f.a) - packed
	check := func(what string) {
		t.Helper()
		f.same(t)
		if got := allocated(f.a); got != base+packed || f.cached.PackedBytes() != packed {
			t.Fatalf("%s: allocated %d, packed %d; want %d and %d", what, got, f.cached.PackedBytes(), base+packed, packed)
		}
	}

	// Replaced: a new buffer (the old one is freed with the store's
	// reference; the stale copy goes at the next run).
	w, _ := tensor.FromF32(f.a, ramp(40*70), 40, 70)
	f.st.Set("w", w)
	check("replaced")

	// Written by an update op in another program sharing the store.
	sgd := compile(t, `{
  (%w) = "parameter" () {name:"w", shape:[40,70], dtype:f32} : () -> tensor<40x70xf32>
  (%g) = "full" () {shape:[40,70], value:0.5, dtype:f32} : () -> tensor<40x70xf32>
  (%lr) = "full" () {shape:[], value:0.25, dtype:f32} : () -> tensor<f32>
  () = "sgd_update" (%w, %g, %lr) : (tensor<40x70xf32>, tensor<40x70xf32>, tensor<f32>) -> ()
}`, exec.Options{Alloc: f.a, Store: f.st})
	mustRun(t, sgd, nil).Release()
	check("sgd_update")

	// Written by Go code, which touches it.
	w, _ = f.st.Get("w")
	w.F32()[5] = 42
	w.Storage().Touch()
	check("written and touched")
}

// TestPackCacheLimit: a copy that does not fit the cache's bound is not
// made, and the results are the same; a program that updates the store
// packs nothing.
func TestPackCacheLimit(t *testing.T) {
	f := newPackFixture(t, packedLen(70, 40)+packedLen(40, 24), 2)
	f.same(t)
	if got, want := f.cached.PackedBytes(), packedLen(70, 40)+packedLen(40, 24); got != want {
		t.Fatalf("%d bytes packed under a bound of %d, want %d (w and the first v only)", got, want, want)
	}
	g := newPackFixture(t, 100, 2)
	g.same(t)
	if got := g.cached.PackedBytes(); got != 0 {
		t.Fatalf("%d bytes packed under a bound of 100", got)
	}
	training := compile(t, `{
  (%w) = "parameter" () {name:"w", shape:[40,70], dtype:f32} : () -> tensor<40x70xf32>
  (%x) = "data" () {name:"x", shape:[-1,70], dtype:f32} : () -> tensor<?x70xf32>
  (%h) = "matmul" (%x, %w) {transpose_x:false, transpose_y:true} : (tensor<?x70xf32>, tensor<40x70xf32>) -> tensor<?x40xf32>
  (%g) = "full" () {shape:[40,70], value:0.5, dtype:f32} : () -> tensor<40x70xf32>
  (%lr) = "full" () {shape:[], value:0.25, dtype:f32} : () -> tensor<f32>
  () = "sgd_update" (%w, %g, %lr) : (tensor<40x70xf32>, tensor<40x70xf32>, tensor<f32>) -> ()
  () = "fetch" (%h) {name:"h"} : (tensor<?x40xf32>) -> ()
}`, exec.Options{Alloc: g.a, Store: g.st, PackCache: 1 << 30})
	mustRun(t, training, feeds{"x": g.in["x"]}).Release()
	if got := training.PackedBytes(); got != 0 {
		t.Fatalf("a program with sgd_update packed %d bytes", got)
	}
}

// TestPackCachePlan: the planner predicts the run that packs (the copies
// allocated at their ops and held past the end) and the runs that find
// them, to the byte; the leak check (on in x) does not take the copies for
// leaks.
func TestPackCachePlan(t *testing.T) {
	f := newPackFixture(t, 1<<30, 8)
	x := compile(t, packProgram, exec.Options{Alloc: f.a, Store: f.st, PackCache: 1 << 30, CheckLeaks: true, Threads: 2})
	var path []bool
	rec := compile(t, packProgram, exec.Options{Alloc: f.a, Store: f.st, Conditions: func(_ *ir.Op, v bool) { path = append(path, v) }})
	mustRun(t, rec, f.in).Release()
	opts := exec.PlanOptions{Path: path, Feeds: map[string]ir.Type{"x": ir.TensorOf(ir.F32, 8, 70)}}
	for run := range 3 {
		plan, err := x.Plan(opts)
		if err != nil {
			t.Fatal(err)
		}
		f.a.ResetPeak()
		before := allocated(f.a)
		res, err := x.Run(context.Background(), f.in)
		if err != nil {
			t.Fatal(err)
		}
		st := f.a.Stats()
		if plan.Base != before || plan.Peak != st.Allocated.Peak || plan.End != st.Allocated.Current || plan.Packed != x.PackedBytes() {
			t.Fatalf("run %d: plan base %d peak %d end %d packed %d; run %d, %d, %d, %d", run,
				plan.Base, plan.Peak, plan.End, plan.Packed, before, st.Allocated.Peak, st.Allocated.Current, x.PackedBytes())
		}
		res.Release()
	}
	// A replaced parameter: the plan frees the stale copy and makes a new one.
	w, _ := tensor.FromF32(f.a, ramp(40*70), 40, 70)
	f.st.Set("w", w)
	plan, err := x.Plan(opts)
	if err != nil {
		t.Fatal(err)
	}
	f.a.ResetPeak()
	res, err := x.Run(context.Background(), f.in)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Release()
	if st := f.a.Stats(); plan.Peak != st.Allocated.Peak || plan.End != st.Allocated.Current {
		t.Fatalf("after a replaced parameter: plan peak %d end %d, run %d %d", plan.Peak, plan.End, st.Allocated.Peak, st.Allocated.Current)
	}
}

// test_pack_panic (x, w): x copied, with a packer for w that panics (a
// bug in an op's Pack).
func init() {
	ops.Register(&ops.Def{Name: "test_pack_panic", Infer: sameAsFirst, NoGrad: true, Compute: func(*ir.Op) (ops.Compute, error) {
		return ops.Compute{
			Fn: func(_ *ops.Ctx, in, out []*tensor.Tensor) error {
				copy(out[0].Raw(), in[0].Raw())
				return nil
			},
			Pack: &ops.Pack{
				Operand: 1,
				Bytes:   func([][]int) int64 { return 256 },
				Fn:      func([][]int, *tensor.Tensor, []byte) { panic(injectedPanic) },
			},
		}, nil
	}})
}

// TestPackCachePackerPanics: a packer that panics fails the run with a
// KernelPanicError naming the op; the run's buffers are released, the
// copy it was filling stays in the cache, counted and never used, and the
// next run makes it again.
func TestPackCachePackerPanics(t *testing.T) {
	a := newAlloc()
	st := exec.NewStore()
	w, _ := tensor.FromF32(a, ramp(16), 16)
	st.Set("w", w)
	defer st.Release()
	x := compile(t, `{
  (%w) = "parameter" () {name:"w", shape:[16], dtype:f32} : () -> tensor<16xf32>
  (%x) = "data" () {name:"x", shape:[8], dtype:f32} : () -> tensor<8xf32>
  (%e) = "exp" (%x) : (tensor<8xf32>) -> tensor<8xf32>
  (%y) = "test_pack_panic" (%e, %w) : (tensor<8xf32>, tensor<16xf32>) -> tensor<8xf32>
  () = "fetch" (%y) {name:"y"} : (tensor<8xf32>) -> ()
}`, exec.Options{Alloc: a, Store: st, PackCache: 1 << 20})
	in := feeds{"x": f32(t, ramp(8), 8)}
	defer releaseFeeds(in)
	base := allocated(a)
	for range 3 {
		_, err := x.Run(context.Background(), in)
		var kp *exec.KernelPanicError
		if !errors.As(err, &kp) || kp.Op != "test_pack_panic" || kp.Value != injectedPanic {
			t.Fatalf("err = %v, want a KernelPanicError of test_pack_panic", err)
		}
		if p := x.PackedBytes(); p != 256 || allocated(a) != base+p {
			t.Fatalf("allocated %d, packed %d after the panic; want %d and 256", allocated(a), p, base+256)
		}
	}
	x.ReleasePacked()
	if got := allocated(a); got != base {
		t.Fatalf("allocated %d after ReleasePacked, want %d", got, base)
	}
}

// TestPackCachePlanWarm: planned before any run, a Warm plan is the
// second run's, which holds the copies the first run made from its start
// (higher base; the peak not lower), to the byte, while the plain plan is
// the first run's.
func TestPackCachePlanWarm(t *testing.T) {
	f := newPackFixture(t, 1<<30, 8)
	x := compile(t, packProgram, exec.Options{Alloc: f.a, Store: f.st, PackCache: 1 << 30, Threads: 2})
	var path []bool
	rec := compile(t, packProgram, exec.Options{Alloc: f.a, Store: f.st, Conditions: func(_ *ir.Op, v bool) { path = append(path, v) }})
	mustRun(t, rec, f.in).Release()
	opts := exec.PlanOptions{Path: path, Feeds: map[string]ir.Type{"x": ir.TensorOf(ir.F32, 8, 70)}}
	first, err := x.Plan(opts)
	if err != nil {
		t.Fatal(err)
	}
	opts.Warm = true
	warm, err := x.Plan(opts)
	if err != nil {
		t.Fatal(err)
	}
	if warm.Base <= first.Base || warm.Packed != first.Packed || warm.Peak < first.Peak {
		t.Fatalf("warm plan base %d packed %d peak %d; first run's %d, %d, %d", warm.Base, warm.Packed, warm.Peak, first.Base, first.Packed, first.Peak)
	}
	for run, want := range []*exec.Plan{first, warm, warm} {
		f.a.ResetPeak()
		before := allocated(f.a)
		res, err := x.Run(context.Background(), f.in)
		if err != nil {
			t.Fatal(err)
		}
		st := f.a.Stats()
		if want.Base != before || want.Peak != st.Allocated.Peak || want.End != st.Allocated.Current {
			t.Fatalf("run %d: plan base %d peak %d end %d; run %d, %d, %d", run, want.Base, want.Peak, want.End, before, st.Allocated.Peak, st.Allocated.Current)
		}
		res.Release()
	}
}
