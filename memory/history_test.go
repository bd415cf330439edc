package memory_test

import (
	"bytes"
	"encoding/json"
	"slices"
	"testing"

	"github.com/gopir/gopir/memory"
)

func TestHistoryRingAndJSON(t *testing.T) {
	a := memory.New(memory.Options{HistoryCap: 4})
	var bs []*memory.Block
	for i := range 3 {
		a.SetTag(memory.Tag{Op: "relu", Value: "%" + string(rune('0'+i)), Pos: "x.pir:1:2", Step: 7})
		b, err := a.Alloc(100)
		if err != nil {
			t.Fatal(err)
		}
		bs = append(bs, b)
	}
	for _, b := range slices.Backward(bs) {
		a.Free(b)
	}
	h := a.History()
	if len(h) != 4 {
		t.Fatalf("%d events, want 4", len(h))
	}
	var kinds []string
	var seqs []uint64
	for _, e := range h {
		kinds = append(kinds, e.Kind)
		seqs = append(seqs, e.Seq)
	}
	if !slices.Equal(kinds, []string{"alloc", "free", "free", "free"}) || !slices.Equal(seqs, []uint64{3, 4, 5, 6}) {
		t.Fatalf("kinds %v seqs %v", kinds, seqs)
	}
	last := h[3]
	if last.Block != 1 || last.Size != 128 || last.Requested != 100 || last.Allocated != 0 || last.Tag.Value != "%0" || last.Tag.Step != 7 {
		t.Fatalf("last event %+v", last)
	}

	var buf bytes.Buffer
	if err := a.WriteHistoryJSON(&buf); err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Device   string
		Capacity int
		Dropped  uint64
		Events   []memory.Event
	}
	if err := json.Unmarshal(buf.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	if doc.Device != "CPU 0" || doc.Capacity != 4 || doc.Dropped != 2 || !slices.Equal(doc.Events, h) {
		t.Fatalf("json doc %+v", doc)
	}

	off := memory.New(memory.Options{})
	b, _ := off.Alloc(10)
	off.Free(b)
	if off.History() != nil {
		t.Fatal("history recorded while off")
	}
	buf.Reset()
	if err := off.WriteHistoryJSON(&buf); err != nil || !bytes.Contains(buf.Bytes(), []byte(`"events": []`)) {
		t.Fatalf("history off: %v %s", err, buf.String())
	}
}

func TestLiveInAllocationOrder(t *testing.T) {
	a := memory.New(memory.Options{})
	var bs []*memory.Block
	for i, n := range []int64{10, 300, 70, 5000} {
		a.SetTag(memory.Tag{Op: "op", Step: int64(i)})
		b, _ := a.Alloc(n)
		bs = append(bs, b)
	}
	a.Free(bs[1])
	live := a.Live()
	var got [][2]int64
	for _, bi := range live {
		got = append(got, [2]int64{bi.Size, bi.Tag.Step})
	}
	if want := [][2]int64{{10, 0}, {70, 2}, {5000, 3}}; !slices.Equal(got, want) {
		t.Fatalf("Live %v, want %v", got, want)
	}
	if live[2].Rounded != 5056 {
		t.Fatalf("rounded %d", live[2].Rounded)
	}
	if st := a.Stats(); st.Allocated.Current != 64+128+5056 {
		t.Fatalf("allocated %d", st.Allocated.Current)
	}
}

func TestResetPeak(t *testing.T) {
	a := memory.New(memory.Options{ChunkSize: 4096})
	b1, _ := a.Alloc(4096)
	b2, _ := a.Alloc(4096)
	a.Free(b2)
	st := a.Stats()
	if st.Allocated.Peak != 8192 || st.Allocated.Current != 4096 {
		t.Fatalf("%+v", st.Allocated)
	}
	a.ResetPeak()
	st = a.Stats()
	if st.Allocated.Peak != 4096 || st.Reserved.Peak != st.Reserved.Current {
		t.Fatalf("after reset %+v", st)
	}
	a.Free(b1)
}

func TestOptionsValidation(t *testing.T) {
	for _, o := range []memory.Options{{Alignment: 32}, {Alignment: 100}, {Limit: -1}, {ChunkSize: -5}} {
		mustPanic(t, "memory: ", func() { memory.New(o) })
	}
	o := memory.New(memory.Options{ChunkSize: 1000}).Options()
	if o.ChunkSize != 1024 || o.Alignment != 64 || o.Device != "CPU 0" {
		t.Fatalf("defaults %+v", o)
	}
}

// TestRetag checks that a retagged block shows its new tag in Live and in
// its free event, while its alloc event keeps the tag it was made with.
func TestRetag(t *testing.T) {
	a := memory.New(memory.Options{HistoryCap: 10})
	a.SetTag(memory.Tag{Op: "relu", Value: "%1"})
	b, _ := a.Alloc(100)
	a.SetTag(memory.Tag{Op: "multiply", Value: "%2"})
	a.Retag(b)
	if live := a.Live(); len(live) != 1 || live[0].Tag.Op != "multiply" || b.Tag().Value != "%2" {
		t.Fatalf("live %+v", live)
	}
	a.Free(b)
	h := a.History()
	if len(h) != 2 || h[0].Tag.Op != "relu" || h[1].Tag.Op != "multiply" {
		t.Fatalf("history %+v", h)
	}
}

// TestEmbeddedHandles allocates into handles the caller provides: in the
// steady state an alloc/free pair makes no Go heap object (segments are
// recycled), and the blocks behave like any other.
func TestEmbeddedHandles(t *testing.T) {
	a := memory.New(memory.Options{ChunkSize: 4096})
	type holder struct {
		x   int
		blk memory.Block
	}
	hs := make([]holder, 8)
	cycle := func() {
		for i := range hs {
			hs[i].blk = memory.Block{} // a freed handle, reset by its only holder
			if err := a.AllocInto(&hs[i].blk, int64(10*i+1)); err != nil {
				t.Fatal(err)
			}
			hs[i].blk.Bytes()[0] = byte(i)
		}
		for i := range hs {
			if hs[i].blk.Bytes()[0] != byte(i) || hs[i].blk.Size() != int64(10*i+1) {
				t.Fatalf("block %d corrupted", i)
			}
		}
		for i := len(hs) - 1; i >= 0; i -= 2 {
			a.Free(&hs[i].blk)
		}
		for i := len(hs) - 2; i >= 0; i -= 2 {
			a.Free(&hs[i].blk)
		}
	}
	cycle()
	if n := testing.AllocsPerRun(100, cycle); n != 0 {
		t.Fatalf("%v Go allocations per cycle of 8 alloc/free pairs, want 0", n)
	}
	if st := a.Stats(); st.Allocated.Current != 0 || st.Allocs != st.Frees || st.Allocs != 8*102 {
		t.Fatalf("stats %+v", st)
	}
	// Alloc's own handles are one Go object each.
	if n := testing.AllocsPerRun(100, func() { b, _ := a.Alloc(64); a.Free(b) }); n != 1 {
		t.Fatalf("Alloc+Free made %v Go allocations, want 1 (the handle)", n)
	}
}
