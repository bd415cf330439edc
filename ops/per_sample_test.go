package ops_test

import (
	"testing"

	"github.com/gopir/gopir/ir"
	"github.com/gopir/gopir/ops"
)

func TestPerSample(t *testing.T) {
	b := ir.NewBuilder(ir.NewProgram())
	x := ops.Data(b, "x", ir.F32, -1, 3, 8, 8)     // a batch
	w := ops.Parameter(b, "w", ir.F32, 4, 3, 3, 3) // weights
	bias := ops.Parameter(b, "bias", ir.F32, 4, 1, 1)
	row := ops.Parameter(b, "row", ir.F32, 1, 3, 8, 8)
	batch := func(v *ir.Value) bool {
		t := v.Type()
		return t.Rank() > 0 && t.Dims[0] == ir.Dynamic
	}
	y := ops.Conv2D(b, x, w, []int{1, 1}, []int{1, 1}, []int{1, 1}, 1)
	for _, tc := range []struct {
		name string
		v    *ir.Value
		want bool
	}{
		{"conv2d of the batch", y, true},
		{"conv2d whose weights are the batch", ops.Conv2D(b, x, ops.Data(b, "wb", ir.F32, -1, 3, 3, 3), []int{1, 1}, []int{1, 1}, []int{1, 1}, 1), false},
		{"relu", ops.Relu(b, y), true},
		{"exp (its vector loop and Go loop may differ)", ops.Exp(b, y), false},
		{"add of a broadcast bias", ops.Add(b, y, bias), true},
		{"add of a row of one sample", ops.Add(b, x, row), true},
		{"reshape keeping axis 0", ops.Reshape(b, y, -1, 256), true},
		{"reshape moving samples", ops.Reshape(b, y, 2, -1), false},
		{"reshape of weights", ops.Reshape(b, w, -1), false},
		{"relu_grad", ops.ReluGrad(b, y, y), true},
		{"matmul (sums over its rows' inputs, not per sample here)", ops.Matmul(b, ops.Reshape(b, x, -1, 192), ops.Parameter(b, "m", ir.F32, 192, 2), false, false), false},
	} {
		if got := ops.PerSample(tc.v.Def(), batch); got != tc.want {
			t.Errorf("%s: PerSample = %v, want %v", tc.name, got, tc.want)
		}
	}
	if err := b.Err(); err != nil {
		t.Fatal(err)
	}
}
