package memory

import "unsafe"

// chunk is one reservation from the Go heap, split into segments.
type chunk struct {
	id         int    // creation order, for history and tie-breaking
	mem        []byte // aligned start, len == size
	size       int64
	head       *segment // the segment at offset 0
	prev, next *chunk   // all chunks, in creation order
}

// idle reports whether no block of c is live: then it is one free segment.
func (c *chunk) idle() bool {
	return c.head.state == segFree && c.head.size == c.size
}

// newChunkMem returns size bytes starting at an address aligned to align, or
// nil when the Go runtime refuses a length that large.
func newChunkMem(size, align int64) (mem []byte) {
	defer func() {
		if recover() != nil { // "makeslice: len out of range"
			mem = nil
		}
	}()
	raw := make([]byte, size+align)
	off := (align - int64(uintptr(unsafe.Pointer(&raw[0])))&(align-1)) & (align - 1)
	return raw[off : off+size : off+size]
}

// grow reserves a chunk able to hold a rounded request of size bytes and
// returns its single free segment (already in the free tree), or nil when
// the limit does not allow it. Called with a.mu held.
func (a *Allocator) grow(size int64) *segment {
	want := max(a.opts.ChunkSize, size)
	if lim := a.opts.Limit; lim > 0 {
		room := (lim - a.st.Reserved.Current) &^ (a.opts.Alignment - 1)
		if room < size {
			return nil
		}
		want = min(want, room)
	}
	mem := newChunkMem(want, a.opts.Alignment)
	if mem == nil {
		return nil
	}
	c := &chunk{id: a.nextChunk, mem: mem, size: want, prev: a.lastChunk}
	a.nextChunk++
	if a.lastChunk != nil {
		a.lastChunk.next = c
	} else {
		a.firstChunk = c
	}
	a.lastChunk = c
	seg := a.newSeg()
	seg.chunk, seg.size, seg.state = c, want, segFree
	c.head = seg
	a.tree.insert(seg)
	a.st.Reserved.add(want)
	a.st.ChunkGrows++
	return seg
}

// releaseIdle gives every idle chunk back to the Go heap and returns how
// many it released. Called with a.mu held.
func (a *Allocator) releaseIdle() int {
	n := 0
	for c := a.firstChunk; c != nil; {
		next := c.next
		if c.idle() {
			a.release(c)
			n++
		}
		c = next
	}
	return n
}

func (a *Allocator) release(c *chunk) {
	seg := c.head
	a.tree.remove(seg)
	a.killSeg(seg)
	if c.prev != nil {
		c.prev.next = c.next
	} else {
		a.firstChunk = c.next
	}
	if c.next != nil {
		c.next.prev = c.prev
	} else {
		a.lastChunk = c.prev
	}
	c.prev, c.next, c.head, c.mem = nil, nil, nil, nil
	a.st.Reserved.sub(c.size, "reserved")
	a.st.ChunkReleases++
}

// EmptyCache releases all idle chunks (chunks with no live block) back to
// the Go heap. Chunks that hold a live block stay reserved.
func (a *Allocator) EmptyCache() {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.releaseIdle()
}
