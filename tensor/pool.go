package tensor

import (
	"sync"

	"github.com/gopir/gopir/memory"
)

// A Pool recycles the Go objects behind tensors — the header, the storage,
// the allocator's block handle, the shape — once their storage has been
// released, so that an owner who makes the same tensors again and again
// (the executor, run after run) makes no Go heap object for them after the
// first time. The bytes still come from the allocator, counted as ever;
// only the bookkeeping objects are reused.
//
// Reuse is safe only for tensors that nobody outside the owner can still
// point to after their release: a stale pointer to a recycled header would
// alias the next tensor made in its place. So the owner Detaches every
// tensor it hands out (the executor: its fetches); a detached tensor's
// objects are left to the garbage collector as usual. In debug mode
// (SetDebug) nothing is recycled, so that a use after release is still
// caught. A Pool may be used from several goroutines.
type Pool struct {
	mu    sync.Mutex
	boxes []*newBox
	views []*viewBox
	lent  []*viewBox // views of storage not from the pool, until Reclaim
}

// New is tensor.New with the tensor's Go objects taken from p when it has
// some.
func (p *Pool) New(a *memory.Allocator, dt DType, shape ...int) (*Tensor, error) {
	box := p.takeBox()
	if box == nil {
		box = &newBox{}
	}
	t, err := newIn(box, a, dt, shape)
	if err != nil {
		p.putBoxes(box)
		return nil, err
	}
	box.s.pool, box.s.box = p, box
	return t, nil
}

// Reshape is t.Reshape with the view's header taken from p when it has
// one. If t's storage came from p, the view comes back to p with it.
// Otherwise (a view of a parameter, say) it is lent: it comes back at the
// next Reclaim, unless Kept or Detached before.
func (p *Pool) Reshape(t *Tensor, shape ...int) (*Tensor, error) {
	if debugOn.Load() {
		return t.Reshape(shape...)
	}
	n, _, err := numElems(t.dt, shape)
	if err != nil {
		return nil, err
	}
	if n != t.n {
		return nil, reshapeError(t, shape, n)
	}
	s := t.s
	v := p.takeView()
	if v == nil {
		v = &viewBox{}
	}
	s.retain(t)
	v.t = Tensor{dt: t.dt, n: n, s: s}
	v.t.shape = v.dims.hold(shape)
	if s.pool == p {
		s.views = append(s.views, v)
	} else {
		v.t.lent = true
		p.mu.Lock()
		p.lent = append(p.lent, v)
		p.mu.Unlock()
	}
	return &v.t, nil
}

// Reclaim takes back the views Reshape lent since the last Reclaim and
// nobody Kept: the owner calls it when none of them is held any more (the
// executor: when a run is over, its frames empty).
func (p *Pool) Reclaim() {
	p.mu.Lock()
	for i, v := range p.lent {
		if v.t.lent {
			p.views = append(p.views, v)
		}
		p.lent[i] = nil
	}
	p.lent = p.lent[:0]
	p.mu.Unlock()
}

// Keep lets t, a tensor the pool's owner hands out, outlive the next
// Reclaim, and does the same for a stack's items. Unlike Detach it lets
// t's objects come back when its storage, which p made, is released: for
// a holder who promises not to touch t after its last release.
func Keep(t *Tensor) {
	if t.lent { // written only on the owner's own views: no race with other holders
		t.lent = false
	}
	for _, x := range t.s.items {
		Keep(x)
	}
}

// Detach makes t's storage, with every header on it, and for a stack its
// items, ordinary garbage-collected objects that never come back to a
// pool: for a tensor handed to someone who may keep a pointer to it after
// its release.
func Detach(t *Tensor) {
	if t.lent {
		t.lent = false
	}
	s := t.s
	if s.pool != nil { // only the pool's owner writes these: no race with other holders
		s.pool, s.box, s.views = nil, nil, nil
	}
	for _, x := range s.items {
		Detach(x)
	}
}

func (p *Pool) takeBox() *newBox {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := len(p.boxes)
	if n == 0 {
		return nil
	}
	b := p.boxes[n-1]
	p.boxes[n-1] = nil
	p.boxes = p.boxes[:n-1]
	return b
}

func (p *Pool) takeView() *viewBox {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := len(p.views)
	if n == 0 {
		return nil
	}
	v := p.views[n-1]
	p.views[n-1] = nil
	p.views = p.views[:n-1]
	return v
}

func (p *Pool) putBoxes(b *newBox) {
	p.mu.Lock()
	p.boxes = append(p.boxes, b)
	p.mu.Unlock()
}

// recycle takes back the objects of s, whose last reference is gone: its
// tensor and the views made through Reshape. Called by Storage.release
// after the block is freed.
func (p *Pool) recycle(s *Storage) {
	if debugOn.Load() {
		return
	}
	// The headers keep pointing to s, whose count stays 0 until the box
	// is reused: a release by a kernel that broke the count still panics
	// as a double release, and reads find no bytes.
	box := s.box
	p.mu.Lock()
	for i, v := range s.views {
		p.views = append(p.views, v)
		s.views[i] = nil
	}
	s.views = s.views[:0] // keeps its capacity for the next tensor in box
	s.alloc, s.block, s.pool, s.box = nil, nil, nil, nil
	box.blk = memory.Block{} // the handle was freed; nobody else points to it
	p.boxes = append(p.boxes, box)
	p.mu.Unlock()
}
