package remat

import (
	"slices"

	"github.com/gopir/gopir/ir"
	"github.com/gopir/gopir/ops"
)

// Early updates. A training step updates every parameter after the whole
// backward pass, so every gradient is alive from the op that makes it to
// the end of the step: at the peak of a split's backward pieces lenet
// holds its dense layers' gradients (230 KB) beside the pieces. An update that runs as soon as its
// gradient is complete and nothing left reads the parameter it writes
// frees that gradient there. The updates compute the same bits in either
// place (each reads its own parameter, gradient and state, and the step's
// learning rate and count), so a fitted step may move them.
//
// hoistUpdates moves each top-level op of b that updates state in place
// (ops.Def.Writes: the optimizer's updates, the step count) to right after
// the last op it must follow, but not before the op at index from (the
// first of the backward pass): the ops that make what it reads, those that
// read or write what it writes (a view of it included), those that write
// what it reads, and any op with regions, a random stream keyed by its
// position, or a collective. The parameter ops that only updates read
// move with the first of them. With grads, so does an op that makes
// what only updates read (a weight's gradient), to right after what it
// reads is made: the input gradient that reads the weight then runs after
// it, and the update right after that, so that the weight's gradient is
// not alive beside both the layer's input and its input gradient. It
// returns the ops it moved: the updates and gradients placed earlier and
// those parameter ops.
func hoistUpdates(b *ir.Block, from int, grads bool) (map[*ir.Op]bool, error) {
	all := b.Ops()
	if from < 0 || from >= len(all) {
		return nil, nil
	}
	movable := map[*ir.Op]bool{}
	for _, op := range all[from:] {
		if updates(op) && len(op.Regions()) == 0 && !ops.Collective(op) && !ops.Random(op) && op != b.Terminator() {
			movable[op] = true
		}
	}
	if len(movable) == 0 {
		return nil, nil
	}
	// users: the top-level ops that read each top-level value.
	users := map[*ir.Value][]*ir.Op{}
	for _, op := range all {
		walkOp(op, func(o *ir.Op) {
			for _, v := range o.Operands() {
				if v != nil && v.Block() == b {
					users[v] = append(users[v], op)
				}
			}
		})
	}
	// onlyUpdatesRead: every result of op is read, and only by movable
	// updates.
	onlyUpdatesRead := func(op *ir.Op) bool {
		for _, r := range op.Results() {
			if len(users[r]) == 0 {
				return false
			}
			for _, u := range users[r] {
				if !movable[u] {
					return false
				}
			}
		}
		return true
	}
	// held: leaves (no operands, no effects) that updates alone read.
	held := map[*ir.Op]bool{}
	for _, op := range all {
		if op.NumOperands() > 0 || len(op.Regions()) > 0 || ops.Random(op) || movable[op] || op.NumResults() == 0 {
			continue
		}
		if d, ok := ops.Lookup(op.Name()); !ok || len(d.Writes) > 0 {
			continue
		}
		held[op] = onlyUpdatesRead(op)
	}
	// gradOf: pure ops that updates alone read (with grads).
	gradOf := map[*ir.Op]bool{}
	for _, op := range all[from:] {
		if !grads || !recomputable(op) || ops.Random(op) || op.NumResults() == 0 {
			continue
		}
		gradOf[op] = onlyUpdatesRead(op)
	}
	aliases := viewsOf(all)
	order := make([]*ir.Op, 0, len(all))
	placed := map[*ir.Op]bool{}
	place := func(op *ir.Op, at int) {
		order = append(order[:at], append([]*ir.Op{op}, order[at:]...)...)
		placed[op] = true
	}
	lowest, moved := 0, map[*ir.Op]bool{}
	for i, op := range all {
		if i == from {
			lowest = len(order)
		}
		switch {
		case held[op]:
			continue
		case gradOf[op]:
			at := len(order)
			for at > lowest && (held[order[at-1]] || !mustPrecede(order[at-1], op, aliases)) {
				at--
			}
			if at < len(order) {
				moved[op] = true
			}
			place(op, at)
			continue
		case !movable[op]:
			place(op, len(order))
			continue
		}
		at := len(order)
		for at > lowest && (held[order[at-1]] || !mustFollow(op, order[at-1], aliases)) {
			at--
		}
		if at < len(order) {
			moved[op] = true
		}
		for _, u := range op.Operands() {
			d := u.Def()
			if d == nil || !held[d] {
				continue
			}
			if placed[d] {
				j := slices.Index(order, d)
				if j < at {
					continue
				}
				order = slices.Delete(order, j, j+1)
			}
			place(d, at)
			moved[d] = true
			at++
		}
		place(op, at)
	}
	if len(moved) == 0 {
		return nil, nil
	}
	if err := b.Reorder(order); err != nil {
		return nil, err
	}
	return moved, nil
}

// updates reports whether op updates an operand in place (ops.Def.Writes).
func updates(op *ir.Op) bool {
	d, ok := ops.Lookup(op.Name())
	return ok && len(d.Writes) > 0
}

// mustFollow reports whether update op must stay after op x.
func mustFollow(op, x *ir.Op, aliases map[*ir.Value]any) bool {
	if len(x.Regions()) > 0 || ops.Random(x) || ops.Collective(x) {
		return true
	}
	for _, u := range op.Operands() {
		if u.Def() == x {
			return true
		}
	}
	d, _ := ops.Lookup(op.Name())
	writes := map[any]bool{}
	for _, j := range d.Writes {
		if j < op.NumOperands() {
			writes[aliases[op.Operand(j)]] = true
		}
	}
	reads := map[any]bool{}
	for _, u := range op.Operands() {
		reads[aliases[u]] = true
	}
	for _, u := range x.Operands() {
		if writes[aliases[u]] {
			return true // x reads (or writes) what op writes
		}
	}
	if dx, ok := ops.Lookup(x.Name()); ok {
		for _, j := range dx.Writes {
			if j < x.NumOperands() && (reads[aliases[x.Operand(j)]] || writes[aliases[x.Operand(j)]]) {
				return true // x writes what op reads
			}
		}
	}
	return false
}

// mustPrecede reports whether op x must stay before pure op g: it makes
// what g reads, writes it, or is a barrier (regions, a random stream, a
// collective).
func mustPrecede(x, g *ir.Op, aliases map[*ir.Value]any) bool {
	if len(x.Regions()) > 0 || ops.Random(x) || ops.Collective(x) {
		return true
	}
	reads := map[any]bool{}
	for _, u := range g.Operands() {
		if u.Def() == x {
			return true
		}
		reads[aliases[u]] = true
	}
	if dx, ok := ops.Lookup(x.Name()); ok {
		for _, j := range dx.Writes {
			if j < x.NumOperands() && reads[aliases[x.Operand(j)]] {
				return true
			}
		}
	}
	return false
}

// viewsOf maps each top-level value of ops to the storage it may share:
// a parameter by name (two parameter ops of one name share it), a view
// (ops.Compute.View) or a result of an op that allocates its own (Bind,
// which may return a view) the storage of its operand, any other value
// itself.
func viewsOf(all []*ir.Op) map[*ir.Value]any {
	key := map[*ir.Value]any{}
	for _, op := range all {
		for _, r := range op.Results() {
			key[r] = storageKey(r)
		}
		d, ok := ops.Lookup(op.Name())
		if !ok || op.NumOperands() == 0 || len(op.Regions()) > 0 {
			continue
		}
		switch {
		case d.Compute != nil:
			c, err := d.Compute(op)
			if err != nil || c.View == nil {
				continue
			}
			for i, j := range c.View {
				if j >= 0 && j < op.NumOperands() && i < op.NumResults() {
					key[op.Result(i)] = key[op.Operand(j)]
				}
			}
		case d.Bind != nil && op.NumResults() == 1:
			key[op.Result(0)] = key[op.Operand(0)]
		}
	}
	return key
}
