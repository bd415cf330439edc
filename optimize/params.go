package optimize

import (
	"fmt"
	"slices"

	"github.com/gopir/gopir/exec"
	"github.com/gopir/gopir/ir"
	"github.com/gopir/gopir/memory"
	"github.com/gopir/gopir/tensor"
)

// Params are the parameter values the passes read and the folded ones
// they add, in a store of their own: it holds a reference to each of the
// user's tensors (shared, not copied) and owns the tensors the passes
// make, so the user's store is never written. Compile the optimized
// program with Store(); Release when done.
type Params struct {
	store *exec.Store
	alloc *memory.Allocator
}

// NewParams returns Params that share the tensors of user (nil: none);
// folded values are allocated on alloc (nil: a new allocator).
func NewParams(user *exec.Store, alloc *memory.Allocator) *Params {
	if alloc == nil {
		alloc = memory.New(memory.Options{})
	}
	s := exec.NewStore()
	if user != nil {
		for _, n := range user.Names() {
			t, _ := user.Get(n)
			s.Set(n, t.Retain())
		}
	}
	return &Params{store: s, alloc: alloc}
}

// Store is the store to compile the optimized program with.
func (p *Params) Store() *exec.Store { return p.store }

// Release drops every reference the Params hold.
func (p *Params) Release() { p.store.Release() }

// value returns the value of parameter name when it is known, of the
// given type.
func (p *Params) value(name string, typ ir.Type) (*tensor.Tensor, bool) {
	if p == nil {
		return nil, false
	}
	t, ok := p.store.Get(name)
	if !ok || ir.DType(t.DType()) != typ.DType || !slices.Equal(t.Shape(), typ.Dims) {
		return nil, false
	}
	return t, true
}

// add stores a new tensor of type typ holding vals (rounded to its dtype)
// under a fresh name made from base, one neither the store nor the
// program (taken) uses, and returns the name.
func (p *Params) add(base string, typ ir.Type, vals []float64, taken map[string]bool) (string, error) {
	t, err := tensor.New(p.alloc, tensor.DType(typ.DType), typ.Dims...)
	if err != nil {
		return "", err
	}
	switch t.DType() {
	case tensor.F32:
		d := t.F32()
		for i, v := range vals {
			d[i] = float32(v)
		}
	default:
		copy(t.F64(), vals)
	}
	name := base
	for i := 2; ; i++ {
		if _, held := p.store.Get(name); !held && !taken[name] {
			break
		}
		name = fmt.Sprintf("%s#%d", base, i)
	}
	p.store.Set(name, t)
	taken[name] = true
	return name, nil
}

// Prune drops the parameters prog does not read, so that the tensors the
// passes folded away can be freed once their other holders let go.
func (p *Params) Prune(prog *ir.Program) {
	used := map[string]bool{}
	prog.Walk(func(op *ir.Op) bool {
		if op.Name() == "parameter" {
			if n, err := op.Attrs.Str("name"); err == nil {
				used[n] = true
			}
		}
		return true
	})
	for _, n := range p.store.Names() {
		if !used[n] {
			p.store.Delete(n)
		}
	}
}
