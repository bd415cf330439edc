package ops_test

import (
	"bytes"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/gopir/gopir/ir"
	"github.com/gopir/gopir/memory"
	"github.com/gopir/gopir/ops"
	"github.com/gopir/gopir/tensor"
)

// Tests of cost.go: Flops, Reads and Pin.

// naiveConvMACs counts the multiply-adds of a direct convolution loop
// over every output element and every tap (padding taps included, as the
// kernels do them).
func naiveConvMACs(n, c, o, oh, ow, kh, kw, groups int) int64 {
	var macs int64
	for range n * o * oh * ow {
		for range c / groups {
			for range kh * kw {
				macs++
			}
		}
	}
	return macs
}

func TestFlops(t *testing.T) {
	f32 := func(dims ...int) ir.Type { return ir.TensorOf(ir.F32, dims...) }
	conv := naiveConvMACs(2, 6, 4, 8, 8, 3, 3, 2) * 2
	for _, c := range []struct {
		name  string
		attrs ir.Attrs
		in    []ir.Type
		want  int64
	}{
		{"matmul", nil, []ir.Type{f32(4, 5), f32(5, 3)}, 2 * 4 * 5 * 3},
		{"matmul", ir.A("transpose_x", true), []ir.Type{f32(5, 4), f32(5, 3)}, 2 * 4 * 5 * 3},
		{"matmul", ir.A("transpose_y", true), []ir.Type{f32(2, 4, 5), f32(3, 5)}, 2 * 2 * 4 * 5 * 3},
		{"matmul", nil, []ir.Type{f32(5), f32(5)}, 2 * 5},
		{"conv2d", ir.A("paddings", []int{1, 1}, "groups", 2), []ir.Type{f32(2, 6, 8, 8), f32(4, 3, 3, 3)}, conv},
		{"conv2d_grad_input", ir.A("paddings", []int{1, 1}, "groups", 2, "input_size", []int{8, 8}), []ir.Type{f32(2, 4, 8, 8), f32(4, 3, 3, 3)}, conv},
		{"conv2d_grad_filter", ir.A("paddings", []int{1, 1}, "groups", 2, "filter_size", []int{3, 3}), []ir.Type{f32(2, 4, 8, 8), f32(2, 6, 8, 8)}, conv},
		// One per element read or written for the rest.
		{"relu", nil, []ir.Type{f32(3, 4)}, 24},
		{"add", nil, []ir.Type{f32(3, 4), f32(4)}, 12 + 4 + 12},
		{"reduce_sum", ir.A("axes", []int{1}), []ir.Type{f32(3, 4)}, 12 + 3},
		{"relu", nil, []ir.Type{f32(0, 4)}, 0},
	} {
		op, err := buildOp(t, c.name, c.attrs, c.in...)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		out, err := ops.ResultTypesOf(op, c.in)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if got := ops.Flops(op, c.in, out); got != c.want {
			t.Errorf("Flops(%s %s on %v) = %d, want %d", c.name, c.attrs, c.in, got, c.want)
		}
	}
}

// TestReadsHolds checks what Reads promises for every op that declares
// it: changing an operand that result i does not read leaves result i's
// bits alone (and Reads must leave out at least one operand somewhere,
// or the op should not declare it).
func TestReadsHolds(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	a := memory.New(memory.Options{})
	randomT := func(shape ...int) *tensor.Tensor {
		v := make([]float64, nnSize(shape))
		for i := range v {
			v[i] = r.Float64()*2 + 0.5
		}
		return nnFrom(t, a, tensor.F32, v, shape...)
	}
	for _, c := range []struct {
		name   string
		attrs  ir.Attrs
		shapes [][]int
	}{
		{"batch_norm", ir.A("training", true), [][]int{{4, 3, 2, 2}, {3}, {3}, {3}, {3}}},
	} {
		in := make([]*tensor.Tensor, len(c.shapes))
		for i, s := range c.shapes {
			in[i] = randomT(s...)
		}
		op, err := buildOp(t, c.name, c.attrs, typesOf(in)...)
		if err != nil {
			t.Fatal(err)
		}
		base := mustRun(t, a, c.name, c.attrs, in...)
		skipped := false
		for j := range in {
			changed := slices.Clone(in)
			changed[j] = randomT(c.shapes[j]...)
			outs := mustRun(t, a, c.name, c.attrs, changed...)
			for i := range outs {
				if slices.Contains(ops.Reads(op, i), j) {
					continue
				}
				skipped = true
				if !bytes.Equal(outs[i].Raw(), base[i].Raw()) {
					t.Errorf("%s: result %d changed with operand %d, which Reads says it does not read", c.name, i, j)
				}
			}
			release(outs...)
			changed[j].Release()
		}
		if !skipped {
			t.Errorf("%s declares Reads but every result reads every operand", c.name)
		}
		release(base...)
		release(in...)
	}
	wantAllocated(t, a, 0)
	// In inference mode batch_norm's y reads the running statistics.
	op, err := buildOp(t, "batch_norm", ir.A("training", false), ir.TensorOf(ir.F32, 4, 3), ir.TensorOf(ir.F32, 3), ir.TensorOf(ir.F32, 3), ir.TensorOf(ir.F32, 3), ir.TensorOf(ir.F32, 3))
	if err != nil {
		t.Fatal(err)
	}
	if got := ops.Reads(op, 0); !slices.Equal(got, []int{0, 1, 2, 3, 4}) {
		t.Errorf("Reads(batch_norm in inference, 0) = %v, want every operand", got)
	}
}

func typesOf(in []*tensor.Tensor) []ir.Type {
	types := make([]ir.Type, len(in))
	for i, x := range in {
		types[i] = ir.TensorOf(ir.DType(x.DType()), x.Shape()...)
	}
	return types
}

// TestPinDrawsTheSameNumbers: a copy of a random op placed elsewhere in
// the program draws other numbers, unless it carries its original's
// pinned attributes.
func TestPinDrawsTheSameNumbers(t *testing.T) {
	a := memory.New(memory.Options{})
	for _, c := range []struct {
		name  string
		attrs ir.Attrs
		x     bool // takes an operand
	}{
		{"uniform_random", ir.A("shape", []int{5, 3}), false},
		{"gaussian_random", ir.A("shape", []int{5, 3}, "dtype", ir.F64), false},
		{"dropout", ir.A("p", 0.5), true},
	} {
		b := ir.NewBuilder(ir.NewProgram())
		x := ops.Data(b, "x", ir.F32, 5, 3)
		var operands []*ir.Value
		if c.x {
			operands = append(operands, x)
		}
		orig := b.Op(c.name, c.attrs, operands...)
		ops.Relu(b, x) // something between
		pinned := b.Op(c.name, ops.Pin(orig), operands...)
		plain := b.Op(c.name, orig.Attrs, operands...)
		if err := b.Err(); err != nil {
			t.Fatal(err)
		}
		if !ops.Random(orig) || ops.Random(ops.Relu(b, x).Def()) {
			t.Fatalf("%s: Random says the wrong thing", c.name)
		}
		if got := ops.Pin(pinned); len(got) != len(pinned.Attrs) {
			t.Errorf("%s: Pin of a pinned op changed its attributes: %s", c.name, got)
		}
		draw := func(op *ir.Op) []byte {
			k, err := ops.Bind(op)
			if err != nil {
				t.Fatalf("%s: %v", c.name, err)
			}
			var in []*tensor.Tensor
			if c.x {
				in = append(in, nnFrom(t, a, tensor.F32, []float64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15}, 5, 3))
			}
			outs, err := k(&ops.Ctx{Alloc: a, Threads: 2, Seed: 7, Run: 3}, in)
			if err != nil {
				t.Fatalf("%s: %v", c.name, err)
			}
			bits := bytes.Clone(outs[len(outs)-1].Raw())
			release(outs...)
			release(in...)
			return bits
		}
		want := draw(orig)
		if got := draw(pinned); !bytes.Equal(got, want) {
			t.Errorf("%s: the pinned copy draws other numbers than the original", c.name)
		}
		if got := draw(plain); bytes.Equal(got, want) {
			t.Errorf("%s: an unpinned copy elsewhere draws the original's numbers; the test cannot tell", c.name)
		}
	}
	wantAllocated(t, a, 0)
}
