package remat

import (
	"github.com/gopir/gopir/ir"
	"github.com/gopir/gopir/ops"
)

// The cost model: the work of each op for the concrete types of one
// step, from ops.Flops (two per multiply-add for matrix products and
// convolutions, one per element read or written otherwise). An "if"
// costs its costlier branch, a "while" its body times the trips it is
// planned for.

type costs struct {
	of    map[*ir.Op]int64 // one execution of each op, its regions included
	types map[*ir.Value]ir.Type
	trips int64
	step  int64
}

// measure works out the cost of every op of p for feeds of the given
// types (a feed left out has its static type) and loops of trips trips.
func measure(p *ir.Program, feeds map[string]ir.Type, trips int) *costs {
	c := &costs{of: map[*ir.Op]int64{}, types: map[*ir.Value]ir.Type{}, trips: int64(max(trips, 1))}
	for _, op := range p.Body().Ops() {
		if op.Name() == "data" {
			if name, err := op.Attrs.Str("name"); err == nil {
				if t, ok := feeds[name]; ok {
					c.types[op.Result(0)] = t
				}
			}
		}
	}
	c.step = c.block(p.Body())
	return c
}

func (c *costs) typ(v *ir.Value) ir.Type {
	if t, ok := c.types[v]; ok {
		return t
	}
	return v.Type()
}

func (c *costs) block(b *ir.Block) int64 {
	var total int64
	for _, op := range b.Ops() {
		n := c.op(op)
		c.of[op] = n
		total += n
	}
	return total
}

func (c *costs) op(op *ir.Op) int64 {
	in := make([]ir.Type, op.NumOperands())
	for i, v := range op.Operands() {
		in[i] = c.typ(v)
	}
	switch op.Name() {
	case "if":
		a, b := c.block(op.Region(0).Block()), c.block(op.Region(1).Block())
		for i, y := range op.Region(0).Block().Terminator().Operands() {
			if t := c.typ(y); t.IsStatic() && i < op.NumResults() {
				c.types[op.Result(i)] = t
			}
		}
		return max(a, b)
	case "while":
		body := op.Region(0).Block()
		for i, a := range body.Args() {
			if i+1 < len(in) {
				c.types[a] = in[i+1]
			}
		}
		n := c.block(body)
		for i, r := range op.Results() {
			if i+1 < len(in) {
				c.types[r] = in[i+1]
			}
		}
		return c.trips * n
	case "data", "parameter", "fetch", "yield":
		return 0
	}
	out, err := ops.ResultTypesOf(op, in)
	if err != nil {
		out = make([]ir.Type, op.NumResults())
		for i, r := range op.Results() {
			out[i] = r.Type()
		}
	}
	for i, r := range op.Results() {
		c.types[r] = out[i]
	}
	return ops.Flops(op, in, out)
}

// opFlops is the fixed cost of running one op, in FLOPs: the executor's
// dispatch, the kernel's setup and handoff to its goroutines, and the
// lower efficiency of a kernel on a few samples, which an op pays however
// little it computes. A split over the batch runs each op of its segment
// once per piece. On lenet's split (BenchmarkRemat's machine, 2 threads,
// about 25 FLOPs per ns over the step) 16 pieces of 4 samples took 0.5 to
// 2 µs per extra op longer than 6 pieces of 12 recomputing the same
// work: some 30,000 FLOPs.
const opFlops = 30_000

// time is the modelled cost of st over the original step: the work it
// recomputes and copies, and the fixed cost of every top-level op it
// runs beyond the original's.
func (f *fitter) time(st *state) int64 {
	return st.cost + opFlops*int64(len(st.rw.prog.Body().Ops())-len(f.a.ops))
}
