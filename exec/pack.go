package exec

import (
	"github.com/gopir/gopir/memory"
	"github.com/gopir/gopir/ops"
	"github.com/gopir/gopir/tensor"
)

// The pack cache: an op whose kernel can read an operand in a packed form
// (ops.Compute.Pack: matmul's y or a float32 convolution's weights, in
// the panels its GEMM reads) gets that form from the executable when the
// operand is a parameter of a program that writes no store value (an
// inference program) and Options.PackCache leaves room. The executable
// packs the parameter the first time, keeps the copy in its
// instruction's packSlot and hands it out on later runs while the
// parameter's buffer is the same allocation at the same version
// (tensor.Storage.Touch): a parameter replaced in the store, or written in
// place by a run of another program (an optimizer step: the executor
// touches what ops with Writes update) or by Go code that touches it, is
// packed again. The copies are allocator memory, counted in
// mem_allocated, tagged "pack", and held until they go stale or
// ReleasePacked; the planner plans them (Plan.Packed). A copy also names
// its form (ops.Pack.Form: a convolution's orientation, which the batch
// decides); shapes that want another form pack the parameter again.

// packSlot is one instruction's packed copy of its parameter operand.
type packSlot struct {
	param string         // the parameter, for the copy's tag and the planner
	blk   *memory.Block  // the parameter's buffer when packed; nil: invalid
	id    uint64         // its allocation number (the handle is never reused for a parameter, but the number says it)
	ver   uint64         // its storage's version
	form  uint64         // the layout packed (ops.Pack.Form)
	t     *tensor.Tensor // the packed copy, or nil
}

// valid reports whether ps holds x as it is now, packed in the given form.
func (ps *packSlot) valid(x *tensor.Tensor, form uint64) bool {
	s := x.Storage()
	blk := s.Block()
	return ps.t != nil && ps.blk != nil && ps.blk == blk && ps.id == blk.ID() && ps.ver == s.Version() && ps.form == form
}

// usePack gives the kernel of in the packed form of its operand x,
// packing it first when the slot holds none of x as it is now. Without
// room in the cache or in the allocator, the kernel runs without.
func (e *Executable) usePack(in *instr, x *tensor.Tensor) {
	ps, form := in.pack, in.shapes.form
	if ps.valid(x, form) {
		e.kctx.SetPacked(ps.t.Raw())
		return
	}
	e.dropPack(ps)
	n := in.shapes.pack
	if n <= 0 || x.Storage().Block() == nil || e.packBytes+e.round(n) > e.opts.PackCache {
		return
	}
	if e.tags {
		e.alloc.SetTag(memory.Tag{Op: "pack", Value: ps.param, Pos: in.tag.Pos, Step: e.kctx.Run})
	}
	t, err := tensor.New(e.alloc, tensor.I64, int((n+7)/8))
	if e.tags {
		tag := in.tag
		tag.Step = e.kctx.Run
		e.alloc.SetTag(tag)
	}
	if err != nil {
		return // no room (a limit): the kernel packs as it goes
	}
	// Held before it is filled: should the packer panic, the run's
	// unwinding leaves the copy in the cache, invalid, and counted.
	ps.t = t
	e.packBytes += e.round(n)
	in.comp.Pack.Fn(in.shapes.shape, x, t.Raw())
	s := x.Storage()
	ps.blk, ps.id, ps.ver, ps.form = s.Block(), s.Block().ID(), s.Version(), form
	e.kctx.SetPacked(t.Raw())
}

// dropPack releases the copy ps holds.
func (e *Executable) dropPack(ps *packSlot) {
	if ps.t == nil {
		return
	}
	e.packBytes -= e.round(int64(ps.t.Bytes()))
	ps.t.Release()
	ps.t, ps.blk = nil, nil
}

func (e *Executable) round(n int64) int64 {
	al := e.alloc.Options().Alignment
	return (n + al - 1) &^ (al - 1)
}

// PackedBytes is the allocator bytes the executable holds in packed
// copies of parameters (Options.PackCache), as the allocator counts them.
func (e *Executable) PackedBytes() int64 {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.packBytes
}

// ReleasePacked releases every packed copy of a parameter the executable
// holds, bringing the allocator back to the store's bytes; the next run
// packs again what it uses.
func (e *Executable) ReleasePacked() {
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, ps := range e.packs {
		e.dropPack(ps)
	}
}

// packForm is pk's form for operands of these shapes (0 without Form).
func packForm(pk *ops.Pack, shapes [][]int) uint64 {
	if pk.Form == nil {
		return 0
	}
	return pk.Form(shapes)
}
