package autodiff_test

import (
	"math/rand/v2"
	"testing"

	"github.com/gopir/gopir/ir"
	"github.com/gopir/gopir/ops"
	"github.com/gopir/gopir/tensor"
)

func feedsFor(t *testing.T, seed uint64, shapes map[string][]int) map[string]*tensor.Tensor {
	r := rand.New(rand.NewPCG(seed, 1))
	out := map[string]*tensor.Tensor{}
	for name, shape := range shapes {
		n := 1
		for _, d := range shape {
			n *= d
		}
		out[name] = f64(t, randF64(r, n), shape...)
	}
	return out
}

func scalarI64(t *testing.T, v int64) *tensor.Tensor {
	x, err := tensor.FromI64(host, []int64{v}, []int{}...)
	if err != nil {
		t.Fatal(err)
	}
	return x
}

func TestStraightLine(t *testing.T) {
	m := func(b *ir.Builder) (*ir.Value, []*ir.Value) {
		x := ops.Data(b, "x", ir.F64, 3, 4)
		w := ops.Data(b, "w", ir.F64, 4, 2)
		bias := ops.Data(b, "bias", ir.F64, 2)
		h := ops.Tanh(b, ops.Add(b, ops.Matmul(b, x, w, false, false), bias))
		return sum(b, ops.Multiply(b, h, ops.Relu(b, h))), []*ir.Value{x, w, bias}
	}
	checkGradients(t, m, feedsFor(t, 1, map[string][]int{"x": {3, 4}, "w": {4, 2}, "bias": {2}}))
}

// ifModel: loss = sum(if sum(x) > 0 { relu(x)·w } else { tanh(x) + w }),
// with w captured by both branches.
func ifModel(b *ir.Builder) (*ir.Value, []*ir.Value) {
	x := ops.Data(b, "x", ir.F64, 2, 3)
	w := ops.Data(b, "w", ir.F64, 3)
	c := ops.GreaterThan(b, sum(b, x), ops.Full(b, ir.F64, 0))
	out := b.If(c, func(b *ir.Builder) []*ir.Value {
		return []*ir.Value{ops.Multiply(b, ops.Relu(b, x), w)}
	}, func(b *ir.Builder) []*ir.Value {
		return []*ir.Value{ops.Add(b, ops.Tanh(b, x), w)}
	})
	return sum(b, ops.Multiply(b, out[0], out[0])), []*ir.Value{x, w}
}

func TestIfEachBranch(t *testing.T) {
	for _, sign := range []float64{1, -1} {
		feeds := feedsFor(t, 2, map[string][]int{"x": {2, 3}, "w": {3}})
		for i := range feeds["x"].F64() {
			feeds["x"].F64()[i] = sign * (0.1 + float64(i)/10)
		}
		checkGradients(t, ifModel, feeds)
	}
}

// whileModel: h = x; repeat n times: h = tanh(h·w + x); loss = sum(h²).
// x is both the initial value and captured; w is captured.
func whileModel(b *ir.Builder) (*ir.Value, []*ir.Value) {
	x := ops.Data(b, "x", ir.F64, 2, 3)
	w := ops.Data(b, "w", ir.F64, 3, 3)
	n := ops.Data(b, "n", ir.I64)
	i0 := ops.Full(b, ir.I64, 0)
	one := ops.Full(b, ir.I64, 1)
	res := b.While(ops.LessThan(b, i0, n), []*ir.Value{i0, x}, func(b *ir.Builder, args []*ir.Value) (*ir.Value, []*ir.Value) {
		i1 := ops.Add(b, args[0], one)
		h := ops.Tanh(b, ops.Add(b, ops.Matmul(b, args[1], w, false, false), x))
		return ops.LessThan(b, i1, n), []*ir.Value{i1, h}
	})
	return sum(b, ops.Multiply(b, res[1], res[1])), []*ir.Value{x, w}
}

func TestWhileTripCounts(t *testing.T) {
	for _, n := range []int64{0, 1, 2, 5} {
		feeds := feedsFor(t, 3, map[string][]int{"x": {2, 3}, "w": {3, 3}})
		feeds["n"] = scalarI64(t, n)
		checkGradients(t, whileModel, feeds)
	}
}

// ifInWhile: each iteration takes a branch depending on the running sum.
func ifInWhile(b *ir.Builder) (*ir.Value, []*ir.Value) {
	x := ops.Data(b, "x", ir.F64, 4)
	w := ops.Data(b, "w", ir.F64, 4)
	n := ops.Data(b, "n", ir.I64)
	i0 := ops.Full(b, ir.I64, 0)
	one := ops.Full(b, ir.I64, 1)
	res := b.While(ops.LessThan(b, i0, n), []*ir.Value{i0, x}, func(b *ir.Builder, args []*ir.Value) (*ir.Value, []*ir.Value) {
		h := args[1]
		c := ops.GreaterThan(b, sum(b, h), ops.Full(b, ir.F64, 0))
		r := b.If(c, func(b *ir.Builder) []*ir.Value {
			return []*ir.Value{ops.Tanh(b, ops.Multiply(b, h, w))}
		}, func(b *ir.Builder) []*ir.Value {
			return []*ir.Value{ops.Subtract(b, ops.Multiply(b, h, h), w)}
		})
		return ops.LessThan(b, ops.Add(b, args[0], one), n), []*ir.Value{ops.Add(b, args[0], one), r[0]}
	})
	return sum(b, res[1]), []*ir.Value{x, w}
}

func TestIfInsideWhile(t *testing.T) {
	for _, n := range []int64{0, 1, 4} {
		feeds := feedsFor(t, 4, map[string][]int{"x": {4}, "w": {4}})
		feeds["n"] = scalarI64(t, n)
		checkGradients(t, ifInWhile, feeds)
	}
}

// whileInIf: the taken branch runs a loop over captured values.
func whileInIf(b *ir.Builder) (*ir.Value, []*ir.Value) {
	x := ops.Data(b, "x", ir.F64, 3)
	w := ops.Data(b, "w", ir.F64, 3)
	n := ops.Data(b, "n", ir.I64)
	c := ops.GreaterThan(b, n, ops.Full(b, ir.I64, 1))
	out := b.If(c, func(b *ir.Builder) []*ir.Value {
		i0 := ops.Full(b, ir.I64, 0)
		one := ops.Full(b, ir.I64, 1)
		res := b.While(ops.LessThan(b, i0, n), []*ir.Value{i0, x}, func(b *ir.Builder, args []*ir.Value) (*ir.Value, []*ir.Value) {
			h := ops.Tanh(b, ops.Add(b, ops.Multiply(b, args[1], w), x))
			return ops.LessThan(b, ops.Add(b, args[0], one), n), []*ir.Value{ops.Add(b, args[0], one), h}
		})
		return []*ir.Value{res[1]}
	}, func(b *ir.Builder) []*ir.Value {
		return []*ir.Value{ops.Multiply(b, x, w)}
	})
	return sum(b, ops.Multiply(b, out[0], out[0])), []*ir.Value{x, w}
}

func TestWhileInsideIf(t *testing.T) {
	for _, n := range []int64{0, 3} {
		feeds := feedsFor(t, 5, map[string][]int{"x": {3}, "w": {3}})
		feeds["n"] = scalarI64(t, n)
		checkGradients(t, whileInIf, feeds)
	}
}
