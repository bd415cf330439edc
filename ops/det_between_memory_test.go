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
// whose kernels take the row-group and AVX-512 loops (a mean over each
// map, the head's transposes, the bins' softmax_f32), at shapes that take
// them, many times: each run gives the first run's bits and leaves the
// allocator where it started; and under every capacity limit up to what
// they need they fail with ResourceExhausted and leave nothing.
func TestDetBetweenOpsMemory(t *testing.T) {
	a := memory.New(memory.Options{})
	r := rand.New(rand.NewPCG(81, 82))
	for _, c := range []struct {
		name  string
		attrs ir.Attrs
		shape []int
	}{
		{"reduce_mean", ir.A("axes", []int{2, 3}, "keepdim", true), []int{2, 24, 20, 20}},
		{"transpose", ir.A("perm", []int{0, 2, 1}), []int{2, 68, 100}},
		{"softmax_f32", ir.A("axis", -1), []int{2, 100, 4, 17}},
	} {
		x := randTensor(t, a, r, tensor.F32, c.shape...)
		base := a.Stats().Allocated.Current
		first := mustRun(t, a, c.name, c.attrs, x)
		want := slices.Clone(first[0].F32())
		release(first...)
		wantAllocated(t, a, base)
		for range 50 {
			y := mustRun(t, a, c.name, c.attrs, x)
			if !slices.Equal(y[0].F32(), want) {
				t.Fatalf("%s: a repeated run differs from the first", c.name)
			}
			release(y...)
			wantAllocated(t, a, base)
		}
		checkOOMSweep(t, c.name, c.attrs, x)
		release(x)
	}
	wantAllocated(t, a, 0)
}
