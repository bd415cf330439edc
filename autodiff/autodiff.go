package autodiff

import (
	"errors"
	"fmt"

	"github.com/gopir/gopir/ir"
	"github.com/gopir/gopir/ops"
)

// Backward appends to b, which must insert into the top level of its
// program after the forward ops, the ops that compute the gradient of loss
// with respect to each value of wrt, and returns those gradients in order.
// loss must be a float scalar; each wrt value must be a float tensor
// defined at the top level (a feed, a parameter or an intermediate). A
// value the loss does not depend on gets zeros.
func Backward(b *ir.Builder, loss *ir.Value, wrt []*ir.Value) ([]*ir.Value, error) {
	prog := b.Program()
	top := prog.Body()
	if b.Block() != top {
		return nil, errors.New("autodiff: the builder must insert into the top level of the program")
	}
	if err := checkLoss(loss, top); err != nil {
		return nil, err
	}
	for _, w := range wrt {
		if err := checkWrt(w, top); err != nil {
			return nil, err
		}
	}
	d := &differ{prog: prog, dep: dependents(prog, wrt), depth: depths(prog), captures: map[*ir.Op][]*ir.Value{}}
	s := d.newScope(nil, top, b, func(v *ir.Value) *ir.Value { return v })
	forward := append([]*ir.Op(nil), top.Ops()...)
	if i := top.IndexOf(loss.Def()); i >= 0 {
		forward = forward[:i+1]
	}
	s.addGrad(loss, ops.FullLike(b, loss, 1, ir.InvalidDType))
	if err := s.run(forward); err != nil {
		return nil, err
	}
	grads := make([]*ir.Value, len(wrt))
	for i, w := range wrt {
		if g := s.grads[w]; g != nil {
			grads[i] = g
		} else {
			grads[i] = s.zerosLike(w)
		}
	}
	if err := b.Err(); err != nil {
		return nil, fmt.Errorf("autodiff: %w", err)
	}
	return grads, nil
}

func checkLoss(loss *ir.Value, top *ir.Block) error {
	t := loss.Type()
	switch {
	case loss.Def() == nil || loss.Block() != top:
		return errors.New("autodiff: the loss must be defined at the top level of the program")
	case !t.DType.IsFloat() || t.IsStack():
		return fmt.Errorf("autodiff: the loss is %s; it must be a float scalar", t)
	case t.NumElements() != 1:
		return fmt.Errorf("autodiff: the loss is %s; it must be a scalar (one element)", t)
	}
	return nil
}

func checkWrt(w *ir.Value, top *ir.Block) error {
	t := w.Type()
	switch {
	case w.Block() != top:
		return fmt.Errorf("autodiff: cannot differentiate with respect to %s: it is not defined at the top level", describe(w))
	case !t.DType.IsFloat() || t.IsStack():
		return fmt.Errorf("autodiff: cannot differentiate with respect to %s of type %s: it is not a float tensor", describe(w), t)
	}
	return nil
}

func describe(v *ir.Value) string {
	if op := v.Def(); op != nil {
		if name, err := op.Attrs.Str("name"); err == nil {
			return fmt.Sprintf("%s %q", op.Name(), name)
		}
		return fmt.Sprintf("the result of %q at %s", op.Name(), op.Pos)
	}
	return "a block argument"
}

// differ holds what one Backward call shares across scopes.
type differ struct {
	prog     *ir.Program
	dep      map[*ir.Value]bool     // values that depend on a wrt value
	depth    map[*ir.Block]int      // how deep each forward block is nested
	captures map[*ir.Op][]*ir.Value // see captured
}

// depths returns how deep each block of p is nested; the top level is 0.
func depths(p *ir.Program) map[*ir.Block]int {
	depth := map[*ir.Block]int{p.Body(): 0}
	p.Walk(func(op *ir.Op) bool {
		for _, r := range op.Regions() {
			depth[r.Block()] = depth[op.Block()] + 1
		}
		return true
	})
	return depth
}

// differentiable reports whether gradients flow through values of type t.
func differentiable(t ir.Type) bool { return !t.IsStack() && t.DType.IsFloat() }

// scope is the backward of one forward block: where its gradient ops go,
// how forward values are reached from there, and the gradients so far.
type scope struct {
	d       *differ
	parent  *scope
	block   *ir.Block   // the forward block
	b       *ir.Builder // where the backward ops go
	resolve func(*ir.Value) *ir.Value
	grads   map[*ir.Value]*ir.Value
	loop    *loop // set in the scope of a while body
}

func (d *differ) newScope(parent *scope, block *ir.Block, b *ir.Builder, resolve func(*ir.Value) *ir.Value) *scope {
	s := &scope{d: d, parent: parent, block: block, b: b, grads: map[*ir.Value]*ir.Value{}}
	cache := map[*ir.Value]*ir.Value{}
	s.resolve = func(v *ir.Value) *ir.Value {
		if r, ok := cache[v]; ok {
			return r
		}
		r := resolve(v)
		cache[v] = r
		return r
	}
	return s
}

// addGrad sums g into the gradient of forward value v.
func (s *scope) addGrad(v, g *ir.Value) {
	if old := s.grads[v]; old != nil {
		g = ops.Add(s.b, old, g)
	}
	s.grads[v] = g
}

// zerosLike returns zeros shaped like forward value v: from its static
// type when it has one, so that nothing is kept alive for its shape.
func (s *scope) zerosLike(v *ir.Value) *ir.Value {
	if t := v.Type(); t.IsStatic() {
		return ops.Full(s.b, t.DType, 0, t.Dims...)
	}
	return ops.FullLike(s.b, s.resolve(v), 0, ir.InvalidDType)
}

// run differentiates forward ops in reverse order.
func (s *scope) run(forward []*ir.Op) error {
	for i := len(forward) - 1; i >= 0; i-- {
		op := forward[i]
		dys := make([]*ir.Value, op.NumResults())
		any := false
		for j, r := range op.Results() {
			if dys[j] = s.grads[r]; dys[j] != nil {
				any = true
			}
		}
		if !any {
			continue
		}
		var err error
		if r, ok := regionRules[op.Name()]; ok {
			err = r.backward(s, op, dys)
		} else {
			err = s.vjp(op, dys)
		}
		if err != nil {
			return err
		}
		if err := s.b.Err(); err != nil {
			return fmt.Errorf("autodiff: backward of %q at %s: %w", op.Name(), op.Pos, err)
		}
	}
	return nil
}

func (s *scope) vjp(op *ir.Op, dys []*ir.Value) error {
	need := make([]bool, op.NumOperands())
	anyNeed := false
	for i, x := range op.Operands() {
		need[i] = s.d.dep[x] && differentiable(x.Type())
		anyNeed = anyNeed || need[i]
	}
	if !anyNeed {
		return nil
	}
	def, ok := ops.Lookup(op.Name())
	if !ok {
		return fmt.Errorf("autodiff: %s: unknown op %q", op.Pos, op.Name())
	}
	if def.NoGrad {
		return nil
	}
	if def.Grad == nil {
		return fmt.Errorf("autodiff: %s: op %q has no gradient rule", op.Pos, op.Name())
	}
	// The adjoint's ops carry the position of the op they differentiate,
	// so a memory report or an error in the backward pass points at the
	// model's line, not at this one.
	prev := s.b.Pos()
	s.b.SetPos(op.Pos)
	dxs, err := def.Grad(ops.NewGradContext(s.b, op, dys, need, s.resolve))
	s.b.SetPos(prev)
	if err != nil {
		return fmt.Errorf("autodiff: %s: gradient of %q: %w", op.Pos, op.Name(), err)
	}
	for i, dx := range dxs {
		if dx != nil && i < len(need) && need[i] {
			s.addGrad(op.Operand(i), dx)
		}
	}
	return nil
}

// captured lists, in order of first use, the values defined outside op
// that ops inside its regions use and that need gradients. Each op's list
// is made once, from those of the ops nested in it, before any backward
// changes the regions, so a nest costs the sum of its lists, not the
// product of its depth and size.
func (d *differ) captured(op *ir.Op) []*ir.Value {
	if c, ok := d.captures[op]; ok {
		return c
	}
	var out []*ir.Value
	seen := map[*ir.Value]bool{}
	add := func(v *ir.Value) {
		// v is used inside op, so it is either inside op or in a block
		// around it, no deeper than op's own.
		if !seen[v] && d.dep[v] && differentiable(v.Type()) && d.depth[v.Block()] <= d.depth[op.Block()] {
			seen[v] = true
			out = append(out, v)
		}
	}
	for _, r := range op.Regions() {
		for _, inner := range r.Block().Ops() {
			for _, v := range inner.Operands() {
				add(v)
			}
			if len(inner.Regions()) > 0 {
				for _, v := range d.captured(inner) {
					add(v)
				}
			}
		}
	}
	d.captures[op] = out
	return out
}

// dynamic returns t with every dim dynamic.
func dynamic(t ir.Type) ir.Type {
	if t.IsStack() {
		return t
	}
	dims := make([]int, len(t.Dims))
	for i := range dims {
		dims[i] = ir.Dynamic
	}
	return ir.TensorOf(t.DType, dims...)
}

// before returns a builder that inserts into op's block just before op.
func (s *scope) before(op *ir.Op) *ir.Builder {
	return s.b.At(op.Block(), op.Block().IndexOf(op))
}
