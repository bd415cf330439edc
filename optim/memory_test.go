package optim_test

import (
	"cmp"
	"context"
	"math/rand/v2"
	"strconv"
	"testing"

	"github.com/gopir/gopir/autodiff"
	"github.com/gopir/gopir/exec"
	"github.com/gopir/gopir/ir"
	"github.com/gopir/gopir/memory"
	"github.com/gopir/gopir/ops"
	"github.com/gopir/gopir/optim"
	"github.com/gopir/gopir/tensor"
)

// Memory behaviour of training with control flow: a model with an "if"
// (whose branch follows the data) and a "while" (whose trip count follows
// the data), differentiated and updated with Adam after gradient clipping,
// trained for 1000 steps. Between steps exactly the store's buffers are
// allocated, the store's tensors are never replaced, the while's stacks
// are freed however long the loop ran, and the branch not taken costs
// nothing.

const (
	memBatch  = 4
	memIn     = 8
	memHidden = 16
	memWide   = 2048 // the branches' inner width: residuals of 4×2048 f32
)

// memConfig chooses the program and how the trainer is instrumented.
type memConfig struct {
	mode         memMode
	wideA, wideB int // inner widths of the branches (memWide if 0)
	histCap      int // allocator history
	log          func(exec.MemoryRecord)
}

// memMode selects the program: the real one with an "if", or one of its
// branches inlined, to measure what that branch alone needs.
type memMode int

const (
	memIf memMode = iota
	memOnlyA
	memOnlyB
)

var memParams = []struct {
	name  string
	shape []int
}{
	{"enc.w", []int{memIn, memHidden}}, {"enc.b", []int{memHidden}},
	{"a.g", []int{memHidden}}, {"b.g", []int{memHidden}},
	{"rnn.w", []int{memHidden, memHidden}}, {"head.w", []int{memHidden, 1}},
}

// memModel:
//
//	h0 = tanh(x·enc.w + enc.b)
//	hb = if Σx > 0 { (relu(h0·PA)·QA) * a.g } else { tanh(h0·PB)·QB + b.g }
//	h = hb; repeat n times: h = tanh(h·rnn.w + hb)
//	loss = Σ (h·head.w)² / batch
//
// PA (16×wideA), QA (wideA×16), PB and QB are feeds, so each branch keeps
// a batch×wide residual for its backward.
func memModel(b *ir.Builder, mode memMode, wideA, wideB int) (*ir.Value, []*ir.Value) {
	x := ops.Data(b, "x", ir.F32, memBatch, memIn)
	n := ops.Data(b, "n", ir.I64)
	pa := ops.Data(b, "PA", ir.F32, memHidden, wideA)
	qa := ops.Data(b, "QA", ir.F32, wideA, memHidden)
	pb := ops.Data(b, "PB", ir.F32, memHidden, wideB)
	qb := ops.Data(b, "QB", ir.F32, wideB, memHidden)
	var params []*ir.Value
	for _, sp := range memParams {
		params = append(params, ops.Parameter(b, sp.name, ir.F32, sp.shape...))
	}
	encW, encB, ag, bg, rnnW, headW := params[0], params[1], params[2], params[3], params[4], params[5]
	h0 := ops.Tanh(b, ops.Add(b, ops.Matmul(b, x, encW, false, false), encB))
	branchA := func(b *ir.Builder) []*ir.Value {
		r := ops.Relu(b, ops.Matmul(b, h0, pa, false, false))
		return []*ir.Value{ops.Multiply(b, ops.Matmul(b, r, qa, false, false), ag)}
	}
	branchB := func(b *ir.Builder) []*ir.Value {
		r := ops.Tanh(b, ops.Matmul(b, h0, pb, false, false))
		return []*ir.Value{ops.Add(b, ops.Matmul(b, r, qb, false, false), bg)}
	}
	var hb *ir.Value
	switch mode {
	case memIf:
		c := ops.GreaterThan(b, ops.ReduceSum(b, x, nil, false), ops.Full(b, ir.F32, 0))
		hb = b.If(c, branchA, branchB)[0]
	case memOnlyA:
		hb = branchA(b)[0]
	case memOnlyB:
		hb = branchB(b)[0]
	}
	i0 := ops.Full(b, ir.I64, 0)
	one := ops.Full(b, ir.I64, 1)
	res := b.While(ops.LessThan(b, i0, n), []*ir.Value{i0, hb}, func(b *ir.Builder, args []*ir.Value) (*ir.Value, []*ir.Value) {
		i1 := ops.Add(b, args[0], one)
		h := ops.Tanh(b, ops.Add(b, ops.Matmul(b, args[1], rnnW, false, false), hb))
		return ops.LessThan(b, i1, n), []*ir.Value{i1, h}
	})
	out := ops.Matmul(b, res[1], headW, false, false)
	loss := ops.Multiply(b, ops.ReduceSum(b, ops.Multiply(b, out, out), nil, false), ops.Full(b, ir.F32, 1.0/memBatch))
	return loss, params
}

// memTrainer is a compiled training program with its store.
type memTrainer struct {
	prog  *ir.Program
	alloc *memory.Allocator
	store *exec.Store
	exe   *exec.Executable
	lr    *tensor.Tensor
	state optim.State
}

func newMemTrainer(t *testing.T, cfg memConfig) *memTrainer {
	t.Helper()
	cfg.wideA, cfg.wideB = cmp.Or(cfg.wideA, memWide), cmp.Or(cfg.wideB, memWide)
	b := ir.NewBuilder(ir.NewProgram())
	loss, params := memModel(b, cfg.mode, cfg.wideA, cfg.wideB)
	ops.Fetch(b, "loss", loss)
	grads, err := autodiff.Backward(b, loss, params)
	if err != nil {
		t.Fatal(err)
	}
	grads, norm := optim.ClipByGlobalNorm(b, grads, 1.0)
	ops.Fetch(b, "norm", norm)
	state, err := optim.NewAdam(1e-3).Apply(b, params, grads)
	if err != nil {
		t.Fatal(err)
	}
	prog, err := b.Finish()
	if err != nil {
		t.Fatal(err)
	}
	tr := &memTrainer{prog: prog, alloc: memory.New(memory.Options{HistoryCap: cfg.histCap}), store: exec.NewStore(), state: state}
	r := rand.New(rand.NewPCG(42, 0))
	for _, sp := range memParams {
		x, err := tensor.New(tr.alloc, tensor.F32, sp.shape...)
		if err != nil {
			t.Fatal(err)
		}
		for i := range x.F32() {
			x.F32()[i] = float32(r.Float64()-0.5) * 0.5
		}
		tr.store.Set(sp.name, x)
	}
	if err := state.Create(tr.alloc, tr.store.Set); err != nil {
		t.Fatal(err)
	}
	tr.exe, err = exec.Compile(prog, exec.Options{Alloc: tr.alloc, Store: tr.store, CheckLeaks: true, MemoryLog: cfg.log})
	if err != nil {
		t.Fatal(err)
	}
	tr.lr, _ = tr.store.Get(state.LR)
	return tr
}

// memFeeds owns the feeds of the memory test, on their own allocator.
type memFeeds struct {
	host *memory.Allocator
	m    map[string]*tensor.Tensor
}

func newMemFeeds(t *testing.T, wideA, wideB int) *memFeeds {
	wideA, wideB = cmp.Or(wideA, memWide), cmp.Or(wideB, memWide)
	f := &memFeeds{host: memory.New(memory.Options{}), m: map[string]*tensor.Tensor{}}
	r := rand.New(rand.NewPCG(7, 7))
	for _, in := range []struct {
		name  string
		shape []int
	}{{"x", []int{memBatch, memIn}}, {"PA", []int{memHidden, wideA}}, {"QA", []int{wideA, memHidden}},
		{"PB", []int{memHidden, wideB}}, {"QB", []int{wideB, memHidden}}} {
		name, shape := in.name, in.shape
		x, err := tensor.New(f.host, tensor.F32, shape...)
		if err != nil {
			t.Fatal(err)
		}
		for i := range x.F32() {
			x.F32()[i] = float32(r.Float64()-0.5) * 0.3
		}
		f.m[name] = x
	}
	n, err := tensor.Scalar(f.host, tensor.I64, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.m["n"] = n
	return f
}

// set makes x positive (branch A) or negative (branch B) and sets n.
func (f *memFeeds) set(branchA bool, trips int64) {
	for i, v := range f.m["x"].F32() {
		if v < 0 {
			v = -v
		}
		if !branchA {
			v = -v
		}
		f.m["x"].F32()[i] = v
	}
	f.m["n"].I64()[0] = trips
}

func (f *memFeeds) release() {
	for _, x := range f.m {
		x.Release()
	}
}

// step runs one training step and returns the loss and the step's peak
// allocated bytes.
func (tr *memTrainer) step(t *testing.T, f *memFeeds, k int) (loss float64, peak int64) {
	t.Helper()
	if err := optim.SetScalar(tr.lr, 1e-3); err != nil {
		t.Fatal(err)
	}
	tr.alloc.ResetPeak()
	res, err := tr.exe.Run(context.Background(), f.m)
	if err != nil {
		t.Fatalf("step %d: %v", k, err)
	}
	loss = res["loss"].Float64At(0)
	res.Release()
	return loss, tr.alloc.Stats().Allocated.Peak
}

// storeBlocks returns the IDs of the store's buffers and their bytes as
// the allocator accounts them (rounded to its alignment).
func (tr *memTrainer) storeBlocks(t *testing.T) (map[uint64]bool, int64) {
	t.Helper()
	ids := map[uint64]bool{}
	for _, n := range tr.store.Names() {
		x, _ := tr.store.Get(n)
		ids[x.Storage().Block().ID()] = true
	}
	var rounded int64
	for _, b := range tr.alloc.Live() {
		if ids[b.ID] {
			rounded += b.Rounded
		}
	}
	return ids, rounded
}

// memTrips is the trip count of step k: small and varying, with a long
// loop every 100 steps.
func memTrips(k int) int64 {
	if k%100 == 50 {
		return 300
	}
	return int64(k*7%11) % 6
}

func TestTrainingMemoryWithControlFlow(t *testing.T) {
	steps := 1000
	if testing.Short() {
		steps = 200
	}
	// pushed tracks, per step, the most bytes allocated right after a
	// stack_push: the forward loop's stacks at their fullest.
	var pushed int64
	tr := newMemTrainer(t, memConfig{histCap: 1 << 15, log: func(r exec.MemoryRecord) {
		if r.Op == "stack_push" {
			pushed = max(pushed, r.Allocated)
		}
	}})
	defer tr.store.Release()
	feeds := newMemFeeds(t, 0, 0)
	defer feeds.release()

	type slot struct {
		t     *tensor.Tensor
		block *memory.Block
		data  *byte
	}
	before := map[string]slot{}
	for _, n := range tr.store.Names() {
		x, _ := tr.store.Get(n)
		before[n] = slot{x, x.Storage().Block(), &x.Raw()[0]}
	}
	wantNames := len(memParams)*3 + 2 // parameters, m and v, lr and step
	if len(before) != wantNames {
		t.Fatalf("store holds %d values %v, want %d", len(before), tr.store.Names(), wantNames)
	}
	storeIDs, storeBytes := tr.storeBlocks(t)
	if got := tr.alloc.Stats().Allocated.Current; got != storeBytes {
		t.Fatalf("before training: allocated %d, store %d", got, storeBytes)
	}
	if logical := tr.store.Bytes(); logical != tr.state.Bytes()+memParamBytes() || logical > storeBytes {
		t.Fatalf("store bytes %d, state %d + parameters %d, allocated %d", logical, tr.state.Bytes(), memParamBytes(), storeBytes)
	}
	placeholders := memPlaceholders(tr.prog)
	if len(placeholders) == 0 {
		t.Fatal("the forward if has no residual placeholders: the test does not test what it should")
	}

	var lastSeq uint64
	var stackShort, stackLong int64
	first, last := 0.0, 0.0
	for k := range steps {
		branchA := k%2 == 0
		trips := memTrips(k)
		feeds.set(branchA, trips)
		pushed = 0
		loss, _ := tr.step(t, feeds, k)
		if k == 0 {
			first = loss
		}
		last = loss
		// Exactly the store's buffers are left, and they are the same ones.
		if got := tr.alloc.Stats().Allocated.Current; got != storeBytes {
			t.Fatalf("step %d (branch A %v, %d trips): allocated %d bytes after the step, the store holds %d", k, branchA, trips, got, storeBytes)
		}
		for _, b := range tr.alloc.Live() {
			if !storeIDs[b.ID] {
				t.Fatalf("step %d: buffer %d (%d bytes, %s %s) outlived the step", k, b.ID, b.Size, b.Tag.Op, b.Tag.Value)
			}
		}
		switch {
		case trips == 1 && branchA && stackShort == 0:
			stackShort = pushed
		case trips == 300:
			stackLong = max(stackLong, pushed)
		}
		// The allocator's history of this step: no placeholder made a buffer.
		if k%10 < 2 || trips == 300 {
			ev := tr.alloc.History()
			if len(ev) > 0 && lastSeq > 0 && ev[0].Seq > lastSeq+1 {
				t.Fatalf("step %d: history dropped events; raise HistoryCap", k)
			}
			for _, e := range ev {
				if e.Seq > lastSeq && e.Kind == "alloc" && e.Size > 0 && placeholders[e.Tag.Value] {
					t.Fatalf("step %d: placeholder %s (%s) allocated %d bytes", k, e.Tag.Value, e.Tag.Op, e.Size)
				}
			}
		}
		if ev := tr.alloc.History(); len(ev) > 0 {
			lastSeq = ev[len(ev)-1].Seq
		}
	}
	if !(last < first) {
		t.Errorf("loss went from %v to %v: training did not train", first, last)
	}
	// A 300-trip loop keeps at least one 4×16 f32 activation per trip on
	// its stack, and all of it was freed (checked above).
	if stackShort == 0 || stackLong-stackShort < 299*memBatch*memHidden*4 {
		t.Errorf("stacks at their fullest: %d bytes allocated with 300 trips, %d with 1: the stack did not hold the residuals", stackLong, stackShort)
	}
	for n, s := range before {
		x, _ := tr.store.Get(n)
		if x != s.t || x.Storage().Block() != s.block || &x.Raw()[0] != s.data {
			t.Errorf("store value %q was reallocated during training", n)
		}
	}
	t.Logf("%d steps: loss %.5g -> %.5g; store %d bytes (%d logical); allocated with full stacks %d (1 trip) / %d (300 trips)",
		steps, first, last, storeBytes, tr.store.Bytes(), stackShort, stackLong)
}

func memParamBytes() int64 {
	var n int64
	for _, sp := range memParams {
		k := int64(4)
		for _, d := range sp.shape {
			k *= int64(d)
		}
		n += k
	}
	return n
}

// memPlaceholders returns the canonical names (as exec numbers values in
// memory tags) of the zero-size placeholders that stand in, in one branch
// of an if, for the residuals of the other branch.
func memPlaceholders(p *ir.Program) map[string]bool {
	names := map[*ir.Value]string{}
	n := 0
	var number func(b *ir.Block)
	number = func(b *ir.Block) {
		for _, op := range b.Ops() {
			for _, r := range op.Results() {
				names[r] = "%" + strconv.Itoa(n)
				n++
			}
			for _, r := range op.Regions() {
				for _, a := range r.Block().Args() {
					names[a] = "%" + strconv.Itoa(n)
					n++
				}
				number(r.Block())
			}
		}
	}
	number(p.Body())
	out := map[string]bool{}
	ir.WalkBlock(p.Body(), func(op *ir.Op) bool {
		if op.Name() != "if" {
			return true
		}
		for k := range 2 {
			y := op.Region(k).Block().Terminator()
			for _, v := range y.Operands() {
				if d := v.Def(); d != nil && d.Name() == "full" && v.Type().NumElements() == 0 {
					out[names[v]] = true
				}
			}
		}
		return true
	})
	return out
}

// TestBranchNotTakenCostsNothing checks that the residuals of the branch
// not taken cost nothing: the peak of a training step that takes one
// branch does not change when the other branch's residuals grow eightfold
// (from 32 KiB to 256 KiB).
func TestBranchNotTakenCostsNothing(t *testing.T) {
	peakOf := func(cfg memConfig, branchA bool) int64 {
		tr := newMemTrainer(t, cfg)
		defer tr.store.Release()
		feeds := newMemFeeds(t, cfg.wideA, cfg.wideB)
		defer feeds.release()
		feeds.set(branchA, 3)
		_, base := tr.storeBlocks(t)
		var first int64
		for k := range 3 { // the same step thrice: the peak is stable
			_, peak := tr.step(t, feeds, k)
			if k == 0 {
				first = peak - base
			} else if peak-base != first {
				t.Fatalf("peak above the store changed from %d to %d between identical steps", first, peak-base)
			}
		}
		return first
	}
	for _, c := range []struct {
		name    string
		branchA bool
		small   memConfig
		big     memConfig
		alone   memMode
	}{
		{"A taken", true, memConfig{wideB: memWide}, memConfig{wideB: 8 * memWide}, memOnlyA},
		{"B taken", false, memConfig{wideA: memWide}, memConfig{wideA: 8 * memWide}, memOnlyB},
	} {
		small, big := peakOf(c.small, c.branchA), peakOf(c.big, c.branchA)
		if small != big {
			t.Errorf("%s: step peak %d bytes above the store, %d when the other branch's residuals are 8× larger", c.name, small, big)
		}
		// For the record: the same step with the taken branch inlined.
		// Through the if, the taken branch's residual stays allocated
		// until the backward if ends (a value captured by a region lives
		// until the region's op finishes), so the peak may be higher by
		// that residual, never by the other branch's.
		alone := peakOf(memConfig{mode: c.alone}, c.branchA)
		t.Logf("%s: step peak above the store %d bytes (other branch 8× larger: %d); branch inlined: %d", c.name, small, big, alone)
	}
}
