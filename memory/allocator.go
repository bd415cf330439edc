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
	nextID                uint64
	tag                   Tag
	st                    Stats
	hist                  *history // nil when history is off
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
	a.tag = t
	a.mu.Unlock()
}

// Alloc returns a block of at least size bytes; Block.Bytes has exactly
// size bytes. The contents are unspecified (recycled memory is not cleared).
// Size 0 returns a zero-size block that occupies nothing and is not counted.
// A request that cannot be served within the limit returns
// *ResourceExhausted; the allocator stays usable.
func (a *Allocator) Alloc(size int64) (*Block, error) {
	if size < 0 {
		return nil, fmt.Errorf("memory: negative allocation size %d", size)
	}
	al := a.opts.Alignment
	a.mu.Lock()
	defer a.mu.Unlock()
	if size == 0 {
		return &Block{owner: a, state: stateLive, tag: a.tag}, nil
	}
	if size > math.MaxInt64-al {
		a.st.OOMs++
		return nil, a.oom(size)
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
		return nil, a.oom(size)
	}
	return a.carve(seg, rounded, size), nil
}

// carve takes rounded bytes from the start of the free segment seg and
// returns them as a fresh live block; the rest of seg stays free. A fresh
// struct every time means a stale handle can never alias a new block.
func (a *Allocator) carve(seg *Block, rounded, req int64) *Block {
	a.tree.remove(seg)
	c := seg.chunk
	a.nextID++
	b := &Block{
		owner: a, chunk: c, offset: seg.offset, size: rounded, state: stateLive,
		req: req, id: a.nextID, tag: a.tag,
	}
	b.mem = c.mem[b.offset : b.offset+req : b.offset+req]

	b.prev = seg.prev
	if b.prev != nil {
		b.prev.next = b
	} else {
		c.head = b
	}
	if seg.size > rounded {
		// The remainder is a multiple of the alignment, so it can always
		// serve a later request: keep it.
		seg.offset += rounded
		seg.size -= rounded
		seg.prev, b.next = b, seg
		a.tree.insert(seg)
	} else {
		b.next = seg.next
		if b.next != nil {
			b.next.prev = b
		}
		seg.state, seg.prev, seg.next = stateDead, nil, nil
	}

	a.live.push(b)
	a.st.Allocs++
	a.st.Allocated.add(rounded)
	if a.hist != nil {
		a.hist.record("alloc", b, &a.st)
	}
	return b
}

// Free returns b to the allocator. Freeing nil, a block of another
// allocator, or a block already freed panics: each is a bug in the caller.
func (a *Allocator) Free(b *Block) {
	if b == nil {
		panic("memory: Free(nil)")
	}
	if b.owner != a {
		panic(fmt.Sprintf("memory: Free of block #%d (%d bytes, %s) that belongs to another allocator", b.id, b.req, describeTag(b.tag)))
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if b.state != stateLive {
		panic(fmt.Sprintf("memory: double Free of block #%d (%d bytes, %s)", b.id, b.req, describeTag(b.tag)))
	}
	if b.chunk == nil { // zero-size block
		b.state = stateDead
		return
	}

	a.live.remove(b)
	a.st.Frees++
	a.st.Allocated.sub(b.size, "allocated")
	if a.hist != nil {
		a.hist.record("free", b, &a.st)
	}
	b.mem = nil
	b.state = stateFree

	seg := b
	if p := b.prev; p != nil && p.state == stateFree {
		a.tree.remove(p)
		p.size += b.size
		p.next = b.next
		if p.next != nil {
			p.next.prev = p
		}
		b.state, b.prev, b.next = stateDead, nil, nil
		seg = p
	}
	if n := seg.next; n != nil && n.state == stateFree {
		a.tree.remove(n)
		seg.size += n.size
		seg.next = n.next
		if seg.next != nil {
			seg.next.prev = seg
		}
		n.state, n.prev, n.next = stateDead, nil, nil
	}
	a.tree.insert(seg)
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
	for b := a.live.head; b != nil; b = b.lnext {
		out = append(out, b.info())
	}
	return out
}
