package optimize_test

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"testing"

	"github.com/gopir/gopir/exec"
	"github.com/gopir/gopir/ir"
	"github.com/gopir/gopir/kernels"
	"github.com/gopir/gopir/memory"
	"github.com/gopir/gopir/ops"
	"github.com/gopir/gopir/optimize"
	"github.com/gopir/gopir/tensor"
)

// winogradMarks counts the convolutions of p that carry winograd:true,
// and fails t where one is neither a blocked 3×3 convolution with an
// output of 4×4 or more (kernels.ConvNCHWcWinogradOK's floor) nor an NCHW
// 3×3 one (conv2d_fused: the detector's 24-channel stem and its heads,
// kernels.Conv2DWinogradOK).
func winogradMarks(t *testing.T, p *ir.Program) int {
	t.Helper()
	n := 0
	p.Walk(func(op *ir.Op) bool {
		if on, err := op.Attrs.Bool("winograd"); err != nil || !on {
			return true
		}
		n++
		out := op.Result(0).Type()
		w := op.Operand(1).Type()
		blocked := op.Name() == "conv2d_nchwc" && out.Dims[2] >= 4 && out.Dims[3] >= 4
		if !blocked && op.Name() != "conv2d_fused" || w.Dims[2] != 3 || w.Dims[3] != 3 {
			t.Errorf("winograd:true on %s, w %s, out %s", op.Name(), w, out)
		}
		return true
	})
	return n
}

// TestWinogradNCHWcResnet: on resnet18ish the pass marks the blocked 3×3
// stride-1 convolutions of 16×16, 8×8 and 4×4 maps (10; not the 2×2
// ones), and the program gives the one without the pass's results within
// 1e-5 of the largest output, the same bits on 1 and 2 threads (each
// tile's sums do not depend on the threads' share), at batches 1 and 3;
// a cancelled run and repeated runs leave the allocator where it was.
func TestWinogradNCHWcResnet(t *testing.T) {
	if ops.NCHWcBlock() == 0 {
		t.Skip("no vector kernels for the blocked convolution here")
	}
	m := loadModel(t, "resnet18ish")
	a := memory.New(memory.Options{})
	user := copyStore(t, m.store, a)
	defer user.Release()
	without := slices.DeleteFunc(optimize.PassNames(), func(n string) bool { return n == "winograd" })
	var first map[int]exec.Results
	for _, threads := range []int{1, 2} {
		direct, _, err := optimize.Compile(m.prog, user, exec.Options{Alloc: a, Threads: threads}, without...)
		if err != nil {
			t.Fatal(err)
		}
		wino, res, err := optimize.Compile(m.prog, user, exec.Options{Alloc: a, Threads: threads, PackCache: 256 << 20})
		if err != nil {
			t.Fatal(err)
		}
		if n := winogradMarks(t, res.Program); n != 10 {
			t.Errorf("%d convolutions marked, want 10 (%s)", n, res.Summary())
		}
		if first == nil {
			first = map[int]exec.Results{}
		}
		for _, batch := range []int{1, 3} {
			feeds := map[string]*tensor.Tensor{"x": rebatch(t, m.cases[0].inputs["x"], batch)}
			want := run(t, direct, feeds)
			got := run(t, wino, feeds)
			base := a.Stats().Allocated.Current
			ctx, cancel := context.WithCancel(context.Background())
			cancel()
			if _, err := wino.Run(ctx, feeds); !errors.Is(err, context.Canceled) {
				t.Errorf("a cancelled run: %v", err)
			}
			again := run(t, wino, feeds)
			for _, o := range slices.Sorted(maps.Keys(want)) {
				what := fmt.Sprintf("threads %d batch %d %s", threads, batch, o)
				if err := closeTo(got[o], want[o], 1e-5); err != nil {
					t.Errorf("%s: winograd vs direct: %v", what, err)
				}
				if err := sameBits(again[o], got[o]); err != nil {
					t.Errorf("%s: a repeated run: %v", what, err)
				}
				if prev, ok := first[batch]; ok {
					if err := sameBits(got[o], prev[o]); err != nil {
						t.Errorf("%s vs 1 thread: %v", what, err)
					}
				}
			}
			again.Release()
			if now := a.Stats().Allocated.Current; now != base {
				t.Errorf("threads %d batch %d: %d bytes allocated after a cancelled and a repeated run, want %d", threads, batch, now, base)
			}
			want.Release()
			if threads == 1 {
				first[batch] = got
			} else {
				got.Release()
			}
			releaseAll(feeds)
		}
		direct.Store().Release()
		wino.ReleasePacked()
		wino.Store().Release()
	}
	for _, r := range first {
		r.Release()
	}
}

// TestWinogradNCHWcDetector: the deployed detector (64×64 images) with
// its blocked 3×3 stride-1 convolutions marked gives the program without
// the pass's results within 1e-5 of each output's largest value, in
// either block.
func TestWinogradNCHWcDetector(t *testing.T) {
	if testing.Short() {
		t.Skip("the detector takes seconds")
	}
	for _, b := range []int{16, 8} {
		if !kernels.ConvNCHWcWinogradOK(kernels.Conv2DParams{C: b, O: b, H: 4, W: 4, KH: 3, KW: 3, SH: 1, SW: 1, PH: 1, PW: 1, DH: 1, DW: 1, Groups: 1}, b) {
			continue // no vector transforms for b here
		}
		t.Run(fmt.Sprintf("block=%d", b), func(t *testing.T) {
			defer optimize.ForceNCHWc(b)()
			a := memory.New(memory.Options{})
			prog, store, img := deployedDetector(t, a)
			defer img.Release()
			defer store.Release()
			without := slices.DeleteFunc(optimize.PassNames(), func(n string) bool { return n == "winograd" })
			direct, _, err := optimize.Compile(prog, store, exec.Options{Alloc: a, Threads: 2}, without...)
			if err != nil {
				t.Fatal(err)
			}
			defer direct.Store().Release()
			wino, res, err := optimize.Compile(prog, store, exec.Options{Alloc: a, Threads: 2, PackCache: 64 << 20})
			if err != nil {
				t.Fatal(err)
			}
			defer wino.Store().Release()
			defer wino.ReleasePacked()
			if n := winogradMarks(t, res.Program); n == 0 {
				t.Fatalf("nothing marked: %s", res.Summary())
			}
			feeds := map[string]*tensor.Tensor{"image": img}
			want := run(t, direct, feeds)
			defer want.Release()
			for i := range 2 {
				got := run(t, wino, feeds)
				for _, o := range slices.Sorted(maps.Keys(want)) {
					if err := closeTo(got[o], want[o], 1e-5); err != nil {
						t.Errorf("run %d: %s winograd vs direct: %v", i, o, err)
					}
				}
				got.Release()
			}
		})
	}
}
