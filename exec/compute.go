package exec

import (
	"slices"

	"github.com/gopir/gopir/ir"
	"github.com/gopir/gopir/ops"
	"github.com/gopir/gopir/tensor"
)

// Instructions of ops with ops.Compute: the executor allocates their
// results and workspace, takes over dying operands' buffers for results
// that may reuse them, and makes views, so that kernels never allocate and
// a run's memory follows from shapes alone (see the planner).

// shapeCache holds what an instruction's operand shapes decide: its
// results' types (from the op's Infer hook) and its workspace. Training
// steps feed the same shapes every run, so the hook runs once.
type shapeCache struct {
	valid bool
	key   []int // rank, then dims, of each operand
	types []ir.Type
	shape [][]int // operand shapes, for Work
	work  int64
	pack  int64     // bytes of the packed operand (ops.Compute.Pack), with a pack slot
	form  uint64    // and its form (ops.Pack.Form)
	scr   []ir.Type // scratch for the operand types given to Infer
}

func (sc *shapeCache) matches(args []*tensor.Tensor) bool {
	if !sc.valid {
		return false
	}
	k := sc.key
	for _, x := range args {
		s := x.Shape()
		if len(k) <= len(s) || k[0] != len(s) {
			return false
		}
		for i, d := range s {
			if k[1+i] != d {
				return false
			}
		}
		k = k[1+len(s):]
	}
	return len(k) == 0
}

// resultTypes returns the results' types and the workspace for args, for
// kernels that run with the given threads (fixed for an executable, so
// the cache need not hold it).
func (in *instr) resultTypes(args []*tensor.Tensor, threads int) ([]ir.Type, int64, error) {
	sc := &in.shapes
	if sc.matches(args) {
		return sc.types, sc.work, nil
	}
	sc.valid = false
	types, err := ops.ResultTypes(in.op, args, sc.scr)
	if err != nil {
		return nil, 0, in.errorf("%w", err)
	}
	sc.key, sc.shape = sc.key[:0], sc.shape[:0]
	for _, x := range args {
		s := x.Shape()
		sc.key = append(sc.key, len(s))
		sc.key = append(sc.key, s...)
		sc.shape = append(sc.shape, slices.Clone(s))
	}
	// Infer may hand back an operand's dims (a unary op's result has x's
	// type): those alias the operand's header, which a later run may
	// recycle for another tensor (tensor.Pool), so the cache keeps copies.
	sc.types, sc.work = ownDims(sc.types[:0], types), 0
	if in.comp.Work != nil {
		sc.work = in.comp.Work(sc.shape, threads)
	}
	sc.pack, sc.form = 0, 0
	if in.pack != nil {
		sc.pack, sc.form = in.comp.Pack.Bytes(sc.shape), packForm(in.comp.Pack, sc.shape)
	}
	sc.valid = true
	return sc.types, sc.work, nil
}

// ownDims appends to dst the types with dims of their own.
func ownDims(dst, types []ir.Type) []ir.Type {
	for _, t := range types {
		t.Dims = slices.Clone(t.Dims)
		dst = append(dst, t)
	}
	return dst
}

// compute runs an instruction of an op with Compute.
func (e *Executable) compute(in *instr) error {
	args := e.args[:len(in.inp)]
	for i, p := range in.inp {
		args[i] = *p
	}
	err := e.computeWith(in, args)
	touchWritten(in, args)
	for i := range args { // not clear(args): a runtime call costs more for one or two
		args[i] = nil
	}
	return err
}

func (e *Executable) computeWith(in *instr, args []*tensor.Tensor) error {
	types, work, err := in.resultTypes(args, e.threads)
	if err != nil {
		return err
	}
	if e.tags {
		tag := in.tag
		tag.Step = e.kctx.Run
		e.alloc.SetTag(tag)
	}
	outs := e.results[:len(types)]
	fail := func(err error) error {
		e.kctx.SetPacked(nil)
		for i, t := range outs {
			if t != nil {
				t.Release()
				outs[i] = nil
			}
		}
		return &OpError{Op: in.op.Name(), Pos: in.op.Pos, Err: err}
	}
	var taken uint64
	for i, t := range types {
		switch j := in.takes(i, args, t, taken); {
		case in.comp.View != nil && in.comp.View[i] >= 0:
			outs[i], err = e.pool.Reshape(args[in.comp.View[i]], t.Dims...)
		case j >= 0:
			// The operand dies here and nobody else holds it: its buffer
			// becomes the result's, and its slot lets go of it.
			outs[i], *in.inp[j] = args[j], nil
			taken |= 1 << uint(j)
			if e.tags {
				if blk := outs[i].Storage().Block(); blk != nil {
					e.alloc.Retag(blk)
				}
			}
		default:
			outs[i], err = e.pool.New(e.alloc, tensor.DType(t.DType), t.Dims...)
		}
		if err != nil {
			return fail(err)
		}
	}
	if in.pack != nil {
		e.cur = in // a packer that panics is this op's kernel: its results are unwound
		e.usePack(in, args[in.comp.Pack.Operand])
		e.cur = nil
	}
	if work > 0 {
		e.workDims[0] = int((work + 7) / 8) // a variadic list would be a Go allocation per call
		if e.work, err = e.pool.New(e.alloc, tensor.I64, e.workDims[:]...); err != nil {
			return fail(err)
		}
		e.kctx.SetWork(e.work.Raw())
	}
	e.kctx.Begin(0)
	e.cur = in
	err = in.comp.Fn(&e.kctx, args, outs)
	e.cur = nil
	e.releaseWork()
	if err != nil {
		return fail(err)
	}
	for i, t := range outs {
		*in.outp[i] = t
		outs[i] = nil
	}
	return nil
}

// takes returns the operand whose buffer result i takes over: the first
// one the op allows (ops.Compute.InPlace) that the executor donated (it
// dies here, see computeDonations), is not taken yet, nobody else holds,
// and has the result's type t; or -1.
func (in *instr) takes(i int, args []*tensor.Tensor, t ir.Type, taken uint64) int {
	if in.donate == 0 || in.comp.InPlace == nil {
		return -1
	}
	for _, j := range in.comp.InPlace[i] {
		bit := uint64(1) << uint(j)
		if in.donate&bit == 0 || taken&bit != 0 {
			continue
		}
		if x := args[j]; x.Refs() == 1 && ir.DType(x.DType()) == t.DType && slices.Equal(x.Shape(), t.Dims) {
			return j
		}
	}
	return -1
}

// releaseWork frees the running kernel's workspace.
func (e *Executable) releaseWork() {
	e.kctx.SetWork(nil)
	e.kctx.SetPacked(nil)
	if e.work != nil {
		e.work.Release()
		e.work = nil
	}
}

// computeDonations picks the operands of a Compute instruction that may
// give their buffers to results: those ops.Compute.InPlace names, when
// they belong to this block's frame, die at this instruction and appear
// once among its operands.
func (c *compiler) computeDonations(in *instr, bc *blockCode, at int, lastUse []int) uint64 {
	if c.e.opts.NoDonate || in.comp.InPlace == nil {
		return 0
	}
	var mask uint64
	for _, cands := range in.comp.InPlace {
		for _, j := range cands {
			if j < 0 || j >= len(in.in) || j >= 64 {
				continue
			}
			if r := in.in[j]; r.blk == bc && lastUse[r.slot] == at && appearsOnce(in.in, j) {
				mask |= 1 << uint(j)
			}
		}
	}
	return mask
}

func appearsOnce(in []ref, j int) bool {
	for k, other := range in {
		if k != j && other == in[j] {
			return false
		}
	}
	return true
}
