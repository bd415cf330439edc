package exec_test

import (
	"context"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/gopir/gopir/exec"
	"github.com/gopir/gopir/ir"
	"github.com/gopir/gopir/ops"
	"github.com/gopir/gopir/tensor"
)

// mixGen makes random programs over f32 and i1 values of several mutually
// broadcastable shapes, with views (reshape, assign), parameters, fetches
// in the middle of the program, stacks and nested if and while: every way for a
// buffer to have a second holder when an op could update it in place.
type mixGen struct {
	r     *rand.Rand
	depth int
	nf    int
	R, C  int // the shapes are RxC, C, 1xC, Rx1 and scalars
}

func (g *mixGen) pickT(pool []*ir.Value, dt ir.DType) *ir.Value {
	var c []*ir.Value
	for _, v := range pool {
		if v.Type().DType == dt {
			c = append(c, v)
		}
	}
	return c[g.r.IntN(len(c))]
}

func (g *mixGen) pickType(pool []*ir.Value, typ ir.Type) *ir.Value {
	var c []*ir.Value
	for _, v := range pool {
		if v.Type().String() == typ.String() {
			c = append(c, v)
		}
	}
	return c[g.r.IntN(len(c))]
}

func (g *mixGen) program() *ir.Program {
	b := ir.NewBuilder(ir.NewProgram())
	pool := []*ir.Value{
		ops.Data(b, "x", ir.F32, g.R, g.C),
		ops.Data(b, "y", ir.F32, g.C),
		ops.Data(b, "z", ir.F32, g.R, 1),
		ops.Data(b, "w", ir.F32),
		ops.Data(b, "m", ir.I1, g.R, g.C),
		ops.Data(b, "k", ir.I1, g.C),
		ops.Parameter(b, "p", ir.F32, g.R, g.C),
	}
	pool = g.block(b, 0, pool, 6+g.r.IntN(10), true)
	for range 1 + g.r.IntN(3) {
		ops.Fetch(b, fmt.Sprintf("out%d", g.nf), pool[g.r.IntN(len(pool))])
		g.nf++
	}
	p, err := b.Finish()
	if err != nil {
		panic(err)
	}
	return p
}

func (g *mixGen) block(b *ir.Builder, depth int, pool []*ir.Value, n int, top bool) []*ir.Value {
	pool = slices.Clone(pool)
	unary := []string{"relu", "neg", "tanh", "abs", "sigmoid", "square"}
	arith := []string{"add", "subtract", "multiply", "maximum", "minimum", "divide"}
	for range n {
		k := g.r.IntN(17)
		if depth >= g.depth && k >= 15 {
			k = g.r.IntN(15)
		}
		var v *ir.Value
		switch k {
		case 0, 1:
			v = b.Op1(unary[g.r.IntN(len(unary))], nil, g.pickT(pool, ir.F32))
		case 2, 3, 4:
			v = b.Op1(arith[g.r.IntN(len(arith))], nil, g.pickT(pool, ir.F32), g.pickT(pool, ir.F32))
		case 5:
			v = ops.Scale(b, g.pickT(pool, ir.F32), 2, 1)
		case 6:
			x := g.pickT(pool, ir.F32)
			if g.r.IntN(2) == 0 {
				x = g.pickT(pool, ir.I1)
			}
			v = ops.FullLike(b, x, 1, ir.InvalidDType)
		case 7:
			switch g.r.IntN(3) {
			case 0:
				v = b.Op1("greater_than", nil, g.pickT(pool, ir.F32), g.pickT(pool, ir.F32))
			case 1:
				v = b.Op1([]string{"equal", "not_equal", "logical_and", "logical_or"}[g.r.IntN(4)], nil, g.pickT(pool, ir.I1), g.pickT(pool, ir.I1))
			default:
				v = ops.LogicalNot(b, g.pickT(pool, ir.I1))
			}
		case 8, 9:
			v = ops.Where(b, g.pickT(pool, ir.I1), g.pickT(pool, ir.F32), g.pickT(pool, ir.F32))
		case 10:
			// A view sharing the storage: same shape, or [C] <-> [1,C].
			x := g.pickT(pool, ir.F32)
			if g.r.IntN(3) == 0 {
				x = g.pickT(pool, ir.I1)
			}
			shape := x.Type().Dims
			switch {
			case slices.Equal(shape, []int{g.C}):
				shape = []int{1, g.C}
			case slices.Equal(shape, []int{1, g.C}):
				shape = []int{g.C}
			}
			v = ops.Reshape(b, x, shape...)
		case 11:
			x := pool[g.r.IntN(len(pool))]
			if g.r.IntN(2) == 0 {
				v = ops.Assign(b, x)
				break
			}
			// A stack round trip with a use of x in between, popped twice
			// (the first pop copies the list, the second takes the
			// stack over): each popped value shares x's storage.
			s := ops.StackPush(b, ops.StackNew(b, x.Type()), x)
			if x.Type().DType == ir.F32 {
				pool = append(pool, ops.Neg(b, x))
			}
			_, v1 := ops.StackPop(b, s)
			if v1.Type().DType == ir.F32 {
				pool = append(pool, ops.Relu(b, v1))
			}
			_, v = ops.StackPop(b, s)
			pool = append(pool, v1)
		case 12:
			y := g.pickT(pool, ir.F32)
			v = ops.ReluGrad(b, y, g.pickType(pool, y.Type()))
		case 13:
			if g.r.IntN(2) == 0 {
				v = ops.Cast(b, g.pickT(pool, ir.F32), ir.I1)
			} else {
				v = ops.Cast(b, g.pickT(pool, ir.I1), ir.F32)
			}
		case 14:
			if top {
				// A fetch before later uses: the caller's reference must
				// keep later ops from writing into it.
				ops.Fetch(b, fmt.Sprintf("out%d", g.nf), pool[g.r.IntN(len(pool))])
				g.nf++
			}
			continue
		case 15:
			pool = append(pool, g.ifOp(b, depth, pool)...)
			continue
		default:
			pool = append(pool, g.whileOp(b, depth, pool)...)
			continue
		}
		pool = append(pool, v)
	}
	return pool
}

func (g *mixGen) cond(b *ir.Builder, pool []*ir.Value) *ir.Value {
	sa := ops.ReduceSum(b, g.pickT(pool, ir.F32), []int{}, false)
	sb := ops.ReduceSum(b, g.pickT(pool, ir.F32), []int{}, false)
	return b.Op1("greater_than", nil, sa, sb)
}

// picks picks k values of pool, possibly the same one twice.
func (g *mixGen) picks(pool []*ir.Value, k int) []*ir.Value {
	out := make([]*ir.Value, k)
	for i := range out {
		out[i] = pool[g.r.IntN(len(pool))]
	}
	if k > 1 && g.r.IntN(3) == 0 {
		out[1] = out[0]
	}
	return out
}

func (g *mixGen) yieldsLike(pool []*ir.Value, like []*ir.Value) []*ir.Value {
	out := make([]*ir.Value, len(like))
	for i, l := range like {
		out[i] = g.pickType(pool, l.Type())
	}
	if len(out) > 1 && out[0].Type().String() == out[1].Type().String() && g.r.IntN(3) == 0 {
		out[1] = out[0]
	}
	return out
}

func (g *mixGen) ifOp(b *ir.Builder, depth int, pool []*ir.Value) []*ir.Value {
	c := g.cond(b, pool)
	like := g.picks(pool, g.r.IntN(3))
	branch := func(b *ir.Builder) []*ir.Value {
		inner := g.block(b, depth+1, pool, g.r.IntN(5), false)
		return g.yieldsLike(inner, like)
	}
	return b.If(c, branch, branch)
}

func (g *mixGen) whileOp(b *ir.Builder, depth int, pool []*ir.Value) []*ir.Value {
	i0 := ops.Full(b, ir.I64, 0)
	n := ops.Full(b, ir.I64, float64(g.r.IntN(4)))
	one := ops.Full(b, ir.I64, 1)
	c0 := b.Op1("less_than", nil, i0, n)
	init := g.picks(pool, 1+g.r.IntN(3))
	res := b.While(c0, append([]*ir.Value{i0}, init...), func(b *ir.Builder, args []*ir.Value) (*ir.Value, []*ir.Value) {
		inner := g.block(b, depth+1, append(slices.Clone(pool), args[1:]...), g.r.IntN(6), false)
		i1 := b.Op1("add", nil, args[0], one)
		return b.Op1("less_than", nil, i1, n), append([]*ir.Value{i1}, g.yieldsLike(inner, init)...)
	})
	return res[1:]
}

func mixFeeds(t testing.TB, r *rand.Rand, R, C int) feeds {
	vals := func(n int) []float32 {
		d := make([]float32, n)
		for i := range d {
			d[i] = float32(r.IntN(7)) - 3
		}
		return d
	}
	bools := func(n int) *tensor.Tensor {
		d := make([]bool, n)
		for i := range d {
			d[i] = r.IntN(2) == 0
		}
		x, err := tensor.FromBool(host, d, n)
		if err != nil {
			t.Fatal(err)
		}
		return x
	}
	m := bools(R * C)
	m2, err := m.Reshape(R, C)
	if err != nil {
		t.Fatal(err)
	}
	m.Release()
	return feeds{
		"x": f32(t, vals(R*C), R, C), "y": f32(t, vals(C), C), "z": f32(t, vals(R), R, 1),
		"w": f32(t, vals(1), []int{}...), "m": m2, "k": bools(C),
	}
}

func snapshot(res map[string]*tensor.Tensor) map[string][]byte {
	out := map[string][]byte{}
	for n, x := range res {
		out[n] = slices.Clone(x.Raw())
	}
	return out
}

// TestDonationMatchesNoDonate runs random programs in which values are
// shared every way the executor allows (feeds, a parameter, reshape views,
// assign, fetches before later uses, values used twice by one op, captured
// by regions, yielded or carried by a while twice) with in-place reuse on
// and off, in tensor debug mode: results must agree bit for bit, feeds and
// the parameter must not change, and every run must leave nothing behind.
// The second half uses tensors big enough for the kernels to split the
// work over two threads.
func TestDonationMatchesNoDonate(t *testing.T) {
	tensor.SetDebug(true)
	defer tensor.SetDebug(false)
	n := 300
	if testing.Short() {
		n = 60
	}
	t.Run("small", func(t *testing.T) { donationMatches(t, n, 2, 3, 1) })
	t.Run("threads", func(t *testing.T) { donationMatches(t, n/10, 64, 1024, 2) })
}

func donationMatches(t *testing.T, n, R, C, threads int) {
	param := make([]float32, R*C)
	for i := range param {
		param[i] = float32(i%5) - 2
	}
	reused := 0
	for seed := range n {
		g := &mixGen{r: rand.New(rand.NewPCG(uint64(seed), 11)), depth: 2, R: R, C: C}
		p := g.program()
		r := rand.New(rand.NewPCG(uint64(seed), 12))
		in := mixFeeds(t, r, R, C)
		inBefore := snapshot(in)
		var got [2]map[string][]byte
		var allocs [2]int64
		for k, noDonate := range []bool{false, true} {
			a := newAlloc()
			store := exec.NewStore()
			pv, err := tensor.FromF32(a, param, R, C)
			if err != nil {
				t.Fatal(err)
			}
			store.Set("p", pv)
			base := allocated(a)
			x, err := exec.Compile(p, exec.Options{Alloc: a, Store: store, CheckLeaks: true, Threads: threads, NoDonate: noDonate})
			if err != nil {
				t.Fatalf("seed %d: %v\n%s", seed, err, p)
			}
			for run := range 2 {
				res, err := x.Run(context.Background(), in)
				if err != nil {
					t.Fatalf("seed %d NoDonate %v run %d: %v\n%s", seed, noDonate, run, err, p)
				}
				s := snapshot(res)
				if got[k] == nil {
					got[k] = s
				} else if !maps.EqualFunc(s, got[k], slices.Equal) {
					t.Fatalf("seed %d NoDonate %v: run %d differs from run 0\n%s", seed, noDonate, run, p)
				}
				res.Release()
				if b := allocated(a); b != base {
					t.Fatalf("seed %d NoDonate %v run %d: %d bytes allocated after the run, want %d\n%s", seed, noDonate, run, b, base, p)
				}
			}
			if v, _ := store.Get("p"); !slices.Equal(v.F32(), param) {
				t.Fatalf("seed %d NoDonate %v: the parameter changed\n%s", seed, noDonate, p)
			}
			allocs[k] = a.Stats().Allocs
			store.Release()
		}
		if !maps.EqualFunc(snapshot(in), inBefore, slices.Equal) {
			t.Fatalf("seed %d: a feed was written\n%s", seed, p)
		}
		if !maps.EqualFunc(got[0], got[1], slices.Equal) {
			for name, w := range got[1] {
				if !slices.Equal(got[0][name], w) {
					t.Errorf("seed %d: %s differs with donation", seed, name)
				}
			}
			t.Fatalf("seed %d: results differ with and without donation\n%s", seed, p)
		}
		if allocs[0] < allocs[1] {
			reused++
		}
		releaseFeeds(in)
	}
	if reused == 0 {
		t.Fatal("no program reused a buffer: the test exercises nothing")
	}
	t.Logf("%d programs, in-place reuse in %d", n, reused)
}
