package ops

import (
	"errors"
	"fmt"

	"github.com/gopir/gopir/ir"
	"github.com/gopir/gopir/kernels"
	"github.com/gopir/gopir/tensor"
)

// Collective ops: the communication of data-parallel training, as ops of
// the program, so that the executor owns and frees their buffers and the
// memory log and leak checks see them like any other.
//
//	all_reduce       (x) {mean}              -> y        y = Σ over the ranks of x (÷ ranks with mean)
//	all_reduce_start (g1, …, gk)             -> bucket   the gᵢ flattened one after another (1-D; g1's type for k = 1); starts its sum
//	all_reduce_wait  (bucket) {types, mean}  -> (r1, …, rk)
//
// Every operand is f32 or f64, and all operands of one op share a dtype.
// All three are destination-passing kernels (Compute): the executor
// allocates every buffer they use from Infer's types, so the memory
// planner and the memory log count them like any other. all_reduce
// blocks until every rank has contributed; y takes over x when x dies
// there. all_reduce_start copies its operands into the bucket (for one
// operand that dies there and nobody shares, the operand's buffer is
// the bucket, without a copy), starts the sum of the bucket over the
// ranks in place and returns at once, so that the ops after it (the
// rest of a backward pass) run while the sum travels; the bucket is read
// by one all_reduce_wait and nothing else (the verifier checks both
// ends), which waits for the sum and returns the parts of the bucket as
// tensors of the types in its types attribute (a list of static tensor
// types whose element counts add up to the bucket's), divided by the
// number of ranks with mean: new tensors, or, for a bucket of one part,
// a view of the bucket (divided in place, without a copy). mean
// defaults to false.
//
// The ranks are reached through Ctx.Comm (exec.Options.Comm); running a
// collective op without one is an error. Every rank must run the same
// collective ops in the same order with operands of the same sizes: the
// i-th collective of each rank meets the i-th of every other.
//
// The gradient of all_reduce is all_reduce of the gradient (with the same
// mean): y on rank q depends on x on every rank r, so the cotangent of x
// on rank r is the sum over q of the cotangents of y. This is what makes
// statistics reduced in the forward pass (synchronized batch norm, a
// detector's positive count) differentiate correctly across the ranks.
// all_reduce_start and all_reduce_wait are placed after the backward pass
// by package dist and refuse to be differentiated.

// Communicator is how collective kernels reach the other ranks of a
// data-parallel job: an MPI communicator (package dist over package mpi)
// or the in-process ranks of dist.Local.
type Communicator interface {
	// Rank is this process's number in [0, Size).
	Rank() int
	// Size is the number of ranks.
	Size() int
	// StartAllReduceF32 begins the element-wise sum of buf over every
	// rank, in place, and returns at once. buf must not be touched until
	// the request's Wait has returned; then it holds the sum, the same
	// on every rank.
	StartAllReduceF32(buf []float32) (Request, error)
	// StartAllReduceF64 is StartAllReduceF32 for float64s.
	StartAllReduceF64(buf []float64) (Request, error)
}

// Request is a collective operation in flight.
type Request interface {
	// Wait blocks until the operation is complete on this rank. It may be
	// called only once.
	Wait() error
}

// Tester is a Request that can be asked, without blocking, whether it is
// complete. MPI moves a non-blocking collective forward only while the
// process is inside MPI, so the executor tests the buckets in flight
// between instructions (Ctx.Progress): that is what lets their
// communication overlap the rest of the backward pass.
type Tester interface {
	Test() (done bool, err error)
}

// pendingReduce is a bucket being summed: the kernel context holds a
// reference to it until the sum is complete, so that its bytes are never
// reused while another process still writes them.
type pendingReduce struct {
	bucket *tensor.Tensor
	req    Request
}

// Settle waits for every all-reduce that all_reduce_start began and no
// all_reduce_wait finished (after a run failed between the two) and
// releases its bucket; it returns the first error. The executor calls it
// at the end of every run, so that a failed run leaves no buffer behind
// and no transfer into freed memory.
func (c *Ctx) Settle() error {
	var first error
	for i, p := range c.pending {
		if err := p.req.Wait(); err != nil && first == nil {
			first = err
		}
		p.bucket.Release()
		c.pending[i] = pendingReduce{}
	}
	c.pending = c.pending[:0]
	return first
}

// Pending is the number of all-reduces started and not yet waited for.
func (c *Ctx) Pending() int { return len(c.pending) }

// Progress lets the all-reduces in flight move forward: it tests each
// one whose request is a Tester, until one is not complete yet. The
// executor calls it after every instruction while one is in flight.
// Errors are left for the wait to report.
func (c *Ctx) Progress() {
	for _, p := range c.pending {
		t, ok := p.req.(Tester)
		if !ok {
			return
		}
		if done, err := t.Test(); !done || err != nil {
			return
		}
	}
}

func init() {
	always := func(*ir.Op) bool { return true }
	register(&Def{Name: "all_reduce", Infer: inferAllReduce, Compute: bindAllReduce, Grad: gradAllReduce, Collective: always})
	register(&Def{Name: "all_reduce_start", Infer: inferAllReduceStart, Verify: verifyAllReduceStart, Compute: bindAllReduceStart, Grad: noGradCollective, Collective: always})
	register(&Def{Name: "all_reduce_wait", Infer: inferAllReduceWait, Verify: verifyAllReduceWait, Compute: bindAllReduceWait, Grad: noGradCollective, Collective: always})
}

// Collective reports whether op exchanges data with the other ranks of a
// data-parallel job (Def.Collective): the ops of this file, and batch
// norm synchronized over the ranks. Every rank must run such ops the same
// number of times in the same order, so a pass that moves or repeats
// work (package remat) leaves them where they are.
func Collective(op *ir.Op) bool {
	d, ok := defs[op.Name()]
	return ok && d.Collective != nil && d.Collective(op)
}

// errNoComm is the error of a collective op run without a communicator.
var errNoComm = errors.New("no communicator: collective ops run in a data-parallel job (exec.Options.Comm)")

func collFloat(what string, t ir.Type) error {
	if !t.DType.IsFloat() || t.IsStack() {
		return fmt.Errorf("%s %s must be an f32 or f64 tensor", what, t)
	}
	return nil
}

func collMean(attrs ir.Attrs) (bool, error) { return ewOptBool(attrs, "mean", false) }

func inferAllReduce(in []ir.Type, attrs ir.Attrs) ([]ir.Type, error) {
	if err := wantOperands(in, 1); err != nil {
		return nil, err
	}
	if err := collFloat("x", in[0]); err != nil {
		return nil, err
	}
	if _, err := collMean(attrs); err != nil {
		return nil, err
	}
	return []ir.Type{in[0]}, nil
}

func inferAllReduceStart(in []ir.Type, _ ir.Attrs) ([]ir.Type, error) {
	if len(in) == 0 {
		return nil, errors.New("takes at least one operand")
	}
	total := 0
	for i, t := range in {
		if err := collFloat(fmt.Sprintf("operand %d", i), t); err != nil {
			return nil, err
		}
		if t.DType != in[0].DType {
			return nil, fmt.Errorf("operand %d is %s and operand 0 %s: a bucket holds one dtype", i, t, in[0])
		}
		if total >= 0 && t.IsStatic() {
			total += t.NumElements()
		} else {
			total = ir.Dynamic
		}
	}
	if len(in) == 1 {
		return []ir.Type{in[0]}, nil // the operand itself, which it may take over
	}
	return []ir.Type{ir.TensorOf(in[0].DType, total)}, nil
}

// collTypes decodes all_reduce_wait's types attribute: static tensor types.
func collTypes(attrs ir.Attrs) ([]ir.Type, error) {
	a, _ := attrs.Get("types")
	l, ok := a.(ir.List)
	if !ok || len(l) == 0 {
		return nil, fmt.Errorf("attribute types must be a non-empty list of tensor types, got %v", a)
	}
	out := make([]ir.Type, len(l))
	for i, x := range l {
		ta, ok := x.(ir.TypeAttr)
		if !ok || !ta.Type.IsStatic() || ta.Type.IsStack() {
			return nil, fmt.Errorf("attribute types: element %d (%v) must be a static tensor type", i, x)
		}
		out[i] = ta.Type
	}
	return out, nil
}

func inferAllReduceWait(in []ir.Type, attrs ir.Attrs) ([]ir.Type, error) {
	if err := wantOperands(in, 1); err != nil {
		return nil, err
	}
	b := in[0]
	if err := collFloat("bucket", b); err != nil {
		return nil, err
	}
	types, err := collTypes(attrs)
	if err != nil {
		return nil, err
	}
	if b.Rank() != 1 && len(types) > 1 {
		return nil, fmt.Errorf("bucket %s of %d parts must be 1-D", b, len(types))
	}
	if _, err := collMean(attrs); err != nil {
		return nil, err
	}
	total := 0
	for i, t := range types {
		if t.DType != b.DType {
			return nil, fmt.Errorf("attribute types: element %d is %s, the bucket %s", i, t, b)
		}
		total += t.NumElements()
	}
	if b.IsStatic() && b.NumElements() != total {
		return nil, fmt.Errorf("bucket %s holds %d elements, the types add up to %d", b, b.NumElements(), total)
	}
	return types, nil
}

func verifyAllReduceWait(op *ir.Op) error {
	if op.NumOperands() != 1 {
		return nil
	}
	if d := op.Operand(0).Def(); d == nil || d.Name() != "all_reduce_start" {
		return errors.New("the bucket must be the result of an \"all_reduce_start\"")
	}
	return nil
}

func verifyAllReduceStart(op *ir.Op) error {
	if u := op.Result(0).Uses(); len(u) != 1 || u[0].Op.Name() != "all_reduce_wait" {
		return errors.New("the bucket must be used once, by an \"all_reduce_wait\"")
	}
	return nil
}

func noGradCollective(g *GradContext) ([]*ir.Value, error) {
	return nil, fmt.Errorf("%q cannot be differentiated: gradients are reduced after the backward pass", g.Op.Name())
}

func gradAllReduce(g *GradContext) ([]*ir.Value, error) {
	mean, err := collMean(g.Op.Attrs)
	if err != nil {
		return nil, err
	}
	return []*ir.Value{AllReduce(g.B, g.DY[0], mean)}, nil
}

// allReduceF64 sums buf over the ranks in place, blocking: the kernels
// of synchronized batch norm use it.
func (c *Ctx) allReduceF64(buf []float64) error {
	req, err := c.Comm.StartAllReduceF64(buf)
	if err != nil {
		return err
	}
	return req.Wait()
}

// collStart starts the sum of t's elements (f32 or f64) over the ranks.
func collStart(c *Ctx, t *tensor.Tensor) (Request, error) {
	switch t.DType() {
	case tensor.F32:
		return c.Comm.StartAllReduceF32(t.F32())
	case tensor.F64:
		return c.Comm.StartAllReduceF64(t.F64())
	}
	return nil, fmt.Errorf("cannot reduce a %s tensor", t.Type())
}

// collDivide writes dst = src[off:off+len(dst)] / n elementwise (one
// dtype, src 1-D or of dst's length with off 0).
func collDivide(dst, src *tensor.Tensor, off, n int) {
	switch dst.DType() {
	case tensor.F32:
		d, s, k := dst.F32(), src.F32(), float32(n)
		s = s[off : off+len(d)]
		for i := range d {
			d[i] = s[i] / k
		}
	case tensor.F64:
		d, s, k := dst.F64(), src.F64(), float64(n)
		s = s[off : off+len(d)]
		for i := range d {
			d[i] = s[i] / k
		}
	}
}

// bindAllReduce: y takes over a dying x, or gets a copy of it, and is
// summed in place.
func bindAllReduce(op *ir.Op) (Compute, error) {
	mean, err := collMean(op.Attrs)
	if err != nil {
		return Compute{}, err
	}
	return Compute{
		Fn: func(c *Ctx, in, out []*tensor.Tensor) error {
			if c.Comm == nil {
				return errNoComm
			}
			y := out[0]
			if y != in[0] {
				kernels.CopyInto(y.Raw(), in[0].Raw(), c.Threads)
			}
			// Even an empty x takes part: every rank must make the same calls.
			req, err := collStart(c, y)
			if err == nil {
				err = req.Wait()
			}
			if err != nil {
				return err
			}
			if mean {
				collDivide(y, y, 0, c.Comm.Size())
			}
			return nil
		},
		InPlace: [][]int{{0}},
	}, nil
}

// bindAllReduceStart: a bucket of one operand takes over the operand when
// it dies here and nobody shares it (Compute.InPlace); otherwise the
// executor allocates the bucket and the operands are copied into it.
func bindAllReduceStart(op *ir.Op) (Compute, error) {
	var inPlace [][]int
	if op.NumOperands() == 1 {
		inPlace = [][]int{{0}}
	}
	return Compute{
		Fn: func(c *Ctx, in, out []*tensor.Tensor) error {
			if c.Comm == nil {
				return errNoComm
			}
			bucket := out[0]
			if len(in) != 1 || bucket != in[0] {
				raw, off := bucket.Raw(), 0
				for _, x := range in {
					n := len(x.Raw())
					kernels.CopyInto(raw[off:off+n], x.Raw(), c.Threads)
					off += n
				}
			}
			req, err := collStart(c, bucket)
			if err != nil {
				return err
			}
			c.pending = append(c.pending, pendingReduce{bucket: bucket.Retain(), req: req})
			return nil
		},
		InPlace: inPlace,
	}, nil
}

// bindAllReduceWait: the result of a bucket of one part is the bucket
// itself, reshaped (Compute.View), which the kernel divides in place with
// mean: nothing else reads a bucket (verifyAllReduceStart) and nothing
// else holds its storage but the pending sum, which the wait ends. The
// results of a bucket of several parts are new tensors.
func bindAllReduceWait(op *ir.Op) (Compute, error) {
	mean, err := collMean(op.Attrs)
	if err != nil {
		return Compute{}, err
	}
	types, err := collTypes(op.Attrs)
	if err != nil {
		return Compute{}, err
	}
	var view []int
	if len(types) == 1 {
		view = []int{0}
	}
	return Compute{
		Fn: func(c *Ctx, in, out []*tensor.Tensor) error {
			bucket := in[0]
			k := -1
			for i, p := range c.pending {
				if p.bucket.Storage() == bucket.Storage() {
					k = i
					break
				}
			}
			if k < 0 {
				return errors.New("the bucket is not one that all_reduce_start began in this run")
			}
			p := c.pending[k]
			c.pending = append(c.pending[:k], c.pending[k+1:]...)
			err := p.req.Wait()
			p.bucket.Release()
			if err != nil {
				return err
			}
			size := 1
			if mean {
				size = c.Comm.Size()
			}
			if view != nil {
				if size > 1 {
					collDivide(out[0], out[0], 0, size)
				}
				return nil
			}
			off := 0
			for _, r := range out {
				collDivide(r, bucket, off, size)
				off += r.Len()
			}
			return nil
		},
		View: view,
	}, nil
}

// AllReduce appends the sum (with mean, the mean) of x over the ranks.
func AllReduce(b *ir.Builder, x *ir.Value, mean bool) *ir.Value {
	return b.Op1("all_reduce", ir.A("mean", mean), x)
}

// AllReduceStart appends the start of the sum of a bucket made of xs
// over the ranks and returns the bucket, for AllReduceWait.
func AllReduceStart(b *ir.Builder, xs ...*ir.Value) *ir.Value {
	return b.Op1("all_reduce_start", nil, xs...)
}

// AllReduceWait appends the wait for bucket's sum and returns its parts
// as tensors of the given static types (divided by the number of ranks
// with mean).
func AllReduceWait(b *ir.Builder, bucket *ir.Value, types []ir.Type, mean bool) []*ir.Value {
	l := make(ir.List, len(types))
	for i, t := range types {
		l[i] = ir.TypeAttr{Type: t}
	}
	return b.Op("all_reduce_wait", ir.Attrs{{Name: "types", Value: l}, {Name: "mean", Value: ir.Bool(mean)}}, bucket).Results()
}
