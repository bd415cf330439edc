package dist

import (
	"errors"
	"fmt"
	"sort"

	"github.com/gopir/gopir/ir"
	"github.com/gopir/gopir/ops"
)

// DefaultBucketBytes is the size at which ReduceGradients closes a bucket
// when Options.BucketBytes is 0.
const DefaultBucketBytes = 128 << 10

// Options configure ReduceGradients.
type Options struct {
	// BucketBytes: a bucket takes gradients, in the order the program
	// produces them, until it holds at least this many bytes. 0 means
	// DefaultBucketBytes; a negative value puts every gradient in a
	// bucket of its own.
	BucketBytes int64
}

// Bucket describes one bucket that ReduceGradients made.
type Bucket struct {
	Grads []int // indices into the grads argument, in bucket order
	Bytes int64
	Start *ir.Op // the all_reduce_start
	Wait  *ir.Op // the all_reduce_wait
}

// ReduceGradients makes the gradients of a data-parallel training
// program the mean over the ranks. b must insert at the end of the top
// level of a program whose backward pass (autodiff.Backward) produced
// grads, the gradients of params; it returns the reduced gradients, for
// the optimizer (and any clipping) to use in their place, and the buckets
// it made. A nil gradient stays nil.
//
// The gradients are put into buckets in the order the program produces
// them (the position of the op defining each in the top-level block; a
// gradient that leaves an if or while is produced by that op), each
// bucket closed once it holds Options.BucketBytes; a gradient that large
// by itself gets a bucket of its own, which all_reduce_wait hands back
// without a copy. Each bucket's
// all_reduce_start is inserted right after the op that produces its last
// gradient, so its sum travels while the rest of the backward pass runs;
// the all_reduce_waits are appended at b, in bucket order, before the
// ops that will read their results. A gradient of dynamic type (possible
// for values computed from a dynamic batch) is reduced as its parameter's
// static type; the run checks that the sizes agree.
//
// Every rank runs the same program, so every rank starts the same
// buckets in the same order, whichever branches of the program's ifs its
// data takes: a parameter used only in a branch a rank did not take has a
// gradient of zeros there, and it is reduced like any other.
func ReduceGradients(b *ir.Builder, params, grads []*ir.Value, opt Options) ([]*ir.Value, []Bucket, error) {
	if len(params) != len(grads) {
		return nil, nil, fmt.Errorf("dist: %d parameters and %d gradients", len(params), len(grads))
	}
	top := b.Program().Body()
	if b.Block() != top {
		return nil, nil, errors.New("dist: the builder must insert into the top level of the program")
	}
	if err := b.Err(); err != nil {
		return nil, nil, err
	}
	capBytes := opt.BucketBytes
	if capBytes == 0 {
		capBytes = DefaultBucketBytes
	}
	type item struct {
		i, pos, res int
		typ         ir.Type
	}
	var items []item
	for i, g := range grads {
		if g == nil {
			continue
		}
		if g.Def() == nil || g.Block() != top {
			return nil, nil, fmt.Errorf("dist: gradient %d is not defined at the top level of the program", i)
		}
		t := g.Type()
		if !t.IsStatic() {
			t = params[i].Type()
			if !t.IsStatic() || t.DType != g.Type().DType || t.Rank() != g.Type().Rank() {
				return nil, nil, fmt.Errorf("dist: gradient %d has type %s and its parameter %s: one must be static", i, g.Type(), params[i].Type())
			}
		}
		if !t.DType.IsFloat() {
			return nil, nil, fmt.Errorf("dist: gradient %d has type %s; gradients are f32 or f64", i, t)
		}
		items = append(items, item{i: i, pos: top.IndexOf(g.Def()), res: g.Index(), typ: t})
	}
	sort.SliceStable(items, func(x, y int) bool {
		if items[x].pos != items[y].pos {
			return items[x].pos < items[y].pos
		}
		return items[x].res < items[y].res
	})

	var buckets []Bucket
	var cur *Bucket
	var curType ir.DType
	for _, it := range items {
		n := int64(it.typ.NumElements() * it.typ.DType.Size())
		if cur != nil && (curType != it.typ.DType || n >= capBytes && cur.Bytes+n > capBytes) {
			// Another dtype; or a gradient of a bucket's size by itself,
			// which gets a bucket of its own: reduced in place, no copy.
			cur = nil
		}
		if cur == nil {
			buckets = append(buckets, Bucket{})
			cur, curType = &buckets[len(buckets)-1], it.typ.DType
		}
		cur.Grads = append(cur.Grads, it.i)
		cur.Bytes += n
		if capBytes < 0 || cur.Bytes >= capBytes {
			cur = nil
		}
	}

	types := make([]ir.Type, len(grads))
	for _, it := range items {
		types[it.i] = it.typ
	}
	out := make([]*ir.Value, len(grads))
	var prev *ir.Op
	for k := range buckets {
		bk := &buckets[k]
		vals := make([]*ir.Value, len(bk.Grads))
		at := 0
		for j, i := range bk.Grads {
			vals[j] = grads[i]
			at = max(at, top.IndexOf(grads[i].Def())+1)
		}
		if prev != nil {
			at = max(at, top.IndexOf(prev)+1)
		}
		start := ops.AllReduceStart(b.At(top, at), vals...)
		bk.Start, prev = start.Def(), start.Def()
	}
	for k := range buckets {
		bk := &buckets[k]
		ts := make([]ir.Type, len(bk.Grads))
		for j, i := range bk.Grads {
			ts[j] = types[i]
		}
		res := ops.AllReduceWait(b, bk.Start.Result(0), ts, true)
		if len(res) == len(bk.Grads) {
			bk.Wait = res[0].Def()
			for j, i := range bk.Grads {
				out[i] = res[j]
			}
		}
	}
	if err := b.Err(); err != nil {
		return nil, nil, fmt.Errorf("dist: %w", err)
	}
	return out, buckets, nil
}
