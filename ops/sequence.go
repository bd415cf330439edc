package ops

import (
	"fmt"
	"slices"

	"github.com/gopir/gopir/ir"
	"github.com/gopir/gopir/tensor"
)

// Sequences: ordered lists of tensors, held in stack values (stack<T>;
// ONNX's sequences and optionals, which are sequences of zero or one
// item). Like stack_push and stack_pop, the ops that change a sequence
// update it in place when it dies at the op and nobody else holds it, and
// otherwise copy its list of items (never their data).
//
//	seq_construct (x1, ..., xn)      -> stack<T>   T joins the operands' types
//	seq_insert    (s, x[, pos])      -> stack<T>   x at pos (default: the end)
//	seq_erase     (s[, pos])         -> stack<T>   without item pos (default: the last)
//	seq_at        (s, pos)           -> T          item pos
//	seq_length    (s)                -> i64        the number of items
//	concat_from_seq {axis, new_axis} (s) -> the items joined along axis, or
//	                                     stacked along a new axis
//	split_to_seq {axis, keepdims} (x[, split]) -> stack<T> of x's pieces along
//	                                     axis: of size 1 (and without the axis
//	                                     unless keepdims) when split is absent,
//	                                     of split's size (the last one shorter)
//	                                     for a scalar split, of the listed sizes
//	                                     for a 1-D split
//
// pos is an i32 or i64 scalar; negative positions count from the end
// (-1 is the last item); a position out of range is a kernel error.
// concat_from_seq of an empty sequence needs the item type's dims: it
// gives a tensor with 0 along the axis.

func init() {
	register(&Def{Name: "seq_construct", Stacks: true, Infer: inferSeqConstruct, Bind: bindSeqConstruct, Grad: seqNoGrad})
	register(&Def{Name: "seq_insert", Stacks: true, Donate: []int{0}, Infer: inferSeqInsert, Bind: bindSeqInsert, Grad: seqNoGrad})
	register(&Def{Name: "seq_erase", Stacks: true, Donate: []int{0}, Infer: inferSeqErase, Bind: bindSeqErase, Grad: seqNoGrad})
	register(&Def{Name: "seq_at", Stacks: true, Infer: inferSeqAt, Bind: bindSeqAt, Grad: seqNoGrad})
	register(&Def{Name: "seq_length", Stacks: true, Infer: inferSeqLength, Bind: bindSeqLength, NoGrad: true})
	register(&Def{Name: "concat_from_seq", Stacks: true, Infer: inferConcatFromSeq, Bind: bindConcatFromSeq, Grad: seqNoGrad})
	register(&Def{Name: "split_to_seq", Stacks: true, Infer: inferSplitToSeq, Bind: bindSplitToSeq, Grad: seqNoGrad})
}

// seqNoGrad refuses to differentiate through a sequence: autodiff does not
// carry gradients in stacks, and saying so beats a silent zero.
func seqNoGrad(g *GradContext) ([]*ir.Value, error) {
	return nil, fmt.Errorf("gradients through sequences (%q) are not implemented", g.Op.Name())
}

func seqWant(t ir.Type) error {
	if !t.IsStack() {
		return fmt.Errorf("operand 0 is %s, not a sequence", t)
	}
	return nil
}

func seqPosType(t ir.Type) error {
	if t.IsStack() || t.Rank() != 0 || !t.DType.IsInt() {
		return fmt.Errorf("position is %s, want an i32 or i64 scalar", t)
	}
	return nil
}

func inferSeqConstruct(in []ir.Type, _ ir.Attrs) ([]ir.Type, error) {
	if len(in) == 0 {
		return nil, fmt.Errorf("takes at least 1 operand")
	}
	t := in[0]
	for _, u := range in[1:] {
		j, ok := ir.JoinAnyRank(t, u)
		if !ok {
			return nil, fmt.Errorf("operands %s and %s cannot share a sequence", t, u)
		}
		t = j
	}
	return []ir.Type{ir.StackOf(t)}, nil
}

func bindSeqConstruct(*ir.Op) (Kernel, error) {
	return func(c *Ctx, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
		s := tensor.NewStack()
		for _, x := range in {
			s.Push(x.Retain())
		}
		return c.Result(s), nil
	}, nil
}

func inferSeqInsert(in []ir.Type, _ ir.Attrs) ([]ir.Type, error) {
	if len(in) != 2 && len(in) != 3 {
		return nil, fmt.Errorf("takes 2 or 3 operands, has %d", len(in))
	}
	if err := seqWant(in[0]); err != nil {
		return nil, err
	}
	if len(in) == 3 {
		if err := seqPosType(in[2]); err != nil {
			return nil, err
		}
	}
	j, ok := ir.JoinAnyRank(*in[0].Elem, in[1])
	if !ok {
		return nil, fmt.Errorf("cannot insert %s into %s", in[1], in[0])
	}
	return []ir.Type{ir.StackOf(j)}, nil
}

// seqPos reads a position operand for a sequence of n items; end is
// whether n itself is a valid position (an insertion after the last).
func seqPos(p *tensor.Tensor, n int, end bool) (int, error) {
	i := int(p.Float64At(0))
	if i < 0 {
		i += n
	}
	hi := n - 1
	if end {
		hi = n
	}
	if i < 0 || i > hi {
		return 0, fmt.Errorf("position %d is out of range for a sequence of %d items", int(p.Float64At(0)), n)
	}
	return i, nil
}

func bindSeqInsert(*ir.Op) (Kernel, error) {
	return func(c *Ctx, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
		pos := in[0].StackLen()
		if len(in) == 3 {
			var err error
			if pos, err = seqPos(in[2], in[0].StackLen(), true); err != nil {
				if c.Owns(0) {
					in[0].Release()
				}
				return nil, err
			}
		}
		s := exclusiveStack(c, in[0])
		s.StackInsert(pos, in[1].Retain())
		return c.Result(s), nil
	}, nil
}

func inferSeqErase(in []ir.Type, _ ir.Attrs) ([]ir.Type, error) {
	if len(in) != 1 && len(in) != 2 {
		return nil, fmt.Errorf("takes 1 or 2 operands, has %d", len(in))
	}
	if err := seqWant(in[0]); err != nil {
		return nil, err
	}
	if len(in) == 2 {
		if err := seqPosType(in[1]); err != nil {
			return nil, err
		}
	}
	return []ir.Type{in[0]}, nil
}

func bindSeqErase(*ir.Op) (Kernel, error) {
	return func(c *Ctx, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
		n := in[0].StackLen()
		pos, err := n-1, error(nil)
		if len(in) == 2 {
			pos, err = seqPos(in[1], n, false)
		} else if n == 0 {
			err = fmt.Errorf("cannot erase from an empty sequence")
		}
		if err != nil {
			if c.Owns(0) {
				in[0].Release()
			}
			return nil, err
		}
		s := exclusiveStack(c, in[0])
		s.StackRemove(pos).Release()
		return c.Result(s), nil
	}, nil
}

func inferSeqAt(in []ir.Type, _ ir.Attrs) ([]ir.Type, error) {
	if err := wantOperands(in, 2); err != nil {
		return nil, err
	}
	if err := seqWant(in[0]); err != nil {
		return nil, err
	}
	if err := seqPosType(in[1]); err != nil {
		return nil, err
	}
	return []ir.Type{*in[0].Elem}, nil
}

func bindSeqAt(*ir.Op) (Kernel, error) {
	return func(c *Ctx, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
		i, err := seqPos(in[1], in[0].StackLen(), false)
		if err != nil {
			return nil, err
		}
		return c.Result(in[0].StackItem(i).Retain()), nil
	}, nil
}

func inferSeqLength(in []ir.Type, _ ir.Attrs) ([]ir.Type, error) {
	if err := wantOperands(in, 1); err != nil {
		return nil, err
	}
	if err := seqWant(in[0]); err != nil {
		return nil, err
	}
	return []ir.Type{ir.Scalar(ir.I64)}, nil
}

func bindSeqLength(*ir.Op) (Kernel, error) {
	return func(c *Ctx, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
		t, err := tensor.Scalar(c.Alloc, tensor.I64, float64(in[0].StackLen()))
		if err != nil {
			return nil, err
		}
		return c.Result(t), nil
	}, nil
}

func inferConcatFromSeq(in []ir.Type, attrs ir.Attrs) ([]ir.Type, error) {
	if err := wantOperands(in, 1); err != nil {
		return nil, err
	}
	if err := seqWant(in[0]); err != nil {
		return nil, err
	}
	elem := *in[0].Elem
	if elem.IsStack() {
		return nil, fmt.Errorf("cannot concatenate a sequence of sequences")
	}
	newAxis, axis, err := concatFromSeqAttrs(attrs, elem.Rank())
	if err != nil {
		return nil, err
	}
	dims := slices.Clone(elem.Dims)
	if newAxis {
		dims = slices.Insert(dims, axis, ir.Dynamic)
	} else {
		dims[axis] = ir.Dynamic
	}
	return []ir.Type{ir.TensorOf(elem.DType, dims...)}, nil
}

// concatFromSeqAttrs reads new_axis (default false) and axis, normalized
// for items of rank r (a new axis may also go after the last).
func concatFromSeqAttrs(attrs ir.Attrs, r int) (bool, int, error) {
	newAxis := false
	if attrs.Has("new_axis") {
		var err error
		if newAxis, err = attrs.Bool("new_axis"); err != nil {
			return false, 0, err
		}
	}
	a, err := attrs.Int("axis")
	if err != nil {
		return false, 0, err
	}
	n := int64(r)
	if newAxis {
		n++
	}
	if a < -n || a >= n {
		return false, 0, fmt.Errorf("axis %d is out of range for %d dims", a, n)
	}
	if a < 0 {
		a += n
	}
	return newAxis, int(a), nil
}

func bindConcatFromSeq(op *ir.Op) (Kernel, error) {
	elem := *op.Operand(0).Type().Elem
	newAxis, axis, err := concatFromSeqAttrs(op.Attrs, elem.Rank())
	if err != nil {
		return nil, err
	}
	dt := elem.DType
	return func(c *Ctx, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
		s := in[0]
		n := s.StackLen()
		if n == 0 {
			if !elem.IsStatic() {
				return nil, fmt.Errorf("cannot concatenate an empty sequence of %s, whose dims are not all known", elem)
			}
			dims := slices.Clone(elem.Dims)
			if newAxis {
				dims = slices.Insert(dims, axis, 0)
			} else {
				dims[axis] = 0
			}
			y, err := c.New(dt, dims)
			if err != nil {
				return nil, err
			}
			return c.Result(y), nil
		}
		items := make([]*tensor.Tensor, n)
		for i := range n {
			x := s.StackItem(i)
			if newAxis {
				v, err := x.Reshape(slices.Insert(slices.Clone(x.Shape()), axis, 1)...)
				if err != nil {
					releaseAll(items[:i])
					return nil, err
				}
				x = v
			} else {
				x = x.Retain()
			}
			items[i] = x
		}
		y, err := shpConcat(c, dt, items, axis)
		releaseAll(items)
		if err != nil {
			return nil, err
		}
		return c.Result(y), nil
	}, nil
}

// splitToSeqAttrs reads axis (default 0) for x of rank r and keepdims
// (default true).
func splitToSeqAttrs(attrs ir.Attrs, r int) (int, bool, error) {
	axis := int64(0)
	if attrs.Has("axis") {
		var err error
		if axis, err = attrs.Int("axis"); err != nil {
			return 0, false, err
		}
	}
	a, err := normAxis(int(axis), r)
	if err != nil {
		return 0, false, err
	}
	keep := true
	if attrs.Has("keepdims") {
		if keep, err = attrs.Bool("keepdims"); err != nil {
			return 0, false, err
		}
	}
	return a, keep, nil
}

func inferSplitToSeq(in []ir.Type, attrs ir.Attrs) ([]ir.Type, error) {
	if len(in) != 1 && len(in) != 2 {
		return nil, fmt.Errorf("takes 1 or 2 operands, has %d", len(in))
	}
	x := in[0]
	if x.IsStack() || x.Unranked || x.Rank() == 0 {
		return nil, fmt.Errorf("cannot split %s", x)
	}
	axis, keep, err := splitToSeqAttrs(attrs, x.Rank())
	if err != nil {
		return nil, err
	}
	dims := slices.Clone(x.Dims)
	switch {
	case len(in) == 1 && keep:
		dims[axis] = 1
	case len(in) == 1:
		dims = slices.Delete(dims, axis, axis+1)
	default:
		if s := in[1]; s.IsStack() || s.Rank() > 1 || !s.DType.IsInt() {
			return nil, fmt.Errorf("split is %s, want an i32 or i64 scalar or 1-D tensor", s)
		}
		dims[axis] = ir.Dynamic
	}
	return []ir.Type{ir.StackOf(ir.TensorOf(x.DType, dims...))}, nil
}

func bindSplitToSeq(op *ir.Op) (Kernel, error) {
	axis, keep, err := splitToSeqAttrs(op.Attrs, op.Operand(0).Type().Rank())
	if err != nil {
		return nil, err
	}
	return func(c *Ctx, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
		x := in[0]
		d := x.Shape()[axis]
		var sizes []int
		switch {
		case len(in) == 1:
			for range d {
				sizes = append(sizes, 1)
			}
		case in[1].Rank() == 0:
			k := int(in[1].Float64At(0))
			if k <= 0 {
				return nil, fmt.Errorf("split size %d must be positive", k)
			}
			for at := 0; at < d; at += k {
				sizes = append(sizes, min(k, d-at))
			}
		default:
			total := 0
			for i := range in[1].Len() {
				k := int(in[1].Float64At(i))
				if k < 0 {
					return nil, fmt.Errorf("split size %d is negative", k)
				}
				sizes = append(sizes, k)
				total += k
			}
			if total != d {
				return nil, fmt.Errorf("split sizes %v add up to %d, the axis has %d", sizes, total, d)
			}
		}
		s := tensor.NewStack()
		at := 0
		for _, k := range sizes {
			piece, err := splitPiece(c, x, axis, at, k)
			if err != nil {
				s.Release()
				return nil, err
			}
			if len(in) == 1 && !keep {
				v, err := piece.Reshape(slices.Delete(slices.Clone(piece.Shape()), axis, axis+1)...)
				piece.Release()
				if err != nil {
					s.Release()
					return nil, err
				}
				piece = v
			}
			s.Push(piece)
			at += k
		}
		return c.Result(s), nil
	}, nil
}

// splitPiece copies x[..., at:at+k, ...] (along axis) into a new tensor.
func splitPiece(c *Ctx, x *tensor.Tensor, axis, at, k int) (*tensor.Tensor, error) {
	shape := slices.Clone(x.Shape())
	d := shape[axis]
	shape[axis] = k
	y, err := c.New(ir.DType(x.DType()), shape)
	if err != nil {
		return nil, err
	}
	es := x.DType().Size()
	inner := shpSize(shape[axis+1:]) * es
	outer := shpSize(shape[:axis])
	src, dst := x.Raw(), y.Raw()
	for o := range outer {
		copy(dst[o*k*inner:(o+1)*k*inner], src[(o*d+at)*inner:(o*d+at+k)*inner])
	}
	return y, nil
}

func releaseAll(ts []*tensor.Tensor) {
	for _, t := range ts {
		if t != nil {
			t.Release()
		}
	}
}

// SeqConstruct appends a sequence of xs.
func SeqConstruct(b *ir.Builder, xs ...*ir.Value) *ir.Value {
	return b.Op1("seq_construct", nil, xs...)
}

// SeqInsert appends s with x inserted at pos (nil: at the end).
func SeqInsert(b *ir.Builder, s, x, pos *ir.Value) *ir.Value {
	if pos == nil {
		return b.Op1("seq_insert", nil, s, x)
	}
	return b.Op1("seq_insert", nil, s, x, pos)
}

// SeqErase appends s without item pos (nil: the last).
func SeqErase(b *ir.Builder, s, pos *ir.Value) *ir.Value {
	if pos == nil {
		return b.Op1("seq_erase", nil, s)
	}
	return b.Op1("seq_erase", nil, s, pos)
}

// SeqAt appends item pos of s.
func SeqAt(b *ir.Builder, s, pos *ir.Value) *ir.Value { return b.Op1("seq_at", nil, s, pos) }

// SeqLength appends the number of items of s.
func SeqLength(b *ir.Builder, s *ir.Value) *ir.Value { return b.Op1("seq_length", nil, s) }

// SplitToSeq appends the sequence of x's pieces along axis (see
// split_to_seq); split may be nil.
func SplitToSeq(b *ir.Builder, x, split *ir.Value, axis int, keepdims bool) *ir.Value {
	attrs := ir.A("axis", axis, "keepdims", keepdims)
	if split == nil {
		return b.Op1("split_to_seq", attrs, x)
	}
	return b.Op1("split_to_seq", attrs, x, split)
}

// ConcatFromSeq appends the items of s joined along axis or, with
// newAxis, stacked along a new axis.
func ConcatFromSeq(b *ir.Builder, s *ir.Value, axis int, newAxis bool) *ir.Value {
	return b.Op1("concat_from_seq", ir.A("axis", axis, "new_axis", newAxis), s)
}
