package tensor

import (
	"fmt"
	"sync/atomic"

	"github.com/gopir/gopir/memory"
)

// Storage is a reference-counted allocation shared by a tensor and its
// views. Compare Storage pointers to tell whether two tensors alias.
type Storage struct {
	alloc *memory.Allocator
	block *memory.Block // nil when the storage holds zero bytes
	refs  atomic.Int32
	// releasedAt is where the last reference was released, recorded in
	// debug mode for the panic messages.
	releasedAt atomic.Pointer[string]
	// items holds a stack's elements (see NewStack); the storage owns one
	// reference to each.
	items []*Tensor
	// version counts writes that holders announced (Touch), for caches of
	// values derived from the contents (the executor's packed weights).
	version atomic.Uint64
	// For storage made by a Pool: the pool, the object holding the
	// storage and its tensor, and the views made through the pool; all
	// go back to the pool with the last reference.
	pool  *Pool
	box   *newBox
	views []*viewBox
}

// Touch records that the contents changed: whoever writes into a tensor
// that others may have derived something from (a parameter an executable
// keeps packed for its matrix products, see exec.Options.PackCache) calls
// it after writing, so that they derive it again.
func (s *Storage) Touch() { s.version.Add(1) }

// Version counts the Touch calls so far: equal versions of one storage
// mean no announced write in between.
func (s *Storage) Version() uint64 { return s.version.Load() }

// Refs is the current number of references.
func (s *Storage) Refs() int32 { return s.refs.Load() }

// Bytes is the number of bytes requested from the allocator (0 for tensors
// with no elements).
func (s *Storage) Bytes() int64 {
	if s.block == nil {
		return 0
	}
	return s.block.Size()
}

// Block is the allocator block behind the storage, nil when it holds zero
// bytes; its Tag says which op made it.
func (s *Storage) Block() *memory.Block { return s.block }

func (s *Storage) where() string {
	if p := s.releasedAt.Load(); p != nil {
		return *p
	}
	return "an unknown place (debug mode was off then)"
}

// retain adds a reference. Resurrecting released storage would hand out
// bytes the allocator may already have given to someone else, so it always
// panics, debug mode or not.
func (s *Storage) retain(t *Tensor) {
	for {
		n := s.refs.Load()
		if n <= 0 {
			panic(fmt.Sprintf("tensor: Retain of released %s; it was released at %s", t.Type(), s.where()))
		}
		if s.refs.CompareAndSwap(n, n+1) {
			return
		}
	}
}

// release drops a reference; the last one frees the block. skip counts the
// frames between the user's call and release, for the recorded call site.
func (s *Storage) release(t *Tensor, skip int) {
	debug := debugOn.Load()
	var site *string // allocated only in debug mode
	if debug {
		site = new(string)
		*site = callSite(skip + 1)
	}
	n := s.refs.Add(-1)
	switch {
	case n > 0:
		return
	case n < 0:
		s.refs.Add(1) // keep reporting the same way on further misuse
		panic(fmt.Sprintf("tensor: double release of %s; it was released at %s", t.Type(), s.where()))
	}
	if debug {
		s.releasedAt.Store(site)
	}
	for i, x := range s.items {
		x.Release()
		s.items[i] = nil
	}
	s.items = nil
	if s.block != nil {
		if debug {
			fill(s.block.Bytes(), poison)
		}
		s.alloc.Free(s.block)
	}
	if s.pool != nil {
		s.pool.recycle(s)
	}
}

// checkAlive panics on use after release; called only in debug mode.
func (s *Storage) checkAlive(t *Tensor) {
	if s.refs.Load() <= 0 {
		panic(fmt.Sprintf("tensor: use of released %s; it was released at %s", t.Type(), s.where()))
	}
}

// fill sets every byte of b to v by doubling copies.
func fill(b []byte, v byte) {
	if len(b) == 0 {
		return
	}
	b[0] = v
	for n := 1; n < len(b); n *= 2 {
		copy(b[n:], b[:n])
	}
}
