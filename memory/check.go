package memory

import "fmt"

// check verifies the allocator's internal invariants and returns the first
// violation. It walks everything, so tests call it, not the hot path.
func (a *Allocator) check() error {
	a.mu.Lock()
	defer a.mu.Unlock()

	// Free tree: ordered, heap-ordered priorities, all free.
	var prev *segment
	inTree := map[*segment]bool{}
	var err error
	a.tree.walk(func(b *segment) {
		if err != nil {
			return
		}
		if b.state != segFree {
			err = fmt.Errorf("segment in free tree has state %d", b.state)
		}
		if prev != nil && !less(prev, b) {
			err = fmt.Errorf("free tree out of order")
		}
		for _, c := range []*segment{b.left, b.right} {
			if c != nil && c.prio > b.prio {
				err = fmt.Errorf("free tree heap order broken")
			}
		}
		inTree[b] = true
		prev = b
	})
	if err != nil {
		return err
	}
	if len(inTree) != a.tree.n {
		return fmt.Errorf("free tree count %d, walked %d", a.tree.n, len(inTree))
	}

	// Chunks: segments tile each chunk; no two free neighbours; every free
	// segment is in the tree; byte sums match the stats.
	spare := map[*segment]bool{}
	for s := a.spare; s != nil; s = s.next {
		if s.state != segDead || s.blk != nil || s.chunk != nil || spare[s] {
			return fmt.Errorf("spare segment in use or listed twice")
		}
		spare[s] = true
	}
	var reserved, allocated int64
	var liveN, freeN, chunks int
	for c := a.firstChunk; c != nil; c = c.next {
		chunks++
		reserved += c.size
		if c.head == nil || c.head.prev != nil {
			return fmt.Errorf("chunk %d: bad head", c.id)
		}
		off := int64(0)
		for s := c.head; s != nil; s = s.next {
			if s.chunk != c || s.offset != off || s.size <= 0 || s.size%a.opts.Alignment != 0 {
				return fmt.Errorf("chunk %d: segment at %d (want %d) size %d broken", c.id, s.offset, off, s.size)
			}
			if s.next != nil && s.next.prev != s {
				return fmt.Errorf("chunk %d: neighbour links broken at %d", c.id, s.offset)
			}
			if spare[s] {
				return fmt.Errorf("chunk %d: segment at %d is also on the spare list", c.id, s.offset)
			}
			switch s.state {
			case segLive:
				liveN++
				allocated += s.size
				if b := s.blk; b == nil || b.seg != s || b.state != handleLive || b.owner != a ||
					int64(len(b.mem)) != b.req || b.req > s.size || b.req <= s.size-a.opts.Alignment {
					return fmt.Errorf("chunk %d: live segment at %d has a broken handle", c.id, s.offset)
				}
			case segFree:
				if s.blk != nil {
					return fmt.Errorf("chunk %d: free segment at %d still points to a handle", c.id, s.offset)
				}
				freeN++
				if !inTree[s] {
					return fmt.Errorf("chunk %d: free segment at %d not in tree", c.id, s.offset)
				}
				if s.next != nil && s.next.state == segFree {
					return fmt.Errorf("chunk %d: unmerged free neighbours at %d", c.id, s.offset)
				}
			default:
				return fmt.Errorf("chunk %d: dead segment at %d still linked", c.id, s.offset)
			}
			off += s.size
		}
		if off != c.size {
			return fmt.Errorf("chunk %d: segments cover %d of %d bytes", c.id, off, c.size)
		}
	}
	if freeN != a.tree.n {
		return fmt.Errorf("%d free segments in chunks, %d in tree", freeN, a.tree.n)
	}
	if liveN != a.live.n {
		return fmt.Errorf("%d live segments in chunks, %d in live list", liveN, a.live.n)
	}
	n := 0
	for s := a.live.head; s != nil; s = s.lnext {
		if s.state != segLive || (s.lnext != nil && s.lnext.lprev != s) || (s.lnext != nil && s.lnext.blk.id <= s.blk.id) {
			return fmt.Errorf("live list broken or out of allocation order")
		}
		n++
	}
	if n != a.live.n {
		return fmt.Errorf("live list holds %d segments, counted %d", n, a.live.n)
	}
	st := a.st
	if allocated != st.Allocated.Current || reserved != st.Reserved.Current {
		return fmt.Errorf("stats say allocated %d reserved %d, chunks hold %d / %d",
			st.Allocated.Current, st.Reserved.Current, allocated, reserved)
	}
	if int64(chunks) != st.ChunkGrows-st.ChunkReleases {
		return fmt.Errorf("%d chunks, grows-releases = %d", chunks, st.ChunkGrows-st.ChunkReleases)
	}
	if a.opts.Limit > 0 && reserved > a.opts.Limit {
		return fmt.Errorf("reserved %d over limit %d", reserved, a.opts.Limit)
	}
	for _, c := range []Counter{st.Allocated, st.Reserved} {
		if c.Current != c.TotalAllocated-c.TotalFreed || c.Peak < c.Current {
			return fmt.Errorf("counter inconsistent: %+v", c)
		}
	}
	return nil
}
