package optimize_test

import (
	"bytes"
	"context"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/gopir/gopir/exec"
	"github.com/gopir/gopir/ir"
	"github.com/gopir/gopir/memory"
	"github.com/gopir/gopir/ops"
	"github.com/gopir/gopir/optimize"
	"github.com/gopir/gopir/tensor"
)

// anchors builds a grid of cell centres divided by their stride, as
// ppyoloe_s's head does: arange, full, reshape, add, concat, divide.
func anchors(b *ir.Builder, n int, stride float64) *ir.Value {
	r := ops.Arange(b, ir.F32, stride/2, stride*float64(n), stride)
	zero := ops.Full(b, ir.F32, 0, n, n)
	xs := ops.Reshape(b, ops.Add(b, ops.Reshape(b, r, 1, n), zero), n*n, 1)
	ys := ops.Reshape(b, ops.Add(b, ops.Reshape(b, r, n, 1), zero), n*n, 1)
	pts := ops.Concat(b, 1, xs, ys)
	return ops.Divide(b, pts, ops.Full(b, ir.F32, stride, n*n, 1))
}

// foldCases: what folds and what does not.
var foldCases = []passCase{
	{"anchors", "fold_constants", func(b *ir.Builder) {
		a := ops.Concat(b, 0, anchors(b, 4, 32), anchors(b, 8, 16))
		fetch(b, ops.Add(b, data(b, "x", -1, 80, 2), a))
	}, 17, []string{"constant", "add"}, true},
	{"fetched directly", "fold_constants", func(b *ir.Builder) {
		fetch(b, ops.Multiply(b, ops.Arange(b, ir.F32, 0, 6, 1), ops.Full(b, ir.F32, 3, 6)))
	}, 1, []string{"constant"}, true},
	{"split into two", "fold_constants", func(b *ir.Builder) {
		parts := ops.Split(b, ops.Arange(b, ir.F32, 0, 10, 1), 0, 4, 6)
		fetch(b, ops.Add(b, data(b, "x", -1, 4), parts[0]))
		ops.Fetch(b, "z", ops.Multiply(b, data(b, "w", -1, 6), parts[1]))
	}, 1, []string{"constant", "constant", "add", "multiply"}, true},
	{"a constant chain", "fold_constants", func(b *ir.Builder) {
		c := ops.Exp(b, ops.Neg(b, constant(b, 0.5, 3, 4)))
		fetch(b, ops.Add(b, data(b, "x", 2, 3, 4), c))
	}, 2, []string{"constant", "add"}, true},
	{"a parameter", "fold_constants", func(b *ir.Builder) {
		fetch(b, ops.Multiply(b, param(b, "p", 4), ops.Full(b, ir.F32, 2, 4)))
	}, 0, []string{"full", "multiply"}, true},
	{"a feed", "fold_constants", func(b *ir.Builder) {
		fetch(b, ops.Add(b, data(b, "x", 5), ops.Arange(b, ir.F32, 0, 5, 1)))
	}, 0, []string{"arange", "add"}, true},
	{"a random op", "fold_constants", func(b *ir.Builder) {
		u := ops.UniformRandom(b, ir.F32, -1, 1, 0, 3)
		fetch(b, ops.Add(b, u, ops.Full(b, ir.F32, 1, 3)))
	}, 0, []string{"uniform_random", "full", "add"}, true},
	{"an op in a region", "fold_constants", func(b *ir.Builder) {
		x := data(b, "x", 3)
		c := ops.Data(b, "c", ir.I1)
		y := b.If(c, func(b *ir.Builder) []*ir.Value {
			return []*ir.Value{ops.Add(b, x, ops.Exp(b, ops.Full(b, ir.F32, 1, 3)))}
		}, func(b *ir.Builder) []*ir.Value { return []*ir.Value{x} })
		fetch(b, y[0])
	}, 0, []string{"if"}, true},
	{"too large a value", "fold_constants", func(b *ir.Builder) {
		// The reshapes fold; their sum, 1024×512 float32 (2 MiB), does not.
		s := ops.Add(b, ops.Reshape(b, ops.Arange(b, ir.F32, 0, 1024, 1), 1024, 1), ops.Reshape(b, ops.Arange(b, ir.F32, 0, 512, 1), 1, 512))
		fetch(b, ops.Add(b, data(b, "x", 1024, 512), s))
	}, 2, []string{"constant", "constant", "add", "add"}, true},
	{"too large a source", "fold_constants", func(b *ir.Builder) {
		fetch(b, ops.Neg(b, ops.Full(b, ir.F32, 2, 1024, 512)))
	}, 0, []string{"full", "neg"}, true},
}

// The table: each case folds what it should and nothing else, leaves its
// input alone, and the folded program computes the same bits.
func TestFoldConstants(t *testing.T) {
	for _, c := range foldCases {
		t.Run(c.name, func(t *testing.T) {
			b := ir.NewBuilder(ir.NewProgram())
			c.build(b)
			p, err := b.Finish()
			if err != nil {
				t.Fatal(err)
			}
			alloc := memory.New(memory.Options{})
			store := randomParams(t, p, alloc)
			defer store.Release()
			var before bytes.Buffer
			ir.Print(&before, p)
			params := optimize.NewParams(store, alloc)
			defer params.Release()
			res, err := optimize.Inference(p, params, c.pass)
			if err != nil {
				t.Fatal(err)
			}
			var after bytes.Buffer
			ir.Print(&after, p)
			if before.String() != after.String() {
				t.Errorf("the pass changed its input")
			}
			if n := res.Counts[0].Rewrites; n != c.rewrites {
				t.Errorf("%d rewrites, want %d", n, c.rewrites)
			}
			if got := opNames(res.Program); !slices.Equal(got, c.ops) {
				var out bytes.Buffer
				ir.Print(&out, res.Program)
				t.Errorf("ops %q, want %q:\n%s", got, c.ops, out.String())
			}
			for _, cond := range []bool{false, true} {
				want := runFoldCase(t, p, store, alloc, cond)
				got := runFoldCase(t, res.Program, params.Store(), alloc, cond)
				if len(got) != len(want) {
					t.Fatalf("%d fetches, want %d", len(got), len(want))
				}
				for n := range want {
					if err := sameBits(got[n], want[n]); err != nil {
						t.Errorf("fetch %s: %v", n, err)
					}
				}
				want.Release()
				got.Release()
			}
		})
	}
}

// runFoldCase is runOnce with the condition feed "c", where there is
// one, set to cond.
func runFoldCase(t *testing.T, p *ir.Program, store *exec.Store, a *memory.Allocator, cond bool) exec.Results {
	t.Helper()
	x, err := exec.Compile(p, exec.Options{Alloc: a, Store: store, Threads: 2, Seed: 3})
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(7, 8))
	host := memory.New(memory.Options{})
	feeds := map[string]*tensor.Tensor{}
	defer releaseAll(feeds)
	for _, f := range x.Feeds() {
		dims := slices.Clone(f.Type.Dims)
		for i, d := range dims {
			if d == ir.Dynamic {
				dims[i] = 2
			}
		}
		v, err := tensor.New(host, tensor.DType(f.Type.DType), dims...)
		if err != nil {
			t.Fatal(err)
		}
		feeds[f.Name] = v
		if f.Name == "c" {
			if cond {
				v.SetFloat64At(0, 1)
			}
			continue
		}
		for i := range v.Len() {
			v.SetFloat64At(i, r.Float64()*4-2)
		}
	}
	res, err := x.Run(context.Background(), feeds)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// The folded detector head's anchors, compiled and run many times: the
// pass's own evaluations leave nothing on the run's allocator, every run
// returns it to the store's bytes, and a second run of the same shapes
// makes no Go heap object.
func TestFoldConstantsRepeats(t *testing.T) {
	b := ir.NewBuilder(ir.NewProgram())
	a := ops.Concat(b, 0, anchors(b, 10, 32), anchors(b, 20, 16), anchors(b, 40, 8))
	fetch(b, ops.Multiply(b, ops.Add(b, data(b, "x", -1, 2100, 2), a), param(b, "s", 2)))
	p, err := b.Finish()
	if err != nil {
		t.Fatal(err)
	}
	alloc := memory.New(memory.Options{})
	store := randomParams(t, p, alloc)
	defer store.Release()
	base := alloc.Stats().Allocated.Current
	host := memory.New(memory.Options{})
	x, err := tensor.New(host, tensor.F32, 3, 2100, 2)
	if err != nil {
		t.Fatal(err)
	}
	defer x.Release()
	feeds := map[string]*tensor.Tensor{"x": x}
	for i := range 20 {
		e, res, err := optimize.Compile(p, store, exec.Options{Alloc: alloc, Threads: 2}, "fold_constants")
		if err != nil {
			t.Fatal(err)
		}
		if n := res.Counts[0].Rewrites; n != 25 {
			t.Fatalf("%d rewrites, want 25", n)
		}
		out := exec.Results{}
		for range 3 {
			if err := e.RunInto(context.Background(), feeds, out); err != nil {
				t.Fatal(err)
			}
			out.Release()
			if got := alloc.Stats().Allocated.Current; got != base {
				t.Fatalf("compile %d: %d bytes allocated after a run, want the store's %d", i, got, base)
			}
		}
		if i == 0 && !raceEnabled {
			if n := testing.AllocsPerRun(10, func() {
				if err := e.RunInto(context.Background(), feeds, out); err != nil {
					t.Fatal(err)
				}
				out.Release()
			}); n != 0 {
				t.Errorf("%v Go allocations a run of the folded program, want 0", n)
			}
		}
		e.Store().Release()
	}
	if got := alloc.Stats().Allocated.Current; got != base {
		t.Errorf("%d bytes allocated at the end, want the store's %d", got, base)
	}
}
