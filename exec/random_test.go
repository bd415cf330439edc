package exec_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/gopir/gopir/exec"
	"github.com/gopir/gopir/ir"
	"github.com/gopir/gopir/memory"
	"github.com/gopir/gopir/ops"
	"github.com/gopir/gopir/tensor"
)

// progGen makes random well-typed programs over f32 tensors of one shape,
// with nested if and while, for differential testing.
type progGen struct {
	r        *rand.Rand
	shape    []int
	maxDepth int
	nfetch   int
	straight bool // no control flow
}

var unaryOps = []string{"relu", "neg", "tanh", "sigmoid", "abs"}
var binaryOps = []string{"add", "subtract", "multiply", "maximum", "minimum"}

func (g *progGen) pick(pool []*ir.Value) *ir.Value { return pool[g.r.IntN(len(pool))] }

func (g *progGen) program() *ir.Program {
	b := ir.NewBuilder(ir.NewProgram())
	pool := []*ir.Value{
		ops.Data(b, "x", ir.F32, g.shape...),
		ops.Data(b, "y", ir.F32, g.shape...),
	}
	pool = g.block(b, 0, pool, 3+g.r.IntN(6))
	g.nfetch = 1 + g.r.IntN(3)
	for i := range g.nfetch {
		ops.Fetch(b, fmt.Sprintf("out%d", i), g.pick(pool))
	}
	p, err := b.Finish()
	if err != nil {
		panic(err)
	}
	return p
}

// block appends about n ops and returns the pool extended with the new
// values.
func (g *progGen) block(b *ir.Builder, depth int, pool []*ir.Value, n int) []*ir.Value {
	pool = slices.Clone(pool)
	for range n {
		k := g.r.IntN(10)
		switch {
		case g.straight && k >= 7:
			k = g.r.IntN(7)
		case depth >= g.maxDepth && k >= 7:
			k = g.r.IntN(7)
		}
		switch {
		case k < 3:
			pool = append(pool, b.Op1(unaryOps[g.r.IntN(len(unaryOps))], nil, g.pick(pool)))
		case k < 6:
			pool = append(pool, b.Op1(binaryOps[g.r.IntN(len(binaryOps))], nil, g.pick(pool), g.pick(pool)))
		case k < 7:
			pool = append(pool, ops.Full(b, ir.F32, float64(g.r.IntN(5))-2, g.shape...))
		case k < 9:
			pool = append(pool, g.ifOp(b, depth, pool)...)
		default:
			pool = append(pool, g.whileOp(b, depth, pool)...)
		}
	}
	return pool
}

func (g *progGen) cond(b *ir.Builder, pool []*ir.Value) *ir.Value {
	sa := b.Op1("reduce_sum", ir.A("axes", []int{}, "keepdim", false), g.pick(pool))
	sb := b.Op1("reduce_sum", ir.A("axes", []int{}, "keepdim", false), g.pick(pool))
	return b.Op1("greater_than", nil, sa, sb)
}

// yields picks k values to hand out of a region: locals, captured values
// or block arguments, possibly the same one twice.
func (g *progGen) yields(pool []*ir.Value, k int) []*ir.Value {
	out := make([]*ir.Value, k)
	for i := range out {
		out[i] = g.pick(pool)
	}
	if k > 1 && g.r.IntN(4) == 0 {
		out[1] = out[0]
	}
	return out
}

func (g *progGen) ifOp(b *ir.Builder, depth int, pool []*ir.Value) []*ir.Value {
	c := g.cond(b, pool)
	k := g.r.IntN(3)
	branch := func(b *ir.Builder) []*ir.Value {
		inner := g.block(b, depth+1, pool, g.r.IntN(4))
		return g.yields(inner, k)
	}
	return b.If(c, branch, branch)
}

func (g *progGen) whileOp(b *ir.Builder, depth int, pool []*ir.Value) []*ir.Value {
	i0 := ops.Full(b, ir.I64, 0)
	n := ops.Full(b, ir.I64, float64(g.r.IntN(4)))
	one := ops.Full(b, ir.I64, 1)
	c0 := b.Op1("less_than", nil, i0, n)
	init := g.yields(pool, 1+g.r.IntN(2))
	res := b.While(c0, append([]*ir.Value{i0}, init...), func(b *ir.Builder, args []*ir.Value) (*ir.Value, []*ir.Value) {
		inner := g.block(b, depth+1, append(slices.Clone(pool), args[1:]...), g.r.IntN(4))
		i1 := b.Op1("add", nil, args[0], one)
		next := g.yields(inner, len(init))
		if len(init) == 2 && g.r.IntN(3) == 0 {
			next = []*ir.Value{args[2], args[1]} // swap
		}
		return b.Op1("less_than", nil, i1, n), append([]*ir.Value{i1}, next...)
	})
	return res[1:]
}

// reference runs a program the simple way: every value kept until the end,
// yields copied, nothing freed. It shares only the kernels with package
// exec.
func reference(t testing.TB, p *ir.Program, in map[string]*tensor.Tensor) map[string]*tensor.Tensor {
	t.Helper()
	a := memory.New(memory.Options{})
	env := map[*ir.Value]*tensor.Tensor{}
	out := map[string]*tensor.Tensor{}
	clone := func(x *tensor.Tensor) *tensor.Tensor {
		y, err := tensor.New(a, x.DType(), x.Shape()...)
		if err != nil {
			t.Fatal(err)
		}
		copy(y.Raw(), x.Raw())
		return y
	}
	var block func(b *ir.Block) []*tensor.Tensor
	block = func(b *ir.Block) []*tensor.Tensor {
		for _, op := range b.Ops() {
			args := make([]*tensor.Tensor, op.NumOperands())
			for i, v := range op.Operands() {
				args[i] = env[v]
			}
			switch op.Name() {
			case "data":
				name, _ := op.Attrs.Str("name")
				env[op.Result(0)] = clone(in[name])
			case "fetch":
				name, _ := op.Attrs.Str("name")
				out[name] = clone(args[0])
			case "yield":
				ys := make([]*tensor.Tensor, len(args))
				for i, x := range args {
					ys[i] = clone(x)
				}
				return ys
			case "if":
				r := op.Region(1)
				if args[0].Bool()[0] {
					r = op.Region(0)
				}
				for i, y := range block(r.Block()) {
					env[op.Result(i)] = y
				}
			case "while":
				body := op.Region(0).Block()
				cur := args[1:]
				for cond := args[0].Bool()[0]; cond; {
					for i, arg := range body.Args() {
						env[arg] = cur[i]
					}
					ys := block(body)
					cond, cur = ys[0].Bool()[0], ys[1:]
				}
				for i, x := range cur {
					env[op.Result(i)] = x
				}
			default:
				k, err := ops.Bind(op)
				if err != nil {
					t.Fatal(err)
				}
				res, err := k(&ops.Ctx{Alloc: a, Threads: 1}, args)
				if err != nil {
					t.Fatalf("reference: %s: %v", op, err)
				}
				for i, x := range res {
					env[op.Result(i)] = x
				}
			}
		}
		return nil
	}
	block(p.Body())
	return out
}

func sameBits(a, b *tensor.Tensor) bool {
	return a.DType() == b.DType() && slices.Equal(a.Shape(), b.Shape()) && slices.Equal(a.Raw(), b.Raw())
}

// TestRandomProgramsMatchReference runs random programs with nested if and
// while on the executor and on the reference interpreter: results must be
// identical bit for bit, and the executor must return to zero allocated
// bytes after each run.
func TestRandomProgramsMatchReference(t *testing.T) {
	n := 400
	if testing.Short() {
		n = 50
	}
	for seed := range n {
		g := &progGen{r: rand.New(rand.NewPCG(uint64(seed), 7)), shape: []int{2, 3}, maxDepth: 3}
		p := g.program()
		r := rand.New(rand.NewPCG(uint64(seed), 8))
		in := feeds{}
		for _, name := range []string{"x", "y"} {
			d := make([]float32, 6)
			for i := range d {
				d[i] = float32(r.NormFloat64())
			}
			in[name] = f32(t, d, 2, 3)
		}
		want := reference(t, p, in)
		a := newAlloc()
		x, err := exec.Compile(p, exec.Options{Alloc: a, CheckLeaks: true, Threads: 1})
		if err != nil {
			t.Fatalf("seed %d: %v\n%s", seed, err, p)
		}
		for run := range 2 {
			got, err := x.Run(context.Background(), in)
			if err != nil {
				t.Fatalf("seed %d: %v\n%s", seed, err, p)
			}
			for name, w := range want {
				if !sameBits(got[name], w) {
					t.Fatalf("seed %d run %d: %s = %v, reference %v\n%s", seed, run, name, got[name], w, p)
				}
			}
			got.Release()
			if n := allocated(a); n != 0 {
				t.Fatalf("seed %d run %d: %d bytes allocated after the run\n%s", seed, run, n, p)
			}
		}
		releaseFeeds(in)
	}
}

// liveBound computes, independently of package exec, the least peak any
// executor that frees each buffer right after its last use can reach on a
// straight-line program: at each op, the bytes of the values still needed
// plus the op's results. Fetched values stay alive to the end.
//
// With reuse, an op may also write its result into the buffer of an
// operand that dies there, as the executor and the elementwise kernels do:
// the operand is one the op lets it take over (ops.Takeable),
// it is not a feed (the caller holds those), the op uses it once, and it
// has the result's type. Then the result costs no new bytes.
func liveBound(p *ir.Program, reuse bool) int64 {
	opsList := p.Body().Ops()
	last := map[*ir.Value]int{}
	feed := map[*ir.Value]bool{}
	for i, op := range opsList {
		for _, r := range op.Results() {
			last[r] = i
			if op.Name() == "data" {
				feed[r] = true
			}
		}
		for _, v := range op.Operands() {
			last[v] = i
			if op.Name() == "fetch" {
				last[v] = len(opsList)
			}
		}
	}
	size := func(v *ir.Value) int64 {
		n := int64(v.Type().NumElements() * v.Type().DType.Size())
		return (n + 63) / 64 * 64
	}
	// donor returns the operand whose buffer op i's result can take over.
	donor := func(i int, op *ir.Op) *ir.Value {
		if !reuse || op.NumResults() != 1 {
			return nil
		}
		for _, k := range ops.Takeable(op) {
			v := op.Operand(k)
			uses := 0
			for _, w := range op.Operands() {
				if w == v {
					uses++
				}
			}
			if last[v] == i && !feed[v] && uses == 1 && v.Type().String() == op.Result(0).Type().String() {
				return v
			}
		}
		return nil
	}
	live := map[*ir.Value]bool{}
	var cur, peak int64
	for i, op := range opsList {
		if op.Name() == "data" {
			continue // feeds are the caller's
		}
		d := donor(i, op)
		for _, r := range op.Results() {
			live[r] = true
			if d != nil {
				delete(live, d) // its bytes are r's now
				continue
			}
			cur += size(r)
		}
		peak = max(peak, cur)
		for v := range live {
			if last[v] == i {
				delete(live, v)
				cur -= size(v)
			}
		}
	}
	return peak
}

// TestStraightLinePeakIsTheLivenessBound checks that on programs without
// control flow the executor's peak is exactly the liveness lower bound:
// with donation, the bound that lets an op reuse a dying operand's
// buffer; without, the plain one. Reuse must happen on some programs (and
// lower the peak on some), or the first half would test nothing new.
func TestStraightLinePeakIsTheLivenessBound(t *testing.T) {
	reusing, lower := 0, 0
	for seed := range 200 {
		g := &progGen{r: rand.New(rand.NewPCG(uint64(seed), 9)), shape: []int{7, 33}, straight: true}
		p := g.program()
		var allocs [2]int64
		for k, noDonate := range []bool{false, true} {
			in := feeds{"x": f32(t, ramp(7*33), 7, 33), "y": f32(t, ramp(7*33), 7, 33)}
			a := newAlloc()
			x, err := exec.Compile(p, exec.Options{Alloc: a, NoDonate: noDonate})
			if err != nil {
				t.Fatal(err)
			}
			res := mustRun(t, x, in)
			res.Release()
			if got, want := a.Stats().Allocated.Peak, liveBound(p, !noDonate); got != want {
				t.Fatalf("seed %d, NoDonate %v: peak %d bytes, liveness bound %d\n%s", seed, noDonate, got, want, p)
			}
			allocs[k] = a.Stats().Allocs
			releaseFeeds(in)
		}
		if allocs[0] < allocs[1] {
			reusing++
		}
		if liveBound(p, true) < liveBound(p, false) {
			lower++
		}
	}
	if reusing == 0 || lower == 0 {
		t.Fatalf("in-place reuse on %d programs, a lower bound on %d; the test exercises nothing", reusing, lower)
	}
	t.Logf("200 programs: reuse in %d, a lower peak in %d", reusing, lower)
}
