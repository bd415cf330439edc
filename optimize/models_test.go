package optimize_test

import (
	"fmt"
	"maps"
	"slices"
	"testing"

	"github.com/gopir/gopir/exec"
	"github.com/gopir/gopir/ops"
	"github.com/gopir/gopir/optimize"
	"github.com/gopir/gopir/tensor"
)

// modelPasses is what the passes do to each exported model: the number
// of rewrites per pass, in the order of optimize.Passes. nchwc's where
// the blocked convolution has vector kernels, 0 elsewhere; winograd's
// where the path of the model's convolutions runs its vector transforms
// (the blocked convolution's in blocked models: 3×3 stride-1 layers with
// outputs of 4×4 or more; else the NCHW convolution's, winogradNCHWOn),
// 0 elsewhere.
var modelPasses = []struct {
	name    string
	counts  []int
	batched bool
}{
	{"mlp", []int{0, 0, 0, 0, 2, 0, 0, 0, 0, 0, 0}, true},
	{"cnn", []int{0, 0, 2, 0, 3, 2, 2, 0, 0, 0, 1}, true},
	{"resnet18ish", []int{0, 0, 20, 0, 21, 1, 0, 0, 0, 22, 10}, true},
	{"ctrlflow", []int{2, 4, 0, 0, 1, 0, 0, 0, 1, 0, 0}, false},
	{"gru", []int{0, 0, 0, 0, 4, 0, 0, 0, 4, 0, 0}, false},
	{"lstm", []int{0, 0, 0, 0, 0, 0, 0, 0, 12, 0, 0}, false},
	{"gru_loop", []int{0, 1, 0, 0, 3, 0, 0, 0, 2, 0, 0}, false},
}

// The optimized models give the unoptimized programs' results within
// 1e-5 (relative to the output's largest value) and PyTorch's within
// 1e-4, at the golden batch and at others, with 1 and 2 threads; with
// only the passes that keep the arithmetic (constants, identities,
// fusion, pool indices) they give
// the same bits. The user's store is not touched.
func TestModelsOptimized(t *testing.T) {
	for _, mp := range modelPasses {
		t.Run(mp.name, func(t *testing.T) {
			m := loadModel(t, mp.name)
			before := storeSnapshot(m.store)
			for _, threads := range []int{1, 2} {
				plain, err := exec.Compile(m.prog, exec.Options{Alloc: m.alloc, Store: m.store, Threads: threads})
				if err != nil {
					t.Fatal(err)
				}
				all, res, err := optimize.Compile(m.prog, m.store, exec.Options{Alloc: m.alloc, Threads: threads})
				if err != nil {
					t.Fatal(err)
				}
				var counts []int
				for _, c := range res.Counts {
					counts = append(counts, c.Rewrites)
				}
				want := slices.Clone(mp.counts)
				nchwc, wino := slices.Index(optimize.PassNames(), "nchwc"), slices.Index(optimize.PassNames(), "winograd")
				if blocked := want[nchwc] > 0; ops.NCHWcBlock() == 0 || !blocked && !winogradNCHWOn(t) {
					want[wino] = 0
				}
				if ops.NCHWcBlock() == 0 {
					want[nchwc] = 0
				}
				if !slices.Equal(counts, want) {
					t.Errorf("rewrites %v (%s), want %v", counts, res.Summary(), want)
				}
				exact, _, err := optimize.Compile(m.prog, m.store, exec.Options{Alloc: m.alloc, Threads: threads}, "fold_constants", "identities", "fuse_epilogue", "drop_pool_indices")
				if err != nil {
					t.Fatal(err)
				}
				for ci, c := range m.cases {
					batches := []int{0} // the golden batch
					if mp.batched {
						batches = append(batches, 1, 5)
					}
					for _, n := range batches {
						feeds := c.inputs
						if n > 0 {
							feeds = map[string]*tensor.Tensor{}
							for k, x := range c.inputs {
								feeds[k] = rebatch(t, x, n)
							}
						}
						what := fmt.Sprintf("threads %d case %d batch %d", threads, ci, n)
						want := run(t, plain, feeds)
						got := run(t, all, feeds)
						same := run(t, exact, feeds)
						for _, o := range slices.Sorted(maps.Keys(want)) {
							if err := closeTo(got[o], want[o], 1e-5); err != nil {
								t.Errorf("%s: optimized %s vs unoptimized: %v", what, o, err)
							}
							if err := sameBits(same[o], want[o]); err != nil {
								t.Errorf("%s: identities+fusion %s vs unoptimized: %v", what, o, err)
							}
							if g, ok := c.outputs[o]; ok && n == 0 {
								if err := closeTo(got[o], g, 1e-4); err != nil {
									t.Errorf("%s: optimized %s vs PyTorch: %v", what, o, err)
								}
							}
						}
						want.Release()
						got.Release()
						same.Release()
						if n > 0 {
							releaseAll(feeds)
						}
					}
				}
				all.Store().Release()
				exact.Store().Release()
			}
			if after := storeSnapshot(m.store); !maps.EqualFunc(before, after, slices.Equal) {
				t.Errorf("the user's store changed: %d tensors before, %d after", len(before), len(after))
			}
		})
	}
}
