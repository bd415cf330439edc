package memory

// Tag says who made a block; the executor sets it before each instruction so
// that leak reports and timelines can name the op, the value and the source
// position.
type Tag struct {
	Op    string `json:"op"`
	Value string `json:"value"`
	Pos   string `json:"pos"` // "file:line:col" of the op that made it
	Step  int64  `json:"step"`
}

// handleState is the life cycle of a Block handle. A handle goes from new
// to live once and from live to freed once; it is never made live again, so
// a stale pointer to it is always recognised as already freed.
type handleState uint8

const (
	handleNew   handleState = iota // zero value: never allocated
	handleLive                     // handed out, not yet freed
	handleFreed                    // freed; Free again panics
)

// Block is the user's handle to a range of allocator memory. Alloc returns
// a fresh one; AllocInto fills one the caller provides (embedded in a
// bigger object, so that an allocation costs no Go heap object of its own).
// Either way a handle serves one allocation only: a stale handle is always
// recognised, and freeing it again panics.
//
// The allocator's bookkeeping (physical neighbours, free tree, live list)
// lives in internal segments that it recycles; the handle points to its
// segment only while live.
type Block struct {
	owner *Allocator
	seg   *segment // nil for a zero-size block and after Free

	// Written once at allocation, read without the lock. Free clears mem
	// so that a use after free fails fast.
	mem   []byte
	req   int64
	id    uint64
	tag   Tag
	state handleState
}

// Bytes returns the block's memory: exactly Size bytes (capacity too, so an
// append cannot spill into a neighbour), starting at an address aligned to
// the allocator's alignment. It is nil for a zero-size block and after Free.
func (b *Block) Bytes() []byte { return b.mem }

// Size is the size as requested; the allocator accounts the size rounded up
// to its alignment.
func (b *Block) Size() int64 { return b.req }

// Tag is the allocator's tag at the time the block was allocated.
func (b *Block) Tag() Tag { return b.tag }

// ID is the block's allocation number (1, 2, ...), as used in Live and
// History; 0 for zero-size blocks, which are not counted.
func (b *Block) ID() uint64 { return b.id }

// BlockInfo describes a live block, for leak reports.
type BlockInfo struct {
	ID      uint64 `json:"id"`
	Size    int64  `json:"size"`    // as requested
	Rounded int64  `json:"rounded"` // as accounted in Stats.Allocated
	Chunk   int    `json:"chunk"`
	Offset  int64  `json:"offset"`
	Tag     Tag    `json:"tag"`
}

// segState is the life cycle of a segment.
type segState uint8

const (
	segLive segState = iota // holds a live block
	segFree                 // a free range, in the free tree
	segDead                 // merged away, released with its chunk, or on the spare list
)

// segment is a range of a chunk: a live block's memory or a free range.
// Segments are internal (no user holds one), so the allocator recycles them
// on a spare list: a steady-state alloc/free makes no Go heap object.
type segment struct {
	chunk      *chunk
	offset     int64 // from the chunk's aligned start
	size       int64 // rounded size; changes as free neighbours merge
	state      segState
	prev, next *segment // physical neighbours in the chunk; next also links the spare list

	// Free-tree links (state == segFree).
	left, right *segment
	prio        uint64

	// While live: the handle and the live-list links, in allocation order.
	blk          *Block
	lprev, lnext *segment
}

func (s *segment) info() BlockInfo {
	b := s.blk
	return BlockInfo{ID: b.id, Size: b.req, Rounded: s.size, Chunk: s.chunk.id, Offset: s.offset, Tag: b.tag}
}

// liveList keeps live segments in allocation order with O(1) insert and
// remove.
type liveList struct {
	head, tail *segment
	n          int
}

func (l *liveList) push(s *segment) {
	s.lprev, s.lnext = l.tail, nil
	if l.tail != nil {
		l.tail.lnext = s
	} else {
		l.head = s
	}
	l.tail = s
	l.n++
}

func (l *liveList) remove(s *segment) {
	if s.lprev != nil {
		s.lprev.lnext = s.lnext
	} else {
		l.head = s.lnext
	}
	if s.lnext != nil {
		s.lnext.lprev = s.lprev
	} else {
		l.tail = s.lprev
	}
	s.lprev, s.lnext = nil, nil
	l.n--
}
