package ops_test

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"testing"

	"github.com/gopir/gopir/ir"
	"github.com/gopir/gopir/memory"
	"github.com/gopir/gopir/ops"
	"github.com/gopir/gopir/tensor"
)

// Goldens written by tools/golden_grid_sample.py: PyTorch's F.grid_sample
// and autograd's gradients with respect to x and the grid.

type gridGoldenCase struct {
	Name         string         `json:"name"`
	Mode         string         `json:"mode"`
	PaddingMode  string         `json:"padding_mode"`
	AlignCorners bool           `json:"align_corners"`
	X            nnGoldenTensor `json:"x"`
	Grid         nnGoldenTensor `json:"grid"`
	Y            nnGoldenTensor `json:"y"`
	DY           nnGoldenTensor `json:"dy"`
	DX           nnGoldenTensor `json:"dx"`
	DGrid        nnGoldenTensor `json:"dgrid"`
	Tol          float64        `json:"tol"`
}

func (c gridGoldenCase) attrs() ir.Attrs {
	return ir.A("mode", c.Mode, "padding_mode", c.PaddingMode, "align_corners", c.AlignCorners)
}

func TestGridSampleGolden(t *testing.T) {
	nnDebug(t)
	data, err := os.ReadFile("testdata/golden/grid_sample.json")
	if err != nil {
		t.Fatalf("%v (run /usr/bin/python3 tools/golden_grid_sample.py)", err)
	}
	var f struct{ Cases []gridGoldenCase }
	if err := json.Unmarshal(data, &f); err != nil {
		t.Fatal(err)
	}
	for _, c := range f.Cases {
		t.Run(c.Name, func(t *testing.T) {
			a := memory.New(memory.Options{})
			x, grid, dy := goldenTensor(t, a, c.X), goldenTensor(t, a, c.Grid), goldenTensor(t, a, c.DY)
			y := mustRun(t, a, "grid_sample", c.attrs(), x, grid)
			closeEnough(t, "grid_sample", y[0], c.Y.Data, c.Y.Shape, c.Tol)
			g := mustRun(t, a, "grid_sample_grad", c.attrs(), dy, x, grid)
			closeEnough(t, "dx", g[0], c.DX.Data, c.DX.Shape, c.Tol)
			closeEnough(t, "dgrid", g[1], c.DGrid.Data, c.DGrid.Shape, c.Tol)
			for _, th := range []int{1, 3} {
				o := nnRunThreads(t, a, th, "grid_sample", c.attrs(), x, grid)
				nnSameBits(t, fmt.Sprintf("grid_sample with %d threads", th), o[0], y[0])
				og := nnRunThreads(t, a, th, "grid_sample_grad", c.attrs(), dy, x, grid)
				for i := range og {
					nnSameBits(t, fmt.Sprintf("grid_sample_grad result %d with %d threads", i, th), og[i], g[i])
				}
				release(o...)
				release(og...)
			}
			release(y...)
			release(g...)
			release(x, grid, dy)
			wantAllocated(t, a, 0)
		})
	}
}

func TestGridSampleGrad(t *testing.T) {
	r := rand.New(rand.NewPCG(31, 32))
	for _, mode := range []string{"bilinear", "nearest", "bicubic"} {
		for _, pad := range []string{"zeros", "border", "reflection"} {
			for _, align := range []bool{false, true} {
				attrs := ir.A("mode", mode, "padding_mode", pad, "align_corners", align)
				t.Run(fmt.Sprint(attrs), func(t *testing.T) {
					x := f64Rand(t, r, -1, 1, 2, 2, 3, 4)
					grid := f64Rand(t, r, -1.2, 1.2, 2, 3, 2, 2)
					defer release(x, grid)
					// Nearest mode's dgrid is 0, which finite differences
					// away from rounding ties agree with.
					checkOpGrad(t, "grid_sample", attrs, x, grid)
					shpCheckGrad(t, shpInIf, shpGradCase{name: "grid_sample", attrs: attrs, in: []*tensor.Tensor{x, grid}, dyn: [][]int{{0, 2}, {1}}})
				})
			}
		}
	}
}

func TestGridSampleInfer(t *testing.T) {
	got := nnInferOK(t, "grid_sample", nil, nnT(ir.F32, -1, 3, 8, 9), nnT(ir.F32, 2, 5, 6, 2))
	if got[0].String() != "tensor<2x3x5x6xf32>" {
		t.Fatalf("type %s", got[0])
	}
	x, grid := nnT(ir.F32, 2, 3, 8, 9), nnT(ir.F32, 2, 5, 6, 2)
	nnInferErr(t, "grid_sample", ir.A("mode", "linear"), []string{`mode:"linear"`}, x, grid)
	nnInferErr(t, "grid_sample", ir.A("padding_mode", "wrap"), []string{"padding_mode"}, x, grid)
	nnInferErr(t, "grid_sample", ir.A("align_corners", 1), []string{"align_corners"}, x, grid)
	nnInferErr(t, "grid_sample", nil, []string{"must have the dtype"}, x, nnT(ir.F64, 2, 5, 6, 2))
	nnInferErr(t, "grid_sample", nil, []string{"N×OH×OW×2"}, x, nnT(ir.F32, 2, 5, 6, 3))
	nnInferErr(t, "grid_sample", nil, []string{"N×C×H×W"}, nnT(ir.F32, 3, 8, 9), grid)
	nnInferErr(t, "grid_sample", nil, []string{"batch size"}, x, nnT(ir.F32, 3, 5, 6, 2))
	nnInferErr(t, "grid_sample", nil, []string{"f32 or f64"}, nnT(ir.I64, 2, 3, 8, 9), grid)
	nnInferErr(t, "grid_sample_grad", nil, []string{"grid_sample's output"}, nnT(ir.F32, 2, 3, 5, 5), x, grid)
	nnInferErr(t, "grid_sample_grad", nil, []string{"dy"}, nnT(ir.F64, 2, 3, 5, 6), x, grid)
}

func TestGridSampleMemory(t *testing.T) {
	r := rand.New(rand.NewPCG(33, 34))
	a := memory.New(memory.Options{})
	x := randTensor(t, a, r, tensor.F32, 2, 3, 6, 5)
	grid := randTensor(t, a, r, tensor.F32, 2, 4, 3, 2)
	bad := randTensor(t, a, r, tensor.F32, 3, 4, 3, 2)
	attrs := ir.A("mode", "bicubic", "padding_mode", "reflection")
	base := a.Stats().Allocated.Current
	b := ir.NewBuilder(ir.NewProgram())
	op := b.Op("grid_sample", attrs, ops.Data(b, "x", ir.F32, ir.Dynamic, 3, 6, 5), ops.Data(b, "g", ir.F32, ir.Dynamic, 4, 3, 2))
	k, err := ops.Bind(op)
	if err != nil {
		t.Fatal(err)
	}
	for range 30 {
		y := mustRun(t, a, "grid_sample", attrs, x, grid)
		g := mustRun(t, a, "grid_sample_grad", attrs, y[0], x, grid)
		release(y...)
		release(g...)
		if _, err := k(&ops.Ctx{Alloc: a, Threads: 2}, []*tensor.Tensor{x, bad}); err == nil {
			t.Fatal("batch sizes 2 and 3: no error")
		}
		wantAllocated(t, a, base)
	}
	checkOOMSweep(t, "grid_sample", attrs, x, grid)
	y := mustRun(t, a, "grid_sample", attrs, x, grid)
	checkOOMSweep(t, "grid_sample_grad", attrs, y[0], x, grid)
	release(y...)
	release(x, grid, bad)
	wantAllocated(t, a, 0)
}

// Empty inputs, outputs and grids give empty or zero results.
func TestGridSampleEmpty(t *testing.T) {
	a := memory.New(memory.Options{})
	r := rand.New(rand.NewPCG(35, 36))
	for _, c := range []struct{ x, grid []int }{
		{[]int{0, 2, 3, 3}, []int{0, 2, 2, 2}},
		{[]int{2, 0, 3, 3}, []int{2, 2, 2, 2}},
		{[]int{1, 2, 3, 3}, []int{1, 0, 4, 2}},
		{[]int{1, 2, 0, 3}, []int{1, 2, 2, 2}},
	} {
		for _, mode := range gridModeNames {
			attrs := ir.A("mode", mode, "padding_mode", "reflection")
			x := randTensor(t, a, r, tensor.F64, c.x...)
			g := randTensor(t, a, r, tensor.F64, c.grid...)
			y := mustRun(t, a, "grid_sample", attrs, x, g)
			for i := range y[0].Len() {
				if v := y[0].F64()[i]; v != 0 {
					t.Fatalf("%v %v %s: element %d = %v, want 0", c.x, c.grid, mode, i, v)
				}
			}
			d := mustRun(t, a, "grid_sample_grad", attrs, y[0], x, g)
			release(y...)
			release(d...)
			release(x, g)
		}
	}
	wantAllocated(t, a, 0)
}

var gridModeNames = []string{"bilinear", "nearest", "bicubic"}
