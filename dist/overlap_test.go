package dist_test

import (
	"testing"

	"github.com/gopir/gopir/dist"
	"github.com/gopir/gopir/ir"
	"github.com/gopir/gopir/ops"
)

// TestOverlapUpdates checks where OverlapUpdates puts each update (after
// its own bucket's wait, before the waits it does not need) and that the
// reordered program trains to the same bits as the program it came from.
func TestOverlapUpdates(t *testing.T) {
	prog, m, st, buckets, _ := gatedNet(t, -1) // a bucket per gradient
	if len(buckets) < 3 {
		t.Fatalf("%d buckets; the test needs several", len(buckets))
	}
	top := prog.Body()
	before := append([]*ir.Op(nil), top.Ops()...)
	if err := dist.OverlapUpdates(top); err != nil {
		t.Fatal(err)
	}
	if err := ir.Verify(prog); err != nil {
		t.Fatalf("the reordered program: %v", err)
	}
	if len(top.Ops()) != len(before) {
		t.Fatalf("%d ops after, %d before", len(top.Ops()), len(before))
	}
	// The bucket each reduced gradient comes from, by its wait.
	bucketOf := map[*ir.Op]int{}
	for k, bk := range buckets {
		bucketOf[bk.Wait] = k
	}
	moved := false
	for _, op := range top.Ops() {
		if op.Name() != "adam_update" {
			continue
		}
		k := bucketOf[op.Operand(1).Def()] // adam_update(param, grad, m, v, lr, step)
		at := top.IndexOf(op)
		if w := top.IndexOf(buckets[k].Wait); w > at {
			t.Errorf("the update of bucket %d at %d comes before its wait at %d", k, at, w)
		}
		for j := k + 1; j < len(buckets); j++ {
			if w := top.IndexOf(buckets[j].Wait); w < at {
				t.Errorf("the update of bucket %d at %d waits for the later bucket %d (at %d)", k, at, j, w)
			}
		}
		if k < len(buckets)-1 {
			moved = true
		}
	}
	if !moved {
		t.Fatal("no update runs before the last wait")
	}
	// The optimizer's step count is incremented before any update reads it.
	inc := -1
	for i, op := range top.Ops() {
		switch op.Name() {
		case "increment":
			inc = i
		case "adam_update":
			if inc < 0 {
				t.Fatalf("adam_update at %d before the increment", i)
			}
		}
	}

	got, _ := trainGated(t, prog, m, st, 3, 12)
	plain, m2, st2, _, _ := gatedNet(t, -1)
	ref, _ := trainGated(t, plain, m2, st2, 3, 12)
	for _, name := range ref[0].Names() {
		a, _ := ref[0].Get(name)
		b, ok := got[0].Get(name)
		if !ok || string(a.Raw()) != string(b.Raw()) {
			t.Errorf("%s differs from the program in its first order", name)
		}
	}
	release(got)
	release(ref)
}

// TestOverlapUpdatesKeepsRandomOps leaves a program alone when a random
// op comes after the first wait: its numbers are keyed by its position.
func TestOverlapUpdatesKeepsRandomOps(t *testing.T) {
	b := ir.NewBuilder(ir.NewProgram())
	w := ops.Parameter(b, "w", ir.F32, 4)
	bucket := ops.AllReduceStart(b, ops.Neg(b, w))
	g := ops.AllReduceWait(b, bucket, []ir.Type{w.Type()}, true)[0]
	noise := ops.UniformRandom(b, ir.F32, 0, 1, 3, 4)
	ops.Fetch(b, "g", ops.Add(b, g, noise))
	ops.Fetch(b, "noise", ops.Neg(b, noise))
	prog, err := b.Finish()
	if err != nil {
		t.Fatal(err)
	}
	before := append([]*ir.Op(nil), prog.Body().Ops()...)
	if err := dist.OverlapUpdates(prog.Body()); err != nil {
		t.Fatal(err)
	}
	for i, op := range prog.Body().Ops() {
		if op != before[i] {
			t.Fatalf("op %d moved", i)
		}
	}
}
