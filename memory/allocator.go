package memory

import (
	"fmt"
	"math"
	"sync"
)

// Allocator is a best-fit, auto-growth caching allocator. Create it with New.
type Allocator struct {
	mu   sync.Mutex
	opts Options

	tree                  freeTree
	firstChunk, lastChunk *chunk
	nextChunk             int
	live                  liveList
	spare                 *segment // recycled segments, linked by next
	nextID                uint64
	tag                   Tag
	tagged                bool // tag is not the zero Tag
	st                    Stats
	hist                  *history // nil when history is off
	observe               func(Event)
	seq                   uint64 // events made (history or observer on)
}

// New returns an allocator; see Options for the defaults. It panics on
// options that cannot be meant (alignment not a power of two >= 64,
// negative sizes).
func New(opts Options) *Allocator {
	a := &Allocator{opts: opts.normalize()}
	if a.opts.HistoryCap > 0 {
		a.hist = &history{buf: make([]Event, a.opts.HistoryCap)}
	}
	return a
}

// Options returns the options in effect, defaults filled in.
func (a *Allocator) Options() Options { return a.opts }

// SetTag sets the tag attached to subsequent allocations. With several
// goroutines allocating at once, a block gets whichever tag was current.
func (a *Allocator) SetTag(t Tag) {
	a.mu.Lock()
	a.tag, a.tagged = t, t != (Tag{})
	a.mu.Unlock()
}

// Retag sets the tag of the live block b to the current tag (see SetTag),
// for a buffer that an op has taken over and now holds that op's value:
// Live and a later free event then name that op. The alloc event in the
// history keeps the tag of the allocation. Only the block's owner may
// call it, and not while another goroutine reads b.Tag.
func (a *Allocator) Retag(b *Block) {
	if b.owner != a {
		panic("memory: Retag of a block of another allocator")
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if b.state != handleLive {
		panic(fmt.Sprintf("memory: Retag of freed block #%d", b.id))
	}
	b.tag = a.tag
}

// Alloc returns a block of at least size bytes; Block.Bytes has exactly
// size bytes. The contents are unspecified (recycled memory is not cleared).
// Size 0 returns a zero-size block that occupies nothing and is not counted.
// A request that cannot be served within the limit returns
// *ResourceExhausted; the allocator stays usable.
func (a *Allocator) Alloc(size int64) (*Block, error) {
	b := new(Block)
	if err := a.AllocInto(b, size); err != nil {
		return nil, err
	}
	return b, nil
}

// AllocInto is Alloc with a handle the caller provides: b must be a zero
// Block (it may sit inside a bigger object, which saves a Go heap object
// per allocation). On success b is live until Free; on error b is left
// unused. A handle serves one allocation, so that a stale pointer to it
// never aliases a later block: passing a handle that is live or freed
// panics. Only a caller that knows it holds the sole pointer to a freed
// handle may zero it (*b = Block{}) and use it again. Do not copy a live
// Block: the allocator knows it by its address.
func (a *Allocator) AllocInto(b *Block, size int64) error {
	if size < 0 {
		return fmt.Errorf("memory: negative allocation size %d", size)
	}
	if b.state != handleNew || b.owner != nil {
		panic(fmt.Sprintf("memory: AllocInto with block #%d, which is in use or was freed; a handle serves one allocation", b.id))
	}
	a.mu.Lock()
	if size == 0 {
		b.owner, b.state, b.tag = a, handleLive, a.tag
		a.mu.Unlock()
		return nil
	}
	al := a.opts.Alignment
	if size > math.MaxInt64-al {
		a.st.OOMs++
		err := a.oom(size)
		a.mu.Unlock()
		return err
	}
	rounded := (size + al - 1) &^ (al - 1)

	seg := a.tree.bestFit(rounded)
	if seg == nil {
		seg = a.grow(rounded)
	}
	if seg == nil && a.releaseIdle() > 0 {
		a.st.Retries++
		seg = a.grow(rounded)
	}
	if seg == nil {
		a.st.OOMs++
		err := a.oom(size)
		a.mu.Unlock()
		return err
	}
	a.carve(seg, rounded, b, size)
	a.mu.Unlock()
	return nil
}

// newSeg returns a zeroed segment, recycled when one is spare.
func (a *Allocator) newSeg() *segment {
	if s := a.spare; s != nil {
		a.spare = s.next
		s.next = nil
		return s
	}
	return new(segment)
}

// killSeg retires a segment that no chunk links any more and keeps it for
// reuse. No handle points to it: handles drop their segment when freed.
func (a *Allocator) killSeg(s *segment) {
	*s = segment{state: segDead, next: a.spare}
	a.spare = s
}

// carve takes rounded bytes from the start of the free segment seg and
// makes them the live block b; the rest of seg stays free.
func (a *Allocator) carve(seg *segment, rounded int64, b *Block, req int64) {
	a.tree.remove(seg)
	c := seg.chunk
	s := seg
	if seg.size > rounded {
		// The remainder is a multiple of the alignment, so it can always
		// serve a later request: keep it.
		s = a.newSeg()
		s.chunk, s.offset, s.size = c, seg.offset, rounded
		s.prev = seg.prev
		if s.prev != nil {
			s.prev.next = s
		} else {
			c.head = s
		}
		s.next, seg.prev = seg, s
		seg.offset += rounded
		seg.size -= rounded
		a.tree.insert(seg)
	}
	s.state = segLive
	s.blk = b

	a.nextID++
	b.owner, b.seg, b.state = a, s, handleLive
	b.req, b.id = req, a.nextID
	if a.tagged { // a new handle's tag is zero already; copying strings costs write barriers
		b.tag = a.tag
	}
	b.mem = c.mem[s.offset : s.offset+req : s.offset+req]

	a.live.push(s)
	a.st.Allocs++
	a.st.Allocated.add(rounded)
	if a.hist != nil || a.observe != nil {
		a.event("alloc", b, s)
	}
}

// Free returns b to the allocator. Freeing nil, a block of another
// allocator, or a block already freed panics: each is a bug in the caller.
func (a *Allocator) Free(b *Block) {
	if b == nil {
		panic("memory: Free(nil)")
	}
	if b.owner != a {
		if b.state == handleNew {
			panic("memory: Free of a Block that was never allocated")
		}
		panic(fmt.Sprintf("memory: Free of block #%d (%d bytes, %s) that belongs to another allocator", b.id, b.req, describeTag(b.tag)))
	}
	a.mu.Lock()
	if b.state != handleLive {
		a.mu.Unlock()
		panic(fmt.Sprintf("memory: double Free of block #%d (%d bytes, %s)", b.id, b.req, describeTag(b.tag)))
	}
	s := b.seg
	if s == nil { // zero-size block
		b.state = handleFreed
		a.mu.Unlock()
		return
	}
	if s.blk != b {
		a.mu.Unlock()
		panic(fmt.Sprintf("memory: Free of a copy of block #%d; free the handle Alloc returned", b.id))
	}
	defer a.mu.Unlock() // Counter.sub panics on a broken invariant
	a.live.remove(s)
	a.st.Frees++
	a.st.Allocated.sub(s.size, "allocated")
	if a.hist != nil || a.observe != nil {
		a.event("free", b, s)
	}
	b.mem, b.seg, b.state = nil, nil, handleFreed
	s.blk = nil
	s.state = segFree

	if p := s.prev; p != nil && p.state == segFree {
		a.tree.remove(p)
		p.size += s.size
		p.next = s.next
		if p.next != nil {
			p.next.prev = p
		}
		a.killSeg(s)
		s = p
	}
	if n := s.next; n != nil && n.state == segFree {
		a.tree.remove(n)
		s.size += n.size
		s.next = n.next
		if s.next != nil {
			s.next.prev = s
		}
		a.killSeg(n)
	}
	a.tree.insert(s)
}

func describeTag(t Tag) string {
	if t == (Tag{}) {
		return "untagged"
	}
	return fmt.Sprintf("op %q value %q at %s step %d", t.Op, t.Value, t.Pos, t.Step)
}

// Live returns every live block, in allocation order: after a step has
// released everything it should, these are the leaks.
func (a *Allocator) Live() []BlockInfo {
	a.mu.Lock()
	defer a.mu.Unlock()
	out := make([]BlockInfo, 0, a.live.n)
	for s := a.live.head; s != nil; s = s.lnext {
		out = append(out, s.info())
	}
	return out
}
