package ops

import (
	"fmt"

	"github.com/gopir/gopir/ir"
	"github.com/gopir/gopir/kernels"
	"github.com/gopir/gopir/tensor"
)

// Grid sampling (PyTorch's grid_sample, ONNX's GridSample in 2-D).
//
//	grid_sample {mode?, padding_mode?, align_corners?} (x, grid) -> y
//
// x is N×C×H×W and grid N×OH×OW×2, both f32 or both f64; y is N×C×OH×OW.
// Output (n, ·, i, j) samples x[n] at the point grid[n, i, j] = (gx, gy),
// normalized so that −1 and 1 are the centers of the first and last
// elements with align_corners (default false), their outer edges
// without: the input column is (gx+1)/2·(W−1), or ((gx+1)·W − 1)/2, and
// the row likewise from gy and H. mode "bilinear" (the default) weighs
// the four elements around the point, "nearest" takes the nearest one
// (halves round to even), "bicubic" weighs sixteen by Keys' cubic kernel
// with coefficient −0.75. padding_mode says what points outside the input
// read: "zeros" (the default) 0 for every element outside, "border" the
// point clamped into the input, "reflection" the point reflected about the
// input's edges (the element centers with align_corners, the outer edges
// without) and then clamped; in bicubic mode each of the sixteen elements
// is moved so instead of the point. Sums are taken in float64.
//
// Its gradient uses one helper op:
//
//	grid_sample_grad {grid_sample's attributes} (dy, x, grid) -> (dx, dgrid)
//
// dx adds each element of dy, times each weight, to the element it
// weighs; dgrid is the derivative of the sampled values with respect to
// the grid, dotted with dy over the channels: 0 in nearest mode and where
// border or reflection padding clamps the point (PyTorch's convention,
// which counts the edges themselves as clamped).

func init() {
	register(&Def{Name: "grid_sample", Infer: gridInfer, Compute: gridBind, Grad: gridGrad})
	register(&Def{Name: "grid_sample_grad", Infer: gridInferGrad, Compute: gridBindGrad, Grad: noSecondOrder})
}

var (
	gridModes    = []string{"bilinear", "nearest", "bicubic"}
	gridPaddings = []string{"zeros", "border", "reflection"}
)

// gridDecode returns the kernels' description of grid_sample's attributes
// (sizes unset).
func gridDecode(attrs ir.Attrs) (p kernels.GridSampleParams, err error) {
	mode, err := resizeEnum(attrs, "mode", "bilinear", gridModes)
	if err != nil {
		return p, err
	}
	pad, err := resizeEnum(attrs, "padding_mode", "zeros", gridPaddings)
	if err != nil {
		return p, err
	}
	p.Mode, p.Padding = kernels.GridSampleMode(mode), kernels.GridPadding(pad)
	p.AlignCorners, err = nnBool(attrs, "align_corners", false)
	return p, err
}

// gridShape checks x and grid and returns y's dims.
func gridShape(x, grid ir.Type) ([]int, error) {
	if err := nnWantFloat("x", x); err != nil {
		return nil, err
	}
	if err := nnSameDType("grid", grid, x.DType, "x", x); err != nil {
		return nil, err
	}
	if x.Rank() != 4 || grid.Rank() != 4 || !nnDimEq(grid.Dims[3], 2) {
		return nil, fmt.Errorf("x %s must be N×C×H×W and grid %s N×OH×OW×2", x, grid)
	}
	if !nnDimEq(x.Dims[0], grid.Dims[0]) {
		return nil, fmt.Errorf("x %s and grid %s differ in batch size", x, grid)
	}
	n := x.Dims[0]
	if n == ir.Dynamic {
		n = grid.Dims[0]
	}
	return []int{n, x.Dims[1], grid.Dims[1], grid.Dims[2]}, nil
}

// gridParams fills p's sizes from static x and grid shapes.
func gridParams(p kernels.GridSampleParams, x, grid []int) kernels.GridSampleParams {
	p.N, p.C, p.H, p.W, p.OH, p.OW = x[0], x[1], x[2], x[3], grid[1], grid[2]
	return p
}

func gridInfer(in []ir.Type, attrs ir.Attrs) ([]ir.Type, error) {
	if err := wantOperands(in, 2); err != nil {
		return nil, err
	}
	if _, err := gridDecode(attrs); err != nil {
		return nil, err
	}
	dims, err := gridShape(in[0], in[1])
	if err != nil {
		return nil, err
	}
	return []ir.Type{ir.TensorOf(in[0].DType, dims...)}, nil
}

func gridBind(op *ir.Op) (Compute, error) {
	p, err := gridDecode(op.Attrs)
	if err != nil {
		return Compute{}, err
	}
	return Compute{Fn: func(c *Ctx, in, out []*tensor.Tensor) error {
		x, grid, y := in[0], in[1], out[0]
		q := gridParams(p, x.Shape(), grid.Shape())
		switch x.DType() {
		case tensor.F32:
			kernels.GridSample(q, x.F32(), grid.F32(), y.F32(), nnThreads(c))
		case tensor.F64:
			kernels.GridSample(q, x.F64(), grid.F64(), y.F64(), nnThreads(c))
		}
		return nil
	}}, nil
}

// GridSample appends a sampling of x at the points of grid with the given
// mode ("bilinear", "nearest", "bicubic") and padding mode ("zeros",
// "border", "reflection").
func GridSample(b *ir.Builder, x, grid *ir.Value, mode, padding string, alignCorners bool) *ir.Value {
	return b.Op1("grid_sample", ir.A("mode", mode, "padding_mode", padding, "align_corners", alignCorners), x, grid)
}

// gridGrad: grid_sample_grad gives both gradients; the one not needed is
// dropped (it costs as much as the other, so one op does both).
func gridGrad(g *GradContext) ([]*ir.Value, error) {
	if !g.Need(0) && !g.Need(1) {
		return make([]*ir.Value, 2), nil
	}
	op := g.B.Op("grid_sample_grad", g.Op.Attrs, g.DY[0], g.X(0), g.X(1))
	dx := []*ir.Value{op.Result(0), op.Result(1)}
	for i := range dx {
		if !g.Need(i) {
			dx[i] = nil
		}
	}
	return dx, nil
}

func gridInferGrad(in []ir.Type, attrs ir.Attrs) ([]ir.Type, error) {
	if err := wantOperands(in, 3); err != nil {
		return nil, err
	}
	if _, err := gridDecode(attrs); err != nil {
		return nil, err
	}
	dy, x, grid := in[0], in[1], in[2]
	dims, err := gridShape(x, grid)
	if err != nil {
		return nil, err
	}
	if err := nnSameDType("dy", dy, x.DType, "x", x); err != nil {
		return nil, err
	}
	ok := dy.Rank() == 4
	for i := 0; ok && i < 4; i++ {
		ok = nnDimEq(dy.Dims[i], dims[i])
	}
	if !ok {
		return nil, fmt.Errorf("dy %s does not have the shape %s of grid_sample's output", dy, dimsString(dims))
	}
	return []ir.Type{x, grid}, nil
}

func gridBindGrad(op *ir.Op) (Compute, error) {
	p, err := gridDecode(op.Attrs)
	if err != nil {
		return Compute{}, err
	}
	return Compute{Fn: func(c *Ctx, in, out []*tensor.Tensor) error {
		dy, x, grid := in[0], in[1], in[2]
		q := gridParams(p, x.Shape(), grid.Shape())
		switch x.DType() {
		case tensor.F32:
			kernels.GridSampleGrad(q, dy.F32(), x.F32(), grid.F32(), out[0].F32(), out[1].F32(), nnThreads(c))
		case tensor.F64:
			kernels.GridSampleGrad(q, dy.F64(), x.F64(), grid.F64(), out[0].F64(), out[1].F64(), nnThreads(c))
		}
		return nil
	}}, nil
}
