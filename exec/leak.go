package exec

import (
	"fmt"
	"strings"

	"github.com/gopir/gopir/memory"
	"github.com/gopir/gopir/tensor"
)

// LeakError reports buffers that a run left allocated: neither persistable
// nor held by the caller nor fetched.
type LeakError struct {
	Run     int64
	Buffers []memory.BlockInfo
}

func (e *LeakError) Error() string {
	var sb strings.Builder
	var total int64
	for _, b := range e.Buffers {
		total += b.Size
	}
	fmt.Fprintf(&sb, "leak check: run %d left %d buffer(s), %d bytes, allocated:", e.Run, len(e.Buffers), total)
	for _, b := range e.Buffers {
		t := b.Tag
		fmt.Fprintf(&sb, "\n\t%d bytes: %s = %q at %s", b.Size, orUnknown(t.Value), t.Op, orUnknown(t.Pos))
	}
	return sb.String()
}

func orUnknown(s string) string {
	if s == "" {
		return "?"
	}
	return s
}

func liveSet(a *memory.Allocator) map[uint64]bool {
	live := a.Live()
	set := make(map[uint64]bool, len(live))
	for _, b := range live {
		set[b.ID] = true
	}
	return set
}

// checkLeaks compares the allocator's live blocks with those alive before
// the run plus the fetched results.
func (e *Executable) checkLeaks(run int64, before map[uint64]bool, out Results) error {
	held := map[uint64]bool{}
	var hold func(t *tensor.Tensor)
	hold = func(t *tensor.Tensor) {
		if t.IsStack() { // a fetched sequence holds its items
			for i := range t.StackLen() {
				hold(t.StackItem(i))
			}
			return
		}
		if b := t.Storage().Block(); b != nil {
			held[b.ID()] = true
		}
	}
	for _, t := range out {
		hold(t)
	}
	for _, ps := range e.packs { // the pack cache's copies stay by design
		if ps.t != nil {
			hold(ps.t)
		}
	}
	var leaked []memory.BlockInfo
	for _, b := range e.alloc.Live() {
		if !before[b.ID] && !held[b.ID] {
			leaked = append(leaked, b)
		}
	}
	if len(leaked) > 0 {
		return &LeakError{Run: run, Buffers: leaked}
	}
	return nil
}
