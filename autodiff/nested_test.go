package autodiff_test

import (
	"math"
	"testing"
	"time"

	"github.com/gopir/gopir/autodiff"
	"github.com/gopir/gopir/exec"
	"github.com/gopir/gopir/ir"
	"github.com/gopir/gopir/memory"
	"github.com/gopir/gopir/ops"
)

// nestedWhiles: depth loops, each the body of the one around it, each
// running n times: h = tanh(h·w), then the next loop on h. loss = sum(h).
func nestedWhiles(depth int) model {
	return func(b *ir.Builder) (*ir.Value, []*ir.Value) {
		x := ops.Data(b, "x", ir.F64, 3)
		w := ops.Data(b, "w", ir.F64, 3)
		n := ops.Data(b, "n", ir.I64)
		one := ops.Full(b, ir.I64, 1)
		var nest func(b *ir.Builder, level int, h *ir.Value) *ir.Value
		nest = func(b *ir.Builder, level int, h *ir.Value) *ir.Value {
			if level == depth {
				return h
			}
			i0 := ops.Full(b, ir.I64, 0)
			res := b.While(ops.LessThan(b, i0, n), []*ir.Value{i0, h}, func(b *ir.Builder, args []*ir.Value) (*ir.Value, []*ir.Value) {
				i1 := ops.Add(b, args[0], one)
				h1 := ops.Tanh(b, ops.Multiply(b, args[1], w))
				return ops.LessThan(b, i1, n), []*ir.Value{i1, nest(b, level+1, h1)}
			})
			return res[1]
		}
		return sum(b, nest(b, 0, x)), []*ir.Value{x, w}
	}
}

func TestNestedWhiles(t *testing.T) {
	for _, depth := range []int{1, 2, 3} {
		for _, n := range []int64{0, 1, 2, 3} {
			feeds := feedsFor(t, 6, map[string][]int{"x": {3}, "w": {3}})
			feeds["n"] = scalarI64(t, n)
			checkGradients(t, nestedWhiles(depth), feeds)
		}
	}
}

// mixedNest: a loop whose body holds two sibling loops (one of them with a
// loop inside), an if with a loop in one branch, and residuals of three
// types, so that loops share tapes of one type and keep those of another
// apart, and an if's loop keeps stacks of its own.
func mixedNest(b *ir.Builder) (*ir.Value, []*ir.Value) {
	x := ops.Data(b, "x", ir.F64, 2, 3)
	w := ops.Data(b, "w", ir.F64, 3, 3)
	v := ops.Data(b, "v", ir.F64, 3)
	n := ops.Data(b, "n", ir.I64)
	one := ops.Full(b, ir.I64, 1)
	count := func(b *ir.Builder, init []*ir.Value, body func(b *ir.Builder, args []*ir.Value) []*ir.Value) []*ir.Value {
		i0 := ops.Full(b, ir.I64, 0)
		res := b.While(ops.LessThan(b, i0, n), append([]*ir.Value{i0}, init...), func(b *ir.Builder, args []*ir.Value) (*ir.Value, []*ir.Value) {
			i1 := ops.Add(b, args[0], one)
			return ops.LessThan(b, i1, n), append([]*ir.Value{i1}, body(b, args[1:])...)
		})
		return res[1:]
	}
	out := count(b, []*ir.Value{x}, func(b *ir.Builder, args []*ir.Value) []*ir.Value {
		a := ops.Tanh(b, ops.Matmul(b, args[0], w, false, false))
		g := count(b, []*ir.Value{a}, func(b *ir.Builder, args []*ir.Value) []*ir.Value {
			inner := count(b, []*ir.Value{ops.Tanh(b, ops.Add(b, args[0], v))}, func(b *ir.Builder, args []*ir.Value) []*ir.Value {
				return []*ir.Value{ops.Multiply(b, args[0], ops.Tanh(b, args[0]))}
			})[0]
			return []*ir.Value{ops.Multiply(b, args[0], inner)}
		})[0]
		s := sum(b, g)
		u := count(b, []*ir.Value{ops.Multiply(b, v, s)}, func(b *ir.Builder, args []*ir.Value) []*ir.Value {
			return []*ir.Value{ops.Tanh(b, ops.Multiply(b, args[0], v))}
		})[0]
		r := b.If(ops.GreaterThan(b, s, ops.Full(b, ir.F64, 0)), func(b *ir.Builder) []*ir.Value {
			return count(b, []*ir.Value{g}, func(b *ir.Builder, args []*ir.Value) []*ir.Value {
				return []*ir.Value{ops.Tanh(b, ops.Matmul(b, args[0], w, false, false))}
			})
		}, func(b *ir.Builder) []*ir.Value {
			return []*ir.Value{ops.Multiply(b, g, g)}
		})[0]
		return []*ir.Value{ops.Add(b, ops.Multiply(b, g, u), r)}
	})[0]
	return sum(b, ops.Multiply(b, out, out)), []*ir.Value{x, w, v}
}

func TestMixedNest(t *testing.T) {
	for _, n := range []int64{0, 1, 2, 3} {
		for _, sign := range []float64{1, -1} {
			feeds := feedsFor(t, 7, map[string][]int{"x": {2, 3}, "w": {3, 3}, "v": {3}})
			for i := range feeds["x"].F64() {
				feeds["x"].F64()[i] *= sign
			}
			feeds["n"] = scalarI64(t, n)
			checkGradients(t, mixedNest, feeds)
		}
	}
}

func countOps(blk *ir.Block) int {
	n := 0
	ir.WalkBlock(blk, func(*ir.Op) bool { n++; return true })
	return n
}

// The backward of a nest of loops grows linearly with its depth: every loop
// carries the same two tapes (residuals and trip counts), not one stack per
// stack of every loop inside it (which made 128 levels 77,000 ops and
// 137 MB of text).
func TestNestedWhilesBackwardSize(t *testing.T) {
	for _, depth := range []int{1, 2, 4, 8, 16, 32, 64} {
		b := ir.NewBuilder(ir.NewProgram())
		loss, wrt := nestedWhiles(depth)(b)
		fwdOps, fwdText := countOps(b.Program().Body()), len(b.Program().String())
		if _, err := autodiff.Backward(b, loss, wrt); err != nil {
			t.Fatal(err)
		}
		added := countOps(b.Program().Body()) - fwdOps
		if limit := 26*depth + 8; added > limit {
			t.Errorf("depth %d: the backward added %d ops, want at most %d", depth, added, limit)
		}
		// The text grows quadratically with depth (indentation), for the
		// forward and the backward alike.
		if text := len(b.Program().String()); text > 5*fwdText {
			t.Errorf("depth %d: %d bytes of text, %.1f times the forward's", depth, text, float64(text)/float64(fwdText))
		}
	}
}

// The deepest nest the parser reads, differentiated, compiled and run, with
// each loop running once: the gradient against the chain rule written out,
// and memory back to zero after every run.
func TestNestedWhilesDeepest(t *testing.T) {
	const depth = 511
	start := time.Now()
	b := ir.NewBuilder(ir.NewProgram())
	loss, wrt := nestedWhiles(depth)(b)
	grads, err := autodiff.Backward(b, loss, wrt)
	if err != nil {
		t.Fatal(err)
	}
	ops.Fetch(b, "loss", loss)
	ops.Fetch(b, "x@GRAD", grads[0])
	ops.Fetch(b, "w@GRAD", grads[1])
	p, err := b.Finish()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ir.Parse("deep.pir", []byte(p.String())); err != nil {
		t.Fatalf("the backward does not parse back: %v", err)
	}
	a := memory.New(memory.Options{})
	x, err := exec.Compile(p, exec.Options{Alloc: a, CheckLeaks: true})
	if err != nil {
		t.Fatal(err)
	}
	xs, ws := []float64{0.9, -0.4, 1.5}, []float64{1.1, 0.7, -1.2}
	feeds := feedsFor(t, 0, nil)
	feeds["x"], feeds["w"], feeds["n"] = f64(t, xs, 3), f64(t, ws, 3), scalarI64(t, 1)
	var peak int64
	for i := range 20 {
		a.ResetPeak()
		res := run(t, x, feeds)
		if i == 0 {
			checkDeepGradients(t, depth, xs, ws, res["x@GRAD"].F64(), res["w@GRAD"].F64())
		}
		res.Release()
		st := a.Stats()
		if st.Allocated.Current != 0 {
			t.Fatalf("run %d: %d bytes allocated after the run", i, st.Allocated.Current)
		}
		if i > 0 && st.Allocated.Peak != peak {
			t.Fatalf("run %d: peak %d bytes, first run %d", i, st.Allocated.Peak, peak)
		}
		peak = st.Allocated.Peak
	}
	// At the innermost point of the backward, per level: the residuals (two
	// 3-vectors and a trip count) and the gradients its backward loop
	// carries (of h and of w), 64 bytes each after rounding; a few more at
	// the top.
	if limit := int64(5*64*depth + 1024); peak > limit {
		t.Errorf("peak %d bytes, want at most %d", peak, limit)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("took %v", d)
	}
}

// checkDeepGradients compares gradients of nestedWhiles(depth) with each
// loop running once, h_{k+1} = tanh(h_k·w), with the chain rule.
func checkDeepGradients(t *testing.T, depth int, xs, ws, gx, gw []float64) {
	t.Helper()
	for i := range xs {
		hs := []float64{xs[i]}
		for range depth {
			hs = append(hs, math.Tanh(hs[len(hs)-1]*ws[i]))
		}
		dh, dw := 1.0, 0.0
		for k := depth - 1; k >= 0; k-- {
			dz := dh * (1 - hs[k+1]*hs[k+1])
			dw += dz * hs[k]
			dh = dz * ws[i]
		}
		if math.Abs(gx[i]-dh) > 1e-12*(1+math.Abs(dh)) || math.Abs(gw[i]-dw) > 1e-12*(1+math.Abs(dw)) {
			t.Errorf("element %d: gradients %v, %v; chain rule %v, %v", i, gx[i], gw[i], dh, dw)
		}
	}
}

// ifInIfSharedScalar: an if inside an if, whose inner branch uses a scalar
// of the outer branch twice (as a detector's box loss divides two sums by
// the outer branch's normaliser). The backward of the inner if is built
// before the outer scope is asked for that scalar, which must still come
// first. (Nothing after the inner if uses the scalar: such a use would
// resolve it early and hide the order.)
func ifInIfSharedScalar(b *ir.Builder) (*ir.Value, []*ir.Value) {
	x := ops.Data(b, "x", ir.F64, 4)
	c := ops.Data(b, "c", ir.F64)
	zero := ops.Full(b, ir.F64, 0)
	r := b.If(ops.GreaterThan(b, c, zero), func(b *ir.Builder) []*ir.Value {
		s := sum(b, ops.Multiply(b, x, x))
		inner := b.If(ops.GreaterThan(b, s, ops.Full(b, ir.F64, 1)), func(b *ir.Builder) []*ir.Value {
			return []*ir.Value{ops.Add(b, ops.Divide(b, sum(b, x), s), ops.Divide(b, sum(b, ops.Tanh(b, x)), s))}
		}, func(b *ir.Builder) []*ir.Value {
			return []*ir.Value{ops.Multiply(b, s, s)}
		})
		return []*ir.Value{ops.Multiply(b, inner[0], ops.Full(b, ir.F64, 3))}
	}, func(b *ir.Builder) []*ir.Value {
		return []*ir.Value{sum(b, ops.Tanh(b, x))}
	})
	return r[0], []*ir.Value{x}
}

func TestIfInIfSharedScalar(t *testing.T) {
	for _, tc := range []struct {
		c     float64
		scale float64
	}{{1, 1}, {1, 0.1}, {-1, 1}} {
		feeds := feedsFor(t, 7, map[string][]int{"x": {4}})
		for i := range feeds["x"].F64() {
			feeds["x"].F64()[i] *= tc.scale
		}
		feeds["c"] = f64(t, []float64{tc.c}, []int{}...)
		checkGradients(t, ifInIfSharedScalar, feeds)
	}
}
