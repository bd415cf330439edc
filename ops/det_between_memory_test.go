package ops_test

import (
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/gopir/gopir/ir"
	"github.com/gopir/gopir/memory"
	"github.com/gopir/gopir/tensor"
)

// TestDetBetweenOpsMemory runs the ops between ppyoloe_s's convolutions
// whose kernels take the row-group and vector loops (a mean over each
// map, the head's transposes, the bins' softmax_f32, the ESE's
// per-channel scale, the residual add, the neck's 2× upsampling), at
// shapes that take them, many times: each run gives the first run's bits and leaves the
// allocator where it started; and under every capacity limit up to what
// they need they fail with ResourceExhausted and leave nothing.
func TestDetBetweenOpsMemory(t *testing.T) {
	a := memory.New(memory.Options{})
	r := rand.New(rand.NewPCG(81, 82))
	nearest2x := ir.A("axes", []int{2, 3}, "sizes", []int{40, 40}, "scales", []float64{2, 2},
		"mode", "nearest", "coordinate_transformation_mode", "asymmetric", "nearest_mode", "floor")
	for _, c := range []struct {
		name   string
		attrs  ir.Attrs
		shapes [][]int
	}{
		{"reduce_mean", ir.A("axes", []int{2, 3}, "keepdim", true), [][]int{{2, 24, 20, 20}}},
		{"transpose", ir.A("perm", []int{0, 2, 1}), [][]int{{2, 68, 100}}},
		{"softmax_f32", ir.A("axis", -1), [][]int{{2, 100, 4, 17}}},
		{"multiply", nil, [][]int{{2, 24, 20, 20}, {2, 24, 1, 1}}},
		{"add", nil, [][]int{{2, 24, 20, 20}, {2, 24, 20, 20}}},
		{"resize", nearest2x, [][]int{{2, 24, 20, 20}}},
	} {
		var in []*tensor.Tensor
		for _, sh := range c.shapes {
			in = append(in, randTensor(t, a, r, tensor.F32, sh...))
		}
		base := a.Stats().Allocated.Current
		first := mustRun(t, a, c.name, c.attrs, in...)
		want := slices.Clone(first[0].F32())
		release(first...)
		wantAllocated(t, a, base)
		for range 50 {
			y := mustRun(t, a, c.name, c.attrs, in...)
			if !slices.Equal(y[0].F32(), want) {
				t.Fatalf("%s: a repeated run differs from the first", c.name)
			}
			release(y...)
			wantAllocated(t, a, base)
		}
		checkOOMSweep(t, c.name, c.attrs, in...)
		release(in...)
	}
	wantAllocated(t, a, 0)
}
