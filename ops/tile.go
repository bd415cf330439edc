package ops

import (
	"fmt"
	"math"

	"github.com/gopir/gopir/ir"
	"github.com/gopir/gopir/kernels"
	"github.com/gopir/gopir/tensor"
)

// Tiling.
//
//	tile {repeats} (x)             -> x repeated repeats[i] times along each axis i
//	tile {dims?} (x, repeats)      -> the same, repeats read at run time
//	tile_grad {shape} (dy)         -> dy's tiles summed into shape
//	tile_grad (dy, like)           -> the same, into like's run-time shape
//
// repeats has one entry >= 0 per axis of x: the attribute, or a 1-D i32
// or i64 operand of static length. The result's dim i is dims[i] *
// repeats[i]; with run-time repeats it is dynamic unless x's dim is 0 or
// the dims attribute (the result dims the builder knows, -1 for unknown,
// checked at run time) says. tile takes any dtype; tile_grad takes f32
// and f64, and each of dy's dims must be a multiple of the target's.
//
// tile allocates its result (Bind): with repeats an operand, the result's
// shape depends on its values. tile_grad writes into a result the
// executor allocates (Compute).
//
// Gradients: tile sums the tiles of dy back into x's shape (tile_grad,
// from x's static shape when it has one); tile_grad refuses to be
// differentiated again.

func init() {
	register(&Def{Name: "tile", Infer: tileInfer, Bind: tileBind, Grad: tileGrad})
	register(&Def{Name: "tile_grad", Infer: tileInferGrad, Compute: tileComputeGrad, Grad: noSecondOrder})
}

// tileDims multiplies dims by repeats; dynamic dims stay dynamic unless
// repeated 0 times.
func tileDims(dims, repeats []int) ([]int, error) {
	if len(repeats) != len(dims) {
		return nil, fmt.Errorf("repeats %v has %d entries for %s, want one per axis", repeats, len(repeats), dimsString(dims))
	}
	out := make([]int, len(dims))
	for i, r := range repeats {
		d := dims[i]
		switch {
		case r < 0:
			return nil, fmt.Errorf("repeats %v: entries must be >= 0", repeats)
		case r == 0 || d == 0:
			out[i] = 0
		case d == ir.Dynamic:
			out[i] = ir.Dynamic
		case r > math.MaxInt/d:
			return nil, fmt.Errorf("tiling %s by %v has too many elements", dimsString(dims), repeats)
		default:
			out[i] = d * r
		}
	}
	return out, nil
}

func tileInfer(in []ir.Type, attrs ir.Attrs) ([]ir.Type, error) {
	if len(in) != 1 && len(in) != 2 {
		return nil, fmt.Errorf("takes 1 or 2 operands (x and optional repeats), got %d", len(in))
	}
	dims := in[0].Dims
	var out []int
	if len(in) == 1 {
		if attrs.Has("dims") {
			return nil, fmt.Errorf("dims is for run-time repeats; the repeats attribute gives the result's dims")
		}
		repeats, err := attrs.Ints("repeats")
		if err != nil {
			return nil, err
		}
		if out, err = tileDims(dims, repeats); err != nil {
			return nil, err
		}
	} else {
		if attrs.Has("repeats") {
			return nil, fmt.Errorf("takes a repeats attribute or a repeats operand, not both")
		}
		n, err := dynVector("repeats", in[1])
		if err != nil {
			return nil, err
		}
		if n != len(dims) {
			return nil, fmt.Errorf("repeats %s has %d entries for an operand of rank %d", in[1], n, len(dims))
		}
		out = dynAllDynamic(n)
		for i, d := range dims {
			if d == 0 {
				out[i] = 0
			}
		}
		if out, err = dynRefine(attrs, out); err != nil {
			return nil, err
		}
	}
	t := ir.TensorOf(in[0].DType, out...)
	return []ir.Type{t}, t.Check()
}

func tileBind(op *ir.Op) (Kernel, error) {
	var fixed []int
	if op.NumOperands() == 1 {
		var err error
		if fixed, err = op.Attrs.Ints("repeats"); err != nil {
			return nil, err
		}
	}
	rt := op.Result(0).Type()
	return func(c *Ctx, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
		x, repeats := in[0], fixed
		if repeats == nil {
			repeats = dynInts(in[1])
		}
		dims := x.Shape()
		out, err := tileDims(dims, repeats)
		if err == nil {
			err = dynCheck(out, rt)
		}
		if err != nil {
			return nil, fmt.Errorf("cannot tile %s: %w", x.Type(), err)
		}
		// The result is x broadcast to [r0, d0, r1, d1, ...]: a copy with
		// stride 0 along each repeat.
		src := shpStrides(dims)
		shape := make([]int, 0, 2*len(dims))
		strides := make([]int, 0, 2*len(dims))
		for i, d := range dims {
			shape = append(shape, repeats[i], d)
			strides = append(strides, 0, src[i])
		}
		y, err := c.New(rt.DType, out)
		if err != nil {
			return nil, err
		}
		shpStrided(c, y, x, shape, 0, strides)
		return []*tensor.Tensor{y}, nil
	}, nil
}

// Tile returns x repeated repeats[i] times along each axis i.
func Tile(b *ir.Builder, x *ir.Value, repeats ...int) *ir.Value {
	return b.Op1("tile", ir.A("repeats", repeats), x)
}

// TileDyn is Tile with the repeats read at run time from the 1-D operand
// repeats. dims, when not nil, are the result dims the caller knows (-1
// for unknown), checked at run time.
func TileDyn(b *ir.Builder, x, repeats *ir.Value, dims []int) *ir.Value {
	var attrs ir.Attrs
	if dims != nil {
		attrs = ir.A("dims", dims)
	}
	return b.Op1("tile", attrs, x, repeats)
}

// tileGrad sums the tiles of dy into x's shape.
func tileGrad(g *GradContext) ([]*ir.Value, error) {
	dx := make([]*ir.Value, g.Op.NumOperands())
	if !g.Need(0) {
		return dx, nil
	}
	if x := g.Op.Operand(0).Type(); x.IsStatic() {
		dx[0] = g.B.Op1("tile_grad", ir.A("shape", x.Dims), g.DY[0])
	} else {
		dx[0] = g.B.Op1("tile_grad", nil, g.DY[0], g.X(0))
	}
	return dx, nil
}

// ---- tile_grad ----

func tileInferGrad(in []ir.Type, attrs ir.Attrs) ([]ir.Type, error) {
	target, err := shapeOrLike(in, attrs)
	if err != nil {
		return nil, err
	}
	dy := in[0]
	if !dy.DType.IsFloat() {
		return nil, fmt.Errorf("dy is %s; want f32 or f64", dy)
	}
	if dy.Rank() != len(target) {
		return nil, fmt.Errorf("dy %s differs in rank from the target shape %s", dy, dimsString(target))
	}
	for i, d := range dy.Dims {
		t := target[i]
		if d != ir.Dynamic && t != ir.Dynamic && (t == 0 && d != 0 || t != 0 && d%t != 0) {
			return nil, fmt.Errorf("dy %s is not a tiling of shape %s", dy, dimsString(target))
		}
	}
	return []ir.Type{ir.TensorOf(dy.DType, target...)}, nil
}

func tileComputeGrad(op *ir.Op) (Compute, error) {
	dt := op.Result(0).Type().DType
	return Compute{Fn: func(c *Ctx, in, out []*tensor.Tensor) error {
		dy, y := in[0], out[0]
		dims, to := dy.Shape(), y.Shape()
		// dy viewed as [r0, t0, r1, t1, ...], summed over the repeats.
		shape := make([]int, 0, 2*len(to))
		axes := make([]int, 0, len(to))
		for i, t := range to {
			r := 0
			if t != 0 {
				r = dims[i] / t
			}
			axes = append(axes, len(shape))
			shape = append(shape, r, t)
		}
		switch dt {
		case ir.F32:
			return kernels.Reduce(kernels.ReduceSum, c.Threads, y.F32(), dy.F32(), shape, axes)
		case ir.F64:
			return kernels.Reduce(kernels.ReduceSum, c.Threads, y.F64(), dy.F64(), shape, axes)
		}
		return nil
	}}, nil
}
