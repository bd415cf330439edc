package onnx

import (
	"fmt"

	"github.com/gopir/gopir/ir"
	"github.com/gopir/gopir/onnx/onnxpb"
	"github.com/gopir/gopir/ops"
	"github.com/gopir/gopir/tensor"
)

// Control flow: If becomes an "if", Loop and Scan become a "while". Their
// subgraphs become the regions' blocks; names of the enclosing graphs that
// a subgraph reads are captured, as gopir regions capture outer values.

func init() {
	registerNoFold(convIf, "If")
	registerNoFold(convLoop, "Loop")
	registerNoFold(convScan, "Scan")
}

// subgraph converts g into the block b inserts into, with g's inputs bound
// to args, and returns g's outputs as values of that block. The importer's
// position is restored afterwards.
func (n *node) subgraph(b *ir.Builder, g *onnxpb.GraphProto, label string, args []*value) ([]*ir.Value, error) {
	defer n.b.SetPos(*posOf(n))
	if g == nil {
		return nil, fmt.Errorf("missing subgraph %s", label)
	}
	s := &scope{parent: n.s, path: n.s.path + "/" + label, b: b, names: map[string]*value{}, consts: map[*tensor.Tensor]*ir.Value{}}
	if len(g.GetInput()) != len(args) {
		return nil, fmt.Errorf("subgraph %s has %d inputs, want %d", label, len(g.GetInput()), len(args))
	}
	for i, in := range g.GetInput() {
		s.names[in.GetName()] = args[i]
	}
	for _, tp := range g.GetInitializer() {
		t, err := TensorFromProto(tp, n.im.opts.Dir, n.im.host)
		if err != nil {
			return nil, fmt.Errorf("subgraph %s: initializer %q: %w", label, tp.GetName(), err)
		}
		s.names[tp.GetName()] = &value{known: n.im.keep(t)}
	}
	if err := n.im.nodes(s, g); err != nil {
		return nil, err
	}
	outs := make([]*ir.Value, len(g.GetOutput()))
	for i, o := range g.GetOutput() {
		x, ok := s.lookup(o.GetName())
		if !ok {
			return nil, fmt.Errorf("subgraph %s: output %q is computed by no node", label, o.GetName())
		}
		outs[i] = s.use(x)
	}
	return outs, nil
}

// posOf is the position the importer gave n's ops.
func posOf(n *node) *ir.Pos {
	p := ir.Pos{File: fmt.Sprintf("%s: graph %s: node %d %q (%s)", n.im.opts.File, n.s.path, n.index, n.p.GetName(), n.p.GetOpType())}
	return &p
}

func convIf(n *node) ([]*value, error) {
	cond := scalarOf(n.b, n.In(0))
	var err error
	branch := func(name string) func(*ir.Builder) []*ir.Value {
		return func(b *ir.Builder) []*ir.Value {
			if err != nil {
				return nil
			}
			var vs []*ir.Value
			vs, err = n.subgraph(b, n.Graph(name), name, nil)
			return vs
		}
	}
	res := n.b.If(cond, branch("then_branch"), branch("else_branch"))
	if err != nil {
		return nil, err
	}
	return out(res...), nil
}

// convLoop: a while carrying the iteration number, the loop-carried values
// and one stack per scan output. The condition of each iteration is the
// body's cond output and, with a trip count M, i < M; the body's cond input
// is true (the loop would not run otherwise). After the loop each stack
// becomes a tensor along a new first axis.
//
// The carried types start as the initial values' types; when the body
// yields values that do not fit them (a shape that changes per
// iteration), the loop is rebuilt with the join of both.
func convLoop(n *node) ([]*value, error) {
	body := n.Graph("body")
	if body == nil {
		return nil, fmt.Errorf("Loop has no body")
	}
	b := n.b
	var init []*ir.Value
	for i := 2; i < n.NumIn(); i++ {
		init = append(init, n.In(i))
	}
	nv := len(init)
	k := len(body.GetOutput()) - 1 - nv
	if k < 0 {
		return nil, fmt.Errorf("Loop body has %d outputs, want at least %d", len(body.GetOutput()), 1+nv)
	}
	i0 := ops.Full(b, ir.I64, 0)
	var trip *ir.Value
	c0 := ops.Full(b, ir.I1, 1)
	if n.Has(0) {
		trip = ops.Reshape(b, n.In(0))
		c0 = ops.LessThan(b, i0, trip)
	}
	if n.Has(1) {
		c0 = ops.LogicalAnd(b, c0, scalarOf(b, n.In(1)))
	}
	types := []ir.Type{ir.Scalar(ir.I64)}
	for _, v := range init {
		types = append(types, v.Type())
	}
	// An optional carried value may come back from the body as its item
	// (ONNX takes a value of type T as an optional<T> that holds it): such
	// yields are wrapped in an optional, and the loop's result is the item
	// again, as the body's output type says.
	wrap := make([]bool, 1+nv)
	scanTypes := make([]ir.Type, k)
	for j := range k {
		t, err := typeFromProto(body.GetOutput()[1+nv+j].GetType())
		if err != nil {
			t = ir.Type{} // learnt from the first build
		}
		scanTypes[j] = t
	}
	for attempt := 0; ; attempt++ {
		var stacks []*ir.Value
		for _, t := range scanTypes {
			if !t.IsValid() {
				t = ir.Scalar(ir.F32) // a guess, corrected by the next build
			}
			stacks = append(stacks, ops.StackNew(b, t))
		}
		all := append([]ir.Type(nil), types...)
		for _, s := range stacks {
			all = append(all, s.Type())
		}
		operands := append(append([]*ir.Value{c0, i0}, init...), stacks...)
		op := b.Generic("while", operands, nil, all, 1)
		blk := op.Region(0).Block()
		var args []*ir.Value
		for _, t := range all {
			args = append(args, blk.AppendArg(t))
		}
		inner := b.At(blk, -1)
		bodyArgs := []*value{{v: args[0]}, {v: ops.Full(inner, ir.I1, 1)}}
		for _, a := range args[1 : 1+nv] {
			bodyArgs = append(bodyArgs, &value{v: a})
		}
		outs, err := n.subgraph(inner, body, "body", bodyArgs)
		if err != nil {
			return nil, err
		}
		i1 := ops.Add(inner, args[0], ops.Full(inner, ir.I64, 1))
		next := scalarOf(inner, outs[0])
		if trip != nil {
			next = ops.LogicalAnd(inner, next, ops.LessThan(inner, i1, trip))
		}
		yields := []*ir.Value{next, i1}
		for j, y := range outs[1 : 1+nv] {
			if wrap[1+j] {
				y = ops.SeqConstruct(inner, y)
			}
			yields = append(yields, y)
		}
		for j := range k {
			// An item that does not fit its stack's type makes another
			// attempt (below); this one is not kept.
			if t := scanTypes[j]; t.IsValid() && outs[1+nv+j].Type().Refines(t) {
				yields = append(yields, ops.StackPush(inner, args[1+nv+j], outs[1+nv+j]))
			}
		}
		if err := b.Err(); err != nil {
			return nil, err
		}
		// Do the yields fit the carried types?
		fits := true
		for j, y := range yields[1 : 1+1+nv] {
			if !y.Type().Refines(all[j]) {
				fits = false
				if t := all[j]; !wrap[j] && isOptionalOf(t, y.Type()) {
					wrap[j] = true
					continue
				}
				jt, ok := ir.Join(y.Type(), all[j])
				if !ok {
					return nil, n.unsupported("loop-carried value %d changes from %s to %s", j, all[j], y.Type())
				}
				types[j] = jt
			}
		}
		for j := range k {
			et := outs[1+nv+j].Type()
			if !scanTypes[j].IsValid() || !et.Refines(scanTypes[j]) {
				fits = false
				if jt, ok := ir.Join(et, scanTypes[j]); ok && scanTypes[j].IsValid() {
					scanTypes[j] = jt
				} else {
					scanTypes[j] = et
				}
			}
		}
		if fits {
			inner.Yield(yields...)
			res := op.Results()
			var vals []*value
			for j, r := range res[1 : 1+nv] {
				if wrap[1+j] {
					r = ops.SeqAt(b, r, ops.Full(b, ir.I64, 0))
				}
				vals = append(vals, &value{v: r})
			}
			for j := range k {
				vals = append(vals, &value{v: ops.ConcatFromSeq(b, res[1+nv+j], 0, true)})
			}
			return vals, nil
		}
		if attempt == 3 {
			return nil, n.unsupported("loop-carried types that do not settle")
		}
		// Rebuild with the wider types: drop this attempt.
		for i := len(blk.Ops()) - 1; i >= 0; i-- {
			if err := blk.Ops()[i].Erase(); err != nil {
				return nil, err
			}
		}
		if err := op.Erase(); err != nil {
			return nil, err
		}
		for _, s := range stacks {
			if err := s.Def().Erase(); err != nil {
				return nil, err
			}
		}
	}
}

// isOptionalOf reports whether t is an optional (a stack) of sequences and
// y a sequence: a value an optional of it may take.
func isOptionalOf(t, y ir.Type) bool {
	return t.IsStack() && t.Elem.IsStack() && y.IsStack() && !y.Elem.IsStack()
}

// convScan: a while over the scan axis of the scan inputs, carrying the
// state variables and one sequence per scan output. Before opset 9 every
// tensor has a leading batch axis (and sequence_lens may cut scans short):
// each batch item is scanned on its own, for a static batch size, and the
// results are stacked again.
func convScan(n *node) ([]*value, error) {
	body := n.Graph("body")
	if body == nil {
		return nil, fmt.Errorf("Scan has no body")
	}
	m := int(n.Int("num_scan_inputs", 0))
	first := 0
	if n.Opset() < 9 {
		if n.Has(0) {
			return nil, n.unsupported("sequence_lens")
		}
		first = 1
	}
	ins := n.Ins()[first:]
	nState := len(ins) - m
	if m <= 0 || nState < 0 {
		n.fail("num_scan_inputs %d does not fit %d inputs", m, len(ins))
		return nil, nil
	}
	k := len(body.GetOutput()) - nState
	if k < 0 {
		n.fail("the body has %d outputs for %d state variables", len(body.GetOutput()), nState)
		return nil, nil
	}
	attr := func(name string, count int) []int {
		v := n.ints(n.Ints(name))
		if v == nil {
			v = make([]int, count)
		}
		if len(v) != count {
			n.fail("%s has %d values, want %d", name, len(v), count)
		}
		return v
	}
	sc := scan{
		n: n, body: body, nState: nState, k: k,
		inAxes: attr("scan_input_axes", m), inDirs: attr("scan_input_directions", m),
		outAxes: attr("scan_output_axes", k), outDirs: attr("scan_output_directions", k),
	}
	if n.Opset() < 9 {
		sc.inAxes, sc.inDirs, sc.outAxes = make([]int, m), attr("directions", m), make([]int, k)
	}
	if n.err != nil {
		return nil, nil
	}
	if n.Opset() >= 9 {
		res, err := sc.build(n.b, ins)
		if err != nil {
			return nil, err
		}
		return out(res...), nil
	}
	// Opset 8: one scan per batch item, then stack the items again.
	batch := ins[0].Type().Dims[0]
	for _, x := range ins {
		if t := x.Type(); t.Rank() == 0 || t.Dims[0] != batch {
			batch = ir.Dynamic
		}
	}
	if batch == ir.Dynamic || batch > 64 {
		return nil, n.unsupported("a batch size that is not static and small")
	}
	per := make([][]*ir.Value, len(body.GetOutput()))
	for bi := range batch {
		item := make([]*ir.Value, len(ins))
		idx := ops.Full(n.b, ir.I64, float64(bi))
		for j, x := range ins {
			item[j] = ops.Gather(n.b, x, idx, 0)
		}
		res, err := sc.build(n.b, item)
		if err != nil {
			return nil, err
		}
		for j, r := range res {
			per[j] = append(per[j], ops.Unsqueeze(n.b, r, 0))
		}
	}
	outs := make([]*ir.Value, len(per))
	for j, vs := range per {
		outs[j] = ops.Concat(n.b, 0, vs...)
	}
	return out(outs...), nil
}

// scan builds one Scan over unbatched inputs.
type scan struct {
	n                                *node
	body                             *onnxpb.GraphProto
	nState, k                        int
	inAxes, inDirs, outAxes, outDirs []int
}

// build appends the while for states followed by scan inputs, and returns
// the final states and the scan outputs.
func (sc scan) build(b *ir.Builder, ins []*ir.Value) ([]*ir.Value, error) {
	n := sc.n
	states, xs := ins[:sc.nState], ins[sc.nState:]
	trips := -1
	axes := make([]int, len(xs))
	for j, x := range xs {
		t := x.Type()
		axes[j] = n.axis(int64(sc.inAxes[j]), t.Rank())
		d := t.Dims[axes[j]]
		if d == ir.Dynamic {
			return nil, n.unsupported("a scan axis of dynamic length (%s)", t)
		}
		if trips >= 0 && d != trips {
			n.fail("scan inputs have %d and %d items", trips, d)
			return nil, n.err
		}
		trips = d
	}
	elemTypes := make([]ir.Type, sc.k)
	for j := range sc.k {
		t, err := typeFromProto(sc.body.GetOutput()[sc.nState+j].GetType())
		if err != nil {
			return nil, fmt.Errorf("body output %d: %w", sc.nState+j, err)
		}
		elemTypes[j] = t
	}
	i0 := ops.Full(b, ir.I64, 0)
	count := ops.Full(b, ir.I64, float64(trips))
	init := append([]*ir.Value{i0}, states...)
	types := []ir.Type{ir.Scalar(ir.I64)}
	for _, s := range states {
		types = append(types, s.Type())
	}
	for _, t := range elemTypes {
		st := ops.StackNew(b, t)
		init = append(init, st)
		types = append(types, st.Type())
	}
	var err error
	res := b.WhileTyped(ops.LessThan(b, i0, count), init, types, func(inner *ir.Builder, args []*ir.Value) (*ir.Value, []*ir.Value) {
		i := args[0]
		var bodyArgs []*value
		for _, s := range args[1 : 1+sc.nState] {
			bodyArgs = append(bodyArgs, &value{v: s})
		}
		for j, x := range xs {
			idx := i
			if sc.inDirs[j] != 0 {
				idx = ops.Subtract(inner, ops.Full(inner, ir.I64, float64(trips-1)), i)
			}
			bodyArgs = append(bodyArgs, &value{v: ops.Gather(inner, x, idx, axes[j])})
		}
		var outs []*ir.Value
		if outs, err = n.subgraph(inner, sc.body, "body", bodyArgs); err != nil {
			return ops.Full(inner, ir.I1, 0), args
		}
		next := []*ir.Value{ops.Add(inner, i, ops.Full(inner, ir.I64, 1))}
		next = append(next, outs[:sc.nState]...)
		for j := range sc.k {
			var pos *ir.Value // append; a reverse scan output grows at the front
			if sc.outDirs[j] != 0 {
				pos = ops.Full(inner, ir.I64, 0)
			}
			next = append(next, ops.SeqInsert(inner, args[1+sc.nState+j], outs[sc.nState+j], pos))
		}
		return ops.LessThan(inner, next[0], count), next
	})
	if err != nil {
		return nil, err
	}
	vals := append([]*ir.Value(nil), res[1:1+sc.nState]...)
	for j := range sc.k {
		axis := n.axis(int64(sc.outAxes[j]), elemTypes[j].Rank()+1)
		vals = append(vals, ops.ConcatFromSeq(b, res[1+sc.nState+j], axis, true))
	}
	return vals, nil
}
