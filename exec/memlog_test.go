package exec_test

import (
	"bytes"
	"strings"
	"testing"

	"github.com/gopir/gopir/exec"
	"github.com/gopir/gopir/memory"
)

// TestMemoryLogFollowsEveryInstruction checks the per-op memory log: one
// record per executed instruction, nested ones included, with the
// allocator's numbers right after the op.
func TestMemoryLogFollowsEveryInstruction(t *testing.T) {
	var recs []exec.MemoryRecord
	var trace bytes.Buffer
	a := newAlloc()
	x := compile(t, detectorLoss, exec.Options{Alloc: a, MemoryLog: func(r exec.MemoryRecord) { recs = append(recs, r) }, Trace: &trace})
	in := feeds{"x": f32(t, ramp(64*64), 64, 64), "num_gts": i64(t, 1)}
	defer releaseFeeds(in)
	res := mustRun(t, x, in)
	res.Release()

	var names []string
	for _, r := range recs {
		names = append(names, r.Op)
	}
	want := "data data full greater_than relu multiply tanh reduce_sum yield if fetch"
	if got := strings.Join(names, " "); got != want {
		t.Fatalf("logged ops:\n%s\nwant:\n%s", got, want)
	}
	byOp := map[string]exec.MemoryRecord{}
	for _, r := range recs {
		byOp[r.Op] = r
	}
	// After relu one 64x64 f32 buffer is alive on top of the condition's
	// 64 bytes; after multiply, relu's input is dead again.
	if got := byOp["relu"].Allocated; got != 64*64*4+64 {
		t.Errorf("allocated after relu = %d, want %d", got, 64*64*4+64)
	}
	if got := byOp["multiply"].Allocated; got != 64*64*4+64 {
		t.Errorf("allocated after multiply = %d, want %d (relu's result released)", got, 64*64*4+64)
	}
	if byOp["relu"].Depth != 1 || byOp["if"].Depth != 0 {
		t.Errorf("depths: relu %d, if %d; want 1 and 0", byOp["relu"].Depth, byOp["if"].Depth)
	}
	if !strings.Contains(trace.String(), "relu") || strings.Count(trace.String(), "\n") != len(recs) {
		t.Errorf("trace has %d lines for %d records:\n%s", strings.Count(trace.String(), "\n"), len(recs), trace.String())
	}
}

// TestHistoryTagsAllocationsWithTheirOp checks that with history on, every
// allocation of a run is tagged with its op, value and position. Without
// donation every op allocates its result.
func TestHistoryTagsAllocationsWithTheirOp(t *testing.T) {
	a := memory.New(memory.Options{HistoryCap: 1000})
	x := compile(t, detectorLoss, exec.Options{Alloc: a, NoDonate: true})
	in := feeds{"x": f32(t, ramp(64*64), 64, 64), "num_gts": i64(t, 1)}
	defer releaseFeeds(in)
	for range 2 {
		res := mustRun(t, x, in)
		res.Release()
	}
	var allocs []string
	for _, e := range a.History() {
		if e.Kind == "alloc" && e.Tag.Step == 1 {
			allocs = append(allocs, e.Tag.Op+" "+e.Tag.Value+" "+e.Tag.Pos)
		}
	}
	want := []string{
		"full %2 TestHistoryTagsAllocationsWithTheirOp.pir:4:3",
		"greater_than %3 TestHistoryTagsAllocationsWithTheirOp.pir:5:3",
		"relu %5 TestHistoryTagsAllocationsWithTheirOp.pir:7:5",
		"multiply %6 TestHistoryTagsAllocationsWithTheirOp.pir:8:5",
		"tanh %7 TestHistoryTagsAllocationsWithTheirOp.pir:9:5",
		"reduce_sum %8 TestHistoryTagsAllocationsWithTheirOp.pir:10:5",
	}
	if strings.Join(allocs, "\n") != strings.Join(want, "\n") {
		t.Fatalf("tagged allocations of run 1:\n%s\nwant:\n%s", strings.Join(allocs, "\n"), strings.Join(want, "\n"))
	}
}

// TestInPlaceReuseIsRetagged checks in-place reuse as the history and the
// leak report see it: multiply writes into relu's dead result, so it
// allocates nothing, and while the buffer holds multiply's value it is
// tagged with multiply.
func TestInPlaceReuseIsRetagged(t *testing.T) {
	a := memory.New(memory.Options{HistoryCap: 1000})
	x := compile(t, `{
  (%x) = "data" () {name:"x", shape:[8,8], dtype:f32} : () -> tensor<8x8xf32>
  (%a) = "relu" (%x) : (tensor<8x8xf32>) -> tensor<8x8xf32>
  (%b) = "multiply" (%a, %x) : (tensor<8x8xf32>, tensor<8x8xf32>) -> tensor<8x8xf32>
  () = "fetch" (%b) {name:"b"} : (tensor<8x8xf32>) -> ()
}`, exec.Options{Alloc: a})
	in := feeds{"x": f32(t, ramp(64), 8, 8)}
	defer releaseFeeds(in)
	res := mustRun(t, x, in)
	var allocs []string
	for _, e := range a.History() {
		if e.Kind == "alloc" {
			allocs = append(allocs, e.Tag.Op+" "+e.Tag.Value)
		}
	}
	if got := strings.Join(allocs, ", "); got != "relu %1" {
		t.Fatalf("allocations: %s; want relu's only (multiply reuses it)", got)
	}
	live := a.Live()
	if len(live) != 1 || live[0].Tag.Op != "multiply" || live[0].Tag.Value != "%2" || live[0].Tag.Pos != "TestInPlaceReuseIsRetagged.pir:4:3" {
		t.Fatalf("live buffers %+v; want one, tagged multiply %%2", live)
	}
	if got := res["b"].F32()[5]; got != 2*2 {
		t.Fatalf("b[5] = %v, want 4", got)
	}
	res.Release()
	if n := allocated(a); n != 0 {
		t.Fatalf("%d bytes left", n)
	}
}
