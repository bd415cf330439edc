package ops

import (
	"github.com/gopir/gopir/ir"
	"github.com/gopir/gopir/memory"
	"github.com/gopir/gopir/tensor"
)

// Ctx is what a kernel may use while it runs: the allocator its results
// come from, how many goroutines it may use, and the state of random ops.
type Ctx struct {
	Alloc   *memory.Allocator
	Threads int
	// Seed and Run make random ops deterministic: an op without a seed
	// attribute of its own draws from a stream keyed by (Seed, Run, op).
	Seed int64
	Run  int64
	// Owned has bit i set when the kernel owns operand i: the executor
	// donated its last reference (see Def.Donate), so the kernel must
	// release it or return it, and may update it in place if it is not
	// shared (Refs() == 1).
	Owned uint64
	// Results, when it has room, is scratch space a kernel may return its
	// results in instead of a new slice (see Result). A caller that sets
	// it must take the results out of the returned slice before it runs
	// another kernel with this Ctx; the executor does. Nil means every
	// kernel returns a fresh slice.
	Results []*tensor.Tensor
	// Track makes New and Zeros record each tensor they allocate until
	// the next Begin (Made), so that when a kernel panics the executor can
	// release what it had made: such tensors are unreachable otherwise.
	Track bool
	made  []*tensor.Tensor
	// Pool, if set, provides the Go objects of the tensors New and Zeros
	// make (see tensor.Pool): the executor's, which it recycles when their
	// storage is released.
	Pool *tensor.Pool

	work     []byte // the running Compute kernel's workspace (SetWork)
	packed   []byte // its packed operand (SetPacked)
	workUsed int

	// Comm reaches the other ranks of a data-parallel job, for the
	// collective ops (collective.go); nil outside one.
	Comm Communicator
	// pending lists the all-reduces started and not yet waited for, each
	// holding a reference to its bucket (see Settle).
	pending []pendingReduce
}

// Begin prepares c for one kernel call that owns the operands in owned
// (see Owned) and forgets the tensors the previous call made (see Track).
// The executor calls it before each kernel.
func (c *Ctx) Begin(owned uint64) {
	c.Owned = owned
	c.made = c.made[:0]
}

// Made lists the tensors New and Zeros allocated since Begin, when Track
// is set. Some may have been released or returned already.
func (c *Ctx) Made() []*tensor.Tensor { return c.made }

// Disown records that the kernel released or handed on owned operand i
// (see Owned), so that Owns(i) is false from now on: after a kernel panics
// the executor releases the operands it still owned.
func (c *Ctx) Disown(i int) { c.Owned &^= 1 << uint(i) }

// Owns reports whether the kernel owns operand i (see Owned).
func (c *Ctx) Owns(i int) bool { return c.Owned&(1<<uint(i)) != 0 }

// New allocates a tensor of the given dtype and shape; its contents are
// unspecified, so the kernel must write every element.
func (c *Ctx) New(dt ir.DType, shape []int) (*tensor.Tensor, error) {
	var t *tensor.Tensor
	var err error
	if c.Pool != nil {
		t, err = c.Pool.New(c.Alloc, tensor.DType(dt), shape...)
	} else {
		t, err = tensor.New(c.Alloc, tensor.DType(dt), shape...)
	}
	if c.Track && err == nil {
		c.made = append(c.made, t)
	}
	return t, err
}

// Zeros allocates a zero-filled tensor.
func (c *Ctx) Zeros(dt ir.DType, shape []int) (*tensor.Tensor, error) {
	t, err := c.New(dt, shape)
	if err == nil {
		clear(t.Raw())
	}
	return t, err
}

// Result returns the one-element result slice {t}: c.Results when it has
// room (no allocation), else a new slice.
func (c *Ctx) Result(t *tensor.Tensor) []*tensor.Tensor {
	if cap(c.Results) >= 1 {
		r := c.Results[:1]
		r[0] = t
		return r
	}
	return []*tensor.Tensor{t}
}
