package optimize_test

import (
	"bytes"
	"slices"
	"testing"

	"github.com/gopir/gopir/ir"
	"github.com/gopir/gopir/memory"
	"github.com/gopir/gopir/ops"
	"github.com/gopir/gopir/optimize"
)

// FuseWhere rewrites the program it is given, only where every op
// replaced passes its filter, and says what replaced what: of two conv
// blocks (conv, bias, ReLU, 2×2 max pool) it fuses the first, pool and
// all, and leaves the second, whose add it is told to skip, as it was.
// The program computes the same bits as before.
func TestFuseWhere(t *testing.T) {
	build := func() (*ir.Program, *ir.Op) {
		b := ir.NewBuilder(ir.NewProgram())
		x := data(b, "x", -1, 2, 8, 8)
		h := ops.Relu(b, ops.Add(b, conv(b, x, param(b, "w1", 3, 2, 3, 3)), chanBias(b, "b1", 3)))
		h, _ = ops.MaxPool2D(b, h, []int{2, 2}, []int{2, 2}, []int{0, 0})
		skip := ops.Add(b, conv(b, h, param(b, "w2", 4, 3, 3, 3)), chanBias(b, "b2", 4))
		h = ops.Relu(b, skip)
		h, _ = ops.MaxPool2D(b, h, []int{2, 2}, []int{2, 2}, []int{0, 0})
		fetch(b, h)
		p, err := b.Finish()
		if err != nil {
			t.Fatal(err)
		}
		return p, skip.Def()
	}
	orig, _ := build()
	p, skip := build()
	replaced := map[string]int{}
	n, err := optimize.FuseWhere(p, func(op *ir.Op) bool { return op != skip }, func(op *ir.Op, old []*ir.Op) {
		if op.Block() != p.Body() {
			t.Errorf("%s: not in the program", op.Name())
		}
		for _, o := range old {
			replaced[o.Name()]++
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	// The epilogue of the first block (conv2d, add, relu), the indices of
	// both pools, then the first pool into its convolution (the
	// conv2d_fused just made and the max_pool2d_values).
	if n != 4 {
		t.Errorf("%d rewrites, want 4", n)
	}
	want := map[string]int{"conv2d": 1, "add": 1, "relu": 1, "max_pool2d": 2, "conv2d_fused": 1, "max_pool2d_values": 1}
	for name, k := range want {
		if replaced[name] != k {
			t.Errorf("replaced %v, want %v", replaced, want)
			break
		}
	}
	wantOps := []string{"conv2d_fused", "conv2d", "reshape", "add", "relu", "max_pool2d_values"}
	if got := opNames(p); !slices.Equal(got, wantOps) {
		var out bytes.Buffer
		ir.Print(&out, p)
		t.Errorf("ops %q, want %q:\n%s", got, wantOps, out.String())
	}
	alloc := memory.New(memory.Options{})
	store := randomParams(t, orig, alloc)
	defer store.Release()
	before, after := runOnce(t, orig, store, alloc), runOnce(t, p, store, alloc)
	defer before.Release()
	defer after.Release()
	if err := sameBits(after["y"], before["y"]); err != nil {
		t.Error(err)
	}
}
