package ops

import (
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/gopir/gopir/kernels"
	"github.com/gopir/gopir/memory"
	"github.com/gopir/gopir/tensor"
)

// TestEwResultShape checks the allocation-free result shape against
// kernels.BroadcastShapes on random shapes of up to three operands,
// broadcastable or not.
func TestEwResultShape(t *testing.T) {
	a := memory.New(memory.Options{})
	r := rand.New(rand.NewPCG(4, 2))
	dims := []int{0, 1, 1, 2, 3}
	for range 5000 {
		n := 1 + r.IntN(3)
		var in []*tensor.Tensor
		var shapes [][]int
		for range n {
			s := make([]int, r.IntN(4))
			for i := range s {
				s[i] = dims[r.IntN(len(dims))]
			}
			x, err := tensor.New(a, tensor.F32, s...)
			if err != nil {
				t.Fatal(err)
			}
			in = append(in, x)
			shapes = append(shapes, s)
		}
		want, werr := kernels.BroadcastShapes(shapes...)
		got, err := ewResultShape(in)
		if (err == nil) != (werr == nil) || err == nil && !slices.Equal(got, want) {
			t.Fatalf("shapes %v: got %v %v, want %v %v", shapes, got, err, want, werr)
		}
		for _, x := range in {
			x.Release()
		}
	}
}
