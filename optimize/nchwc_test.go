package optimize_test

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"testing"

	"github.com/gopir/gopir/exec"
	"github.com/gopir/gopir/ir"
	"github.com/gopir/gopir/memory"
	"github.com/gopir/gopir/models"
	"github.com/gopir/gopir/ops"
	"github.com/gopir/gopir/optimize"
	"github.com/gopir/gopir/tensor"
	"github.com/gopir/gopir/train"
)

// opCounts counts p's ops by name.
func opCounts(p *ir.Program) map[string]int {
	n := map[string]int{}
	p.Walk(func(op *ir.Op) bool {
		n[op.Name()]++
		return true
	})
	return n
}

// nchwcSummary is what the nchwc pass left in p: blocked convolutions,
// reorders in and out.
func nchwcSummary(p *ir.Program) [3]int {
	n := opCounts(p)
	return [3]int{n["conv2d_nchwc"], n["reorder_nchwc"], n["reorder_nchw"]}
}

// Without vector kernels for the blocked convolution the pass changes
// nothing; forced, it blocks a chain of two convolutions with one reorder
// at each end, and leaves a convolution alone between two reorders NCHW.
func TestNCHWcChoosesParts(t *testing.T) {
	conv := ir.A("paddings", []int{1, 1})
	build := func(convs int, c int) *ir.Program {
		b := ir.NewBuilder(ir.NewProgram())
		y := ops.Data(b, "x", ir.F32, -1, c, 8, 8)
		for i := range convs {
			w := ops.Data(b, fmt.Sprintf("w%d", i), ir.F32, 32, y.Type().Dims[1], 3, 3)
			y = ops.Relu(b, b.Op1("conv2d", conv, y, w))
		}
		ops.Fetch(b, "y", y)
		return b.Program()
	}
	restore := optimize.ForceNCHWc(0)
	if _, n, err := optimize.NCHWc(build(2, 32)); err != nil || n != 0 {
		t.Fatalf("without vector kernels: %d ops replaced, %v; want none", n, err)
	}
	restore()
	for _, c := range []struct {
		b, convs, channels int
		want               [3]int
		replaced           int
	}{
		{16, 1, 32, [3]int{0, 0, 0}, 0}, // alone: stays NCHW
		{16, 2, 32, [3]int{2, 1, 1}, 4},
		{16, 2, 3, [3]int{2, 0, 1}, 4}, // the first layer reads NCHW
		{16, 3, 16, [3]int{3, 1, 1}, 6},
		{16, 2, 24, [3]int{2, 0, 1}, 4}, // 24 channels: not whole blocks of 16
		{8, 2, 24, [3]int{2, 1, 1}, 4},  // whole blocks of 8
		{8, 3, 16, [3]int{3, 1, 1}, 6},
	} {
		restore := optimize.ForceNCHWc(c.b)
		q, n, err := optimize.NCHWc(build(c.convs, c.channels))
		restore()
		if err != nil {
			t.Fatal(err)
		}
		if err := ir.Verify(q); err != nil {
			t.Fatal(err)
		}
		if got := nchwcSummary(q); got != c.want || n != c.replaced {
			t.Errorf("block %d, %d convs of %d channels: %d replaced, [convs, reorders in, out] %v; want %d, %v\n%s", c.b, c.convs, c.channels, n, got, c.replaced, c.want, q)
		}
	}
}

// nchwcModels are the models the blocked layout is checked on, with what
// the pass leaves in each: blocked convolutions, reorders in and out.
var nchwcModels = []struct {
	name string
	want [3]int
}{
	{"cnn", [3]int{0, 0, 0}}, // both convolutions carry their pool: the blocked kernel has none
	{"resnet18ish", [3]int{20, 0, 1}},
}

// The exported models optimized with the blocked layout, with either
// block, give what they give without it within 1e-5 (the blocked
// convolution sums in another order), at batches 1 and 3, with 1 and 2
// threads.
func TestNCHWcModels(t *testing.T) {
	without := slices.DeleteFunc(optimize.PassNames(), func(n string) bool { return n == "nchwc" })
	for _, blk := range []int{16, 8} {
		for _, mm := range nchwcModels {
			testNCHWcModel(t, blk, mm.name, mm.want, without)
		}
	}
}

// testNCHWcModel is one model of TestNCHWcModels with block blk.
func testNCHWcModel(t *testing.T, blk int, name string, summary [3]int, without []string) {
	defer optimize.ForceNCHWc(blk)()
	t.Run(fmt.Sprintf("%s/block=%d", name, blk), func(t *testing.T) {
		m := loadModel(t, name)
		for _, threads := range []int{1, 2} {
			plain, _, err := optimize.Compile(m.prog, m.store, exec.Options{Alloc: m.alloc, Threads: threads}, without...)
			if err != nil {
				t.Fatal(err)
			}
			blocked, res, err := optimize.Compile(m.prog, m.store, exec.Options{Alloc: m.alloc, Threads: threads})
			if err != nil {
				t.Fatal(err)
			}
			if got := nchwcSummary(res.Program); got != summary {
				t.Errorf("[convs, reorders in, out] %v, want %v (%s)", got, summary, res.Summary())
			}
			for _, n := range []int{1, 3} {
				feeds := map[string]*tensor.Tensor{"x": rebatch(t, m.cases[0].inputs["x"], n)}
				want, got := run(t, plain, feeds), run(t, blocked, feeds)
				for _, o := range slices.Sorted(maps.Keys(want)) {
					if err := closeTo(got[o], want[o], 1e-5); err != nil {
						t.Errorf("threads %d batch %d: %s blocked vs NCHW: %v", threads, n, o, err)
					}
				}
				want.Release()
				got.Release()
				releaseAll(feeds)
			}
			plain.Store().Release()
			blocked.Store().Release()
		}
	})
}

// detImageSize is the side of the images the deployed detector is checked
// on: small, for the blocked reference kernels' sake, and a multiple of
// its stride 32.
const detImageSize = 64

// deployedDetector is ppyoloe_s's inference program with its folded
// parameters in a store on a, and one image.
func deployedDetector(t *testing.T, a *memory.Allocator) (*ir.Program, *exec.Store, *tensor.Tensor) {
	t.Helper()
	cfg := train.Config{Model: "ppyoloe_s", Batch: 1, ImageSize: detImageSize}
	task, err := train.LoadTask(cfg)
	if err != nil {
		t.Fatal(err)
	}
	params, err := train.InitialParameters(cfg, a)
	if err != nil {
		t.Fatal(err)
	}
	folded, err := task.(models.Deployable).Reparameterize(a, params)
	for _, p := range params {
		p.Release()
	}
	if err != nil {
		t.Fatal(err)
	}
	store := exec.NewStore()
	for n, p := range folded {
		store.Set(n, p)
	}
	prog, err := train.BuildInference(cfg, true)
	if err != nil {
		t.Fatal(err)
	}
	feeds, err := task.TrainFeeds(a, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	img := feeds.Tensors["image"]
	img.Retain()
	feeds.Release()
	return prog, store, img
}

// The deployed detector with the blocked layout, in either block, gives
// its NCHW results within 1e-5, its reorders are the golden number, a repeated run keeps
// the allocated bytes at the parameters' (some runs cancelled part way)
// and a run after the first makes no Go heap allocation.
func TestNCHWcDeployedDetector(t *testing.T) {
	if testing.Short() {
		t.Skip("the blocked reference kernels take seconds on the detector")
	}
	for _, c := range []struct {
		b    int
		want [3]int
	}{{16, [3]int{73, 2, 7}}, {8, [3]int{77, 0, 6}}} { // 8: its 24- and 40-channel layers too
		t.Run(fmt.Sprintf("block=%d", c.b), func(t *testing.T) { testNCHWcDeployedDetector(t, c.b, c.want) })
	}
}

// testNCHWcDeployedDetector is TestNCHWcDeployedDetector with block b,
// summary its [convs, reorders in, out].
func testNCHWcDeployedDetector(t *testing.T, b int, summary [3]int) {
	defer optimize.ForceNCHWc(b)()
	a := memory.New(memory.Options{})
	prog, store, img := deployedDetector(t, a)
	defer img.Release()
	defer store.Release()
	without := slices.DeleteFunc(optimize.PassNames(), func(n string) bool { return n == "nchwc" })
	plain, _, err := optimize.Compile(prog, store, exec.Options{Alloc: a, Threads: 2}, without...)
	if err != nil {
		t.Fatal(err)
	}
	defer plain.Store().Release()
	cancelAt, seen := -1, 0
	var cancel context.CancelFunc
	log := func(exec.MemoryRecord) {
		if seen++; seen == cancelAt {
			cancel()
		}
	}
	blocked, res, err := optimize.Compile(prog, store, exec.Options{Alloc: a, Threads: 2, MemoryLog: log, CheckLeaks: true})
	if err != nil {
		t.Fatal(err)
	}
	if got := nchwcSummary(res.Program); got != summary {
		t.Errorf("[convs, reorders in, out] %v, want %v", got, summary)
	}
	feeds := map[string]*tensor.Tensor{"image": img}
	want := run(t, plain, feeds)
	defer want.Release()
	base := a.Stats().Allocated.Current
	for i := range 4 {
		var ctx context.Context
		ctx, cancel = context.WithCancel(context.Background())
		cancelAt, seen = -1, 0
		if i == 2 {
			cancelAt = 40
		}
		got, err := blocked.Run(ctx, feeds)
		cancel()
		switch {
		case cancelAt > 0 && !errors.Is(err, context.Canceled):
			t.Fatalf("run %d: cancelled, got %v", i, err)
		case cancelAt < 0 && err != nil:
			t.Fatalf("run %d: %v", i, err)
		case err == nil:
			for _, o := range slices.Sorted(maps.Keys(want)) {
				if err := closeTo(got[o], want[o], 1e-5); err != nil {
					t.Errorf("run %d: %s blocked vs NCHW: %v", i, o, err)
				}
			}
			got.Release()
		}
		if got := a.Stats().Allocated.Current; got != base {
			t.Fatalf("run %d: %d bytes allocated, want %d", i, got, base)
		}
	}
	blocked.Store().Release()
	// Without the memory log and the leak check, which allocate, as
	// bench's inference runs it.
	bare, _, err := optimize.Compile(prog, store, exec.Options{Alloc: a, Threads: 2, PackCache: 64 << 20})
	if err != nil {
		t.Fatal(err)
	}
	defer bare.Store().Release()
	defer bare.ReleasePacked()
	out := exec.Results{}
	ctx := context.Background()
	runOnce := func() {
		if err := bare.RunInto(ctx, feeds, out); err != nil {
			t.Fatal(err)
		}
		out.Release()
	}
	runOnce()
	runOnce()
	if raceEnabled {
		return
	}
	if allocs := testing.AllocsPerRun(3, runOnce); allocs != 0 {
		t.Errorf("a repeated run makes %v Go heap allocations, want 0", allocs)
	}
}

// The planner predicts the blocked programs' peaks to the byte: the
// reorders, the blocked ops' results and conv2d_nchwc's workspace (its
// weights packed there when there is no packed copy) are sized from
// their Infer and Work, the packed copies from Pack.Bytes. With the pack
// cache it is measured on a run after the one that packs: on that first
// run the plan is above the measured peak, with or without the pass.
func TestNCHWcPlannerExact(t *testing.T) {
	defer optimize.ForceNCHWc(16)()
	m := loadModel(t, "resnet18ish")
	for _, packCache := range []int64{0, 64 << 20} {
		for _, batch := range []int{1, 2} {
			a := memory.New(memory.Options{})
			user := copyStore(t, m.store, a)
			x, res, err := optimize.Compile(m.prog, user, exec.Options{Alloc: a, Threads: 2, PackCache: packCache})
			user.Release()
			if err != nil {
				t.Fatal(err)
			}
			if nchwcSummary(res.Program)[0] == 0 {
				t.Fatalf("nothing blocked: %s", res.Summary())
			}
			feeds := map[string]*tensor.Tensor{"x": rebatch(t, m.cases[0].inputs["x"], batch)}
			if packCache > 0 { // the packed copies made, as the plan counts them
				warm := run(t, x, feeds)
				warm.Release()
			}
			checkPlanExact(t, fmt.Sprintf("pack cache %d batch %d", packCache, batch), x, a, feeds)
			releaseAll(feeds)
			x.ReleasePacked()
			x.Store().Release()
		}
	}
}
