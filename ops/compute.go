package ops

import (
	"fmt"
	"slices"
	"sync/atomic"
	"unsafe"

	"github.com/gopir/gopir/ir"
	"github.com/gopir/gopir/tensor"
)

// Compute is an op's kernel in destination-passing form: the kernel
// writes into buffers the executor gives it and never allocates. For
// operands of given shapes the op's Infer hook gives its results' dtypes
// and shapes and Work its workspace, so the memory of a run is known
// before any kernel runs (the planner in package exec computes it).
//
// The executor, for each result i:
//   - makes it a view of operand View[i] (same storage, the inferred
//     shape) when View[i] >= 0: the kernel leaves it alone;
//   - or hands it the buffer of the first operand listed in InPlace[i]
//     that dies at this op (it decides when it compiles the program), that
//     nobody else holds and that has the result's dtype and shape: the
//     kernel must then read each element before it writes it;
//   - or allocates a new tensor of the inferred dtype and shape.
//
// It then gives the kernel a workspace of Work(shapes, threads) bytes
// (see Scratch), runs Fn, and frees the workspace.
type Compute struct {
	// Fn computes the results into out. in are the operands, which it must
	// not keep or release (an operand handed to a result is out's). On
	// error the executor releases out.
	Fn func(c *Ctx, in, out []*tensor.Tensor) error
	// Work returns the workspace bytes Fn needs for operands of these
	// shapes when Fn runs with Ctx.Threads = threads; nil means none. It
	// must depend on nothing else (not on operand values), and most
	// kernels ignore threads. Kernels that give each of their goroutines
	// scratch of its own (the convolutions) take more with more threads:
	// an executable's thread count is fixed when it is compiled (its
	// Options.Threads, GOMAXPROCS for 0), so the executor and the planner
	// know it as well as the shapes.
	Work func(shapes [][]int, threads int) int64
	// View, if set, has one entry per result: the operand the result is a
	// view of, or -1.
	View []int
	// InPlace, if set, has one entry per result: the operands whose buffer
	// it may take over, in order of preference.
	InPlace [][]int
	// Pack, if set, lets Fn read one operand in a form prepared once and
	// kept between runs (see Pack).
	Pack *Pack
}

// Pack describes an operand that a kernel can use in a packed form — the
// panels its GEMM reads — when the operand is constant from run to run:
// a parameter, in a program that does not update the store (inference).
// The executor keeps the packed copy of such an operand, on the run's
// allocator, while the operand's buffer and version stay the same (see
// exec.Options.PackCache), and hands it to Fn through Ctx.Packed; Fn must
// give the same results without it (Packed returns nil when there is no
// copy: no room, another program, or an operand that is not a parameter).
type Pack struct {
	// Operand is the operand that may come packed.
	Operand int
	// Bytes is the size of the packed form for operands of these shapes:
	// the operand's own plus panel padding, or 16/9 of it and more for a
	// 3×3 filter transformed for Winograd's products; 0 when Fn has no
	// use for one. Like Work it depends on nothing else, so the planner knows
	// it from shapes.
	Bytes func(shapes [][]int) int64
	// Form, if set, names the layout Fn writes for operands of these
	// shapes, when it depends on more than the packed operand's shape (a
	// convolution packs its weights for the orientation its batch
	// chooses): a copy held for another form is packed again. nil: one
	// layout per operand shape.
	Form func(shapes [][]int) uint64
	// Fn writes the packed form of x, the operand, for operands of these
	// shapes into dst (Bytes long, aligned to 64 bytes).
	Fn func(shapes [][]int, x *tensor.Tensor, dst []byte)
}

// SetPacked gives c the packed form of the operand the next Compute
// kernel's Pack names (the executor calls it; nil for none).
func (c *Ctx) SetPacked(b []byte) { c.packed = b }

// Packed returns the packed form of the operand Compute.Pack names, or nil
// when the executor has none for this call.
func (c *Ctx) Packed() []byte { return c.packed }

// workAlign is the alignment of each piece Scratch hands out.
const workAlign = 64

// SetWork gives c the workspace of the next Compute kernel (the executor
// calls it; nil for none).
func (c *Ctx) SetWork(ws []byte) { c.work, c.workUsed = ws, 0 }

// Scratch returns n elements of type T from the workspace of the running
// Compute kernel, 64-byte aligned and not zeroed. The kernel's Work must
// have asked for them (WorkBytes adds them up): running out is a bug in
// the op and panics.
func Scratch[T any](c *Ctx, n int) []T {
	if n == 0 {
		return nil
	}
	var z T
	size := n * int(unsafe.Sizeof(z))
	start := (c.workUsed + workAlign - 1) &^ (workAlign - 1)
	if start+size > len(c.work) {
		panic(fmt.Sprintf("ops: Scratch of %d bytes at %d overruns a workspace of %d bytes: the op's Work is wrong", size, start, len(c.work)))
	}
	c.workUsed = start + size
	return unsafe.Slice((*T)(unsafe.Pointer(&c.work[start])), n)
}

// WorkBytes is the workspace that Scratch calls for the given element
// counts and sizes (pairs of count, element size) take together.
func WorkBytes(pairs ...int) int64 {
	var total int64
	for i := 0; i+1 < len(pairs); i += 2 {
		total = (total + workAlign - 1) &^ (workAlign - 1)
		total += int64(pairs[i]) * int64(pairs[i+1])
	}
	return total
}

// ResultTypes returns the types of op's results for operands of the
// shapes of in, from its Infer hook: static types, which say the dtype and
// shape of each result. types, if it has room, holds the operand types.
func ResultTypes(op *ir.Op, in []*tensor.Tensor, types []ir.Type) ([]ir.Type, error) {
	types = types[:0]
	for _, x := range in {
		types = append(types, ir.Type{DType: ir.DType(x.DType()), Dims: x.Shape()})
	}
	return ResultTypesOf(op, types)
}

// ResultTypesOf is ResultTypes for operands of the given static types.
func ResultTypesOf(op *ir.Op, types []ir.Type) ([]ir.Type, error) {
	d, ok := defs[op.Name()]
	if !ok {
		return nil, fmt.Errorf("unknown op %q", op.Name())
	}
	out, err := d.Infer(types, op.Attrs)
	if err != nil {
		return nil, err
	}
	for i, t := range out {
		if !t.IsStatic() {
			return nil, &ValueDependentError{Op: op.Name(), Result: i, Type: t}
		}
	}
	return out, nil
}

// ValueDependentError says that the shape of an op's result depends on
// the values of its operands, not only on their shapes (nonzero's count,
// a reshape to a shape read from a tensor): Infer leaves dims dynamic even
// for operands of static shapes. Such an op cannot have Compute, and the
// memory planner cannot size its result.
type ValueDependentError struct {
	Op     string
	Result int
	Type   ir.Type // as Infer gives it for the operands' static types
}

func (e *ValueDependentError) Error() string {
	return fmt.Sprintf("the shape of result %d of %q (%s) depends on the values of its operands, not only on their shapes", e.Result, e.Op, e.Type)
}

// bindCompute makes a Kernel of an op with Compute, for callers outside
// the executor (tests, tools): it allocates what the executor would, takes
// over an owned operand only when nobody else holds it (as kernels with
// Donate do), and releases owned operands it did not use. Like the
// executor, it runs the Infer hook and Work again only when the operands'
// dtypes or shapes (or the thread count) change. It returns with c.Owned
// as it found it, so that a caller may run it again with the same
// donations.
func bindCompute(op *ir.Op, d *Def) (Kernel, error) {
	comp, err := d.Compute(op)
	if err != nil {
		return nil, err
	}
	var last atomic.Pointer[boundShapes]
	run := func(c *Ctx, in []*tensor.Tensor) (outs []*tensor.Tensor, err error) {
		bs := last.Load()
		if !bs.matches(in, c.Threads) {
			if bs, err = newBoundShapes(op, &comp, in, c.Threads); err != nil {
				releaseOwned(c, in, nil)
				return nil, fmt.Errorf("%s: %w", op.Name(), err)
			}
			last.Store(bs)
		}
		rt := bs.types
		if cap(c.Results) >= len(rt) {
			outs = c.Results[:len(rt)]
			clear(outs)
		} else {
			outs = make([]*tensor.Tensor, len(rt))
		}
		made := outs // a failing return sets outs to nil before this runs
		defer func() {
			if err != nil {
				releaseAll(made)
				clear(made)
				outs = nil
			}
		}()
		var takenBuf [8]bool
		taken := takenBuf[:min(len(in), len(takenBuf))]
		if len(in) > len(takenBuf) {
			taken = make([]bool, len(in))
		}
		for i, t := range rt {
			switch {
			case comp.View != nil && comp.View[i] >= 0:
				outs[i], err = in[comp.View[i]].Reshape(t.Dims...)
			case takeFrom(c, in, comp.InPlace, i, t, taken) >= 0:
				j := takeFrom(c, in, comp.InPlace, i, t, taken)
				outs[i], taken[j] = in[j], true
				c.Disown(j)
			default:
				outs[i], err = tensor.New(c.Alloc, tensor.DType(t.DType), t.Dims...)
			}
			if err != nil {
				releaseOwned(c, in, taken)
				return nil, err
			}
		}
		var ws *tensor.Tensor
		if n := bs.work; n > 0 {
			if ws, err = tensor.New(c.Alloc, tensor.I64, int((n+7)/8)); err != nil {
				releaseOwned(c, in, taken)
				return nil, err
			}
			c.SetWork(ws.Raw())
		}
		err = comp.Fn(c, in, outs)
		c.SetWork(nil)
		if ws != nil {
			ws.Release()
		}
		releaseOwned(c, in, taken)
		return outs, err
	}
	return func(c *Ctx, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
		owned := c.Owned
		outs, err := run(c, in)
		c.Owned = owned // not deferred: after a panic, Owned says what is still owned
		return outs, err
	}, nil
}

// boundShapes is what bindCompute's kernel derives from its operands'
// dtypes and shapes and the thread count: the results' types and the
// workspace. Kernels only read it, so calls at the same time may share it.
type boundShapes struct {
	key     []int // per operand: dtype, rank, dims
	threads int
	types   []ir.Type
	work    int64
}

func newBoundShapes(op *ir.Op, comp *Compute, in []*tensor.Tensor, threads int) (*boundShapes, error) {
	types, err := ResultTypes(op, in, nil)
	if err != nil {
		return nil, err
	}
	for i, t := range types { // they may alias the operands' shapes
		types[i].Dims = slices.Clone(t.Dims)
	}
	bs := &boundShapes{threads: threads, types: types}
	shapes := make([][]int, len(in))
	for i, x := range in {
		shapes[i] = x.Shape()
		bs.key = append(bs.key, int(x.DType()), x.Rank())
		bs.key = append(bs.key, shapes[i]...)
	}
	if comp.Work != nil {
		bs.work = comp.Work(shapes, threads)
	}
	return bs, nil
}

// matches reports whether bs was made for operands of in's dtypes and
// shapes and for threads.
func (bs *boundShapes) matches(in []*tensor.Tensor, threads int) bool {
	if bs == nil || bs.threads != threads {
		return false
	}
	k := bs.key
	for _, x := range in {
		s := x.Shape()
		if len(k) < 2+len(s) || k[0] != int(x.DType()) || k[1] != len(s) {
			return false
		}
		for i, d := range s {
			if k[2+i] != d {
				return false
			}
		}
		k = k[2+len(s):]
	}
	return len(k) == 0
}

// takeFrom returns the first operand listed for result i in inPlace that
// the kernel owns, nobody else holds, is not taken yet and has type t, or
// -1.
func takeFrom(c *Ctx, in []*tensor.Tensor, inPlace [][]int, i int, t ir.Type, taken []bool) int {
	if inPlace == nil {
		return -1
	}
	for _, j := range inPlace[i] {
		x := in[j]
		if c.Owns(j) && !taken[j] && x.Refs() == 1 && ir.DType(x.DType()) == t.DType && slices.Equal(x.Shape(), t.Dims) {
			return j
		}
	}
	return -1
}

// releaseOwned releases the operands the kernel owns, except those taken
// over by results.
func releaseOwned(c *Ctx, in []*tensor.Tensor, taken []bool) {
	for i, x := range in {
		if c.Owns(i) && (taken == nil || !taken[i]) {
			c.Disown(i)
			x.Release()
		}
	}
}

// Takeable lists the operands of op whose buffers a result may take over
// when they die at op: those its Compute's InPlace names, or for an op with
// Bind those its Def.Donate names (the kernel then decides). The planner
// and tests use it.
func Takeable(op *ir.Op) []int {
	d, ok := defs[op.Name()]
	if !ok {
		return nil
	}
	if d.Compute == nil {
		return d.Donate
	}
	comp, err := d.Compute(op)
	if err != nil {
		return nil
	}
	var out []int
	for _, cands := range comp.InPlace {
		for _, j := range cands {
			if !slices.Contains(out, j) {
				out = append(out, j)
			}
		}
	}
	slices.Sort(out)
	return out
}
