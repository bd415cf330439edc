package memory

import "fmt"

// Counter tracks one byte quantity the way PyTorch's memory_stats does.
type Counter struct {
	Current        int64 `json:"current"`
	Peak           int64 `json:"peak"` // highest Current since New or ResetPeak
	TotalAllocated int64 `json:"total_allocated"`
	TotalFreed     int64 `json:"total_freed"`
}

func (c *Counter) add(n int64) {
	c.Current += n
	c.TotalAllocated += n
	c.Peak = max(c.Peak, c.Current)
}

// sub panics when Current would go negative: that can only be an allocator
// bug, and carrying on would make every later number wrong.
func (c *Counter) sub(n int64, what string) {
	c.Current -= n
	c.TotalFreed += n
	if c.Current < 0 {
		panic(fmt.Sprintf("memory: internal error: %s bytes went negative (%d after freeing %d)", what, c.Current, n))
	}
}

// Stats is a snapshot of the allocator's counters.
type Stats struct {
	// Allocated counts live blocks at their rounded (aligned) size.
	Allocated Counter `json:"allocated"`
	// Reserved counts chunk bytes held from the Go heap, free or not.
	Reserved Counter `json:"reserved"`

	Allocs        int64 `json:"allocs"`         // successful non-zero allocations
	Frees         int64 `json:"frees"`          // frees of non-zero blocks
	LiveBlocks    int64 `json:"live_blocks"`    // Allocs - Frees
	ChunkGrows    int64 `json:"chunk_grows"`    // chunks reserved
	ChunkReleases int64 `json:"chunk_releases"` // idle chunks released (EmptyCache or retry)
	Retries       int64 `json:"retries"`        // requests that released idle chunks and tried again
	OOMs          int64 `json:"ooms"`           // requests that failed with ResourceExhausted
}

// Stats returns a snapshot of the counters.
func (a *Allocator) Stats() Stats {
	a.mu.Lock()
	defer a.mu.Unlock()
	s := a.st
	s.LiveBlocks = int64(a.live.n)
	return s
}

// ResetPeak sets both peaks to the current values, to measure the peak of
// one phase (a step, an op).
func (a *Allocator) ResetPeak() {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.st.Allocated.Peak = a.st.Allocated.Current
	a.st.Reserved.Peak = a.st.Reserved.Current
}
