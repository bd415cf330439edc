package memory

// freeTree holds the free segments ordered by (size, chunk, offset): a
// treap, intrusive in segment so that inserting and removing allocate nothing.
// Best fit is the leftmost segment whose size is >= the request, which is
// also the lowest address among equal sizes; lower addresses first keeps the
// high end of chunks free, so whole chunks go idle more often.
type freeTree struct {
	root *segment
	n    int
	rng  uint64 // xorshift state for priorities; deterministic runs
}

func less(x, y *segment) bool {
	if x.size != y.size {
		return x.size < y.size
	}
	if x.chunk.id != y.chunk.id {
		return x.chunk.id < y.chunk.id
	}
	return x.offset < y.offset
}

func (t *freeTree) nextPrio() uint64 {
	if t.rng == 0 {
		t.rng = 0x9e3779b97f4a7c15
	}
	t.rng ^= t.rng << 13
	t.rng ^= t.rng >> 7
	t.rng ^= t.rng << 17
	return t.rng
}

func (t *freeTree) insert(b *segment) {
	b.left, b.right = nil, nil
	b.prio = t.nextPrio()
	t.root = treapInsert(t.root, b)
	t.n++
}

func treapInsert(root, b *segment) *segment {
	if root == nil {
		return b
	}
	if less(b, root) {
		root.left = treapInsert(root.left, b)
		if root.left.prio > root.prio {
			l := root.left
			root.left, l.right = l.right, root
			return l
		}
	} else {
		root.right = treapInsert(root.right, b)
		if root.right.prio > root.prio {
			r := root.right
			root.right, r.left = r.left, root
			return r
		}
	}
	return root
}

// remove unlinks b, which must be in the tree with its key unchanged since
// insert.
func (t *freeTree) remove(b *segment) {
	t.root = treapRemove(t.root, b)
	b.left, b.right = nil, nil
	t.n--
}

func treapRemove(root, b *segment) *segment {
	if root == nil {
		panic("memory: internal error: free segment missing from the free tree")
	}
	if root == b {
		return treapMerge(b.left, b.right)
	}
	if less(b, root) {
		root.left = treapRemove(root.left, b)
	} else {
		root.right = treapRemove(root.right, b)
	}
	return root
}

// treapMerge joins two treaps whose keys are all ordered l < r.
func treapMerge(l, r *segment) *segment {
	switch {
	case l == nil:
		return r
	case r == nil:
		return l
	case l.prio > r.prio:
		l.right = treapMerge(l.right, r)
		return l
	default:
		r.left = treapMerge(l, r.left)
		return r
	}
}

// bestFit returns the smallest free segment of at least size bytes, lowest
// address first among equals, or nil.
func (t *freeTree) bestFit(size int64) *segment {
	var best *segment
	for n := t.root; n != nil; {
		if n.size >= size {
			best = n
			n = n.left
		} else {
			n = n.right
		}
	}
	return best
}

// largest returns the largest free segment size (0 when empty).
func (t *freeTree) largest() int64 {
	n := t.root
	if n == nil {
		return 0
	}
	for n.right != nil {
		n = n.right
	}
	return n.size
}

// walk calls f on every segment in key order.
func (t *freeTree) walk(f func(*segment)) {
	var rec func(*segment)
	rec = func(n *segment) {
		if n == nil {
			return
		}
		rec(n.left)
		f(n)
		rec(n.right)
	}
	rec(t.root)
}
