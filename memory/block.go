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

// blockState is the life cycle of a Block struct. A struct that has been
// handed out is never made live again (every allocation gets a fresh struct),
// so a stale pointer can always be recognised as already freed.
type blockState uint8

const (
	stateLive blockState = iota // handed out, not yet freed
	stateFree                   // a free segment in the free tree
	stateDead                   // merged into a neighbour, carved away or released with its chunk
)

// Block is a range of allocator memory. The same struct type serves as the
// user's handle and as the allocator's segment (physical neighbour list and
// free-tree node), which saves a second object per allocation.
type Block struct {
	owner *Allocator
	chunk *chunk // nil for a zero-size block

	// Segment fields, guarded by owner.mu; they change as neighbours merge.
	offset     int64 // from the chunk's aligned start
	size       int64 // rounded size of the segment
	state      blockState
	prev, next *Block // physical neighbours in the chunk

	// Free-tree links (state == stateFree).
	left, right *Block
	prio        uint64

	// Live-list links (state == stateLive), in allocation order.
	lprev, lnext *Block

	// Handle fields: written once at allocation, read without the lock.
	// Free clears mem so that a use after free fails fast.
	mem []byte
	req int64
	id  uint64
	tag Tag
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

func (b *Block) info() BlockInfo {
	return BlockInfo{ID: b.id, Size: b.req, Rounded: b.size, Chunk: b.chunk.id, Offset: b.offset, Tag: b.tag}
}

// liveList keeps live blocks in allocation order with O(1) insert and remove.
type liveList struct {
	head, tail *Block
	n          int
}

func (l *liveList) push(b *Block) {
	b.lprev, b.lnext = l.tail, nil
	if l.tail != nil {
		l.tail.lnext = b
	} else {
		l.head = b
	}
	l.tail = b
	l.n++
}

func (l *liveList) remove(b *Block) {
	if b.lprev != nil {
		b.lprev.lnext = b.lnext
	} else {
		l.head = b.lnext
	}
	if b.lnext != nil {
		b.lnext.lprev = b.lprev
	} else {
		l.tail = b.lprev
	}
	b.lprev, b.lnext = nil, nil
	l.n--
}
