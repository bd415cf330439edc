package data

import (
	"testing"

	"github.com/gopir/gopir/memory"
)

// newAlloc returns an allocator and registers a check that every byte
// taken from it was given back by the end of the test.
func newAlloc(t *testing.T) *memory.Allocator {
	t.Helper()
	a := memory.New(memory.Options{ChunkSize: 1 << 20})
	t.Cleanup(func() {
		if got := a.Stats().Allocated.Current; got != 0 {
			t.Errorf("allocator holds %d bytes after the test; live blocks: %v", got, a.Live())
		}
	})
	return a
}

// newLimited returns an allocator of limit bytes (64-byte blocks), checked
// like newAlloc's.
func newLimited(t *testing.T, limit int64) *memory.Allocator {
	t.Helper()
	a := memory.New(memory.Options{ChunkSize: limit, Limit: limit})
	t.Cleanup(func() {
		if got := a.Stats().Allocated.Current; got != 0 {
			t.Errorf("limited allocator holds %d bytes after the test", got)
		}
	})
	return a
}
