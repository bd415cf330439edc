// Package memory is gopir's caching allocator: the single source of truth for
// how many bytes a program holds.
//
// It belongs to the family of Paddle's AutoGrowthBestFit, TensorFlow's BFC and
// PyTorch's caching allocator. Memory is reserved from the Go heap in large
// chunks; each chunk is split into blocks. A request is served by the smallest
// free block that fits (best fit, ties broken by address), split when larger
// than needed; a freed block merges with free neighbours. Chunks stay cached
// after their blocks are freed, so a training step that repeats the same
// pattern stops touching the Go heap after the first step.
//
// A capacity limit (Options.Limit) turns the allocator into a device of that
// size: reserved bytes never exceed it. When a request cannot be served the
// allocator grows a chunk if the limit allows, otherwise it releases idle
// chunks and retries, and only then fails with *ResourceExhausted.
//
// # Accounting
//
// Requested sizes are rounded up to the alignment (64 bytes or more). The
// allocated byte counts in Stats are those rounded sizes: they are what the
// blocks really occupy, so Allocated.Current <= Reserved.Current always holds
// and fragmentation shows as Reserved - Allocated. Block.Size reports the size
// as requested. A zero-byte request returns a zero-size block that occupies
// nothing and is not counted anywhere (stats, Live, History); it must still be
// freed like any other block, and freeing it twice panics.
//
// Chunks are made with make([]byte, n+alignment) and sliced to an aligned
// start; Reserved counts n.
//
// # Handles
//
// A Block is the caller's handle to one allocation. Alloc returns a new
// one; AllocInto fills a zero Block the caller provides, typically embedded
// in the object that owns the memory (a tensor's storage), so that an
// allocation costs no Go heap object. Either way a handle serves one
// allocation: freeing it again panics however often the memory has been
// reused since. (A handle's only holder may zero a freed handle and use it
// again.) The allocator's own bookkeeping lives in internal segments that
// it recycles, so alloc and free in the steady state allocate nothing.
// Retag renames the owner of a live block, for a buffer an op has taken
// over in place.
//
// # Errors and panics
//
// Running out of memory is an error (*ResourceExhausted). Freeing a block
// twice, freeing a block of another allocator, or a broken internal
// invariant (a byte count going negative) are bugs and panic.
//
// All methods are safe for concurrent use.
package memory
