package ops

import (
	"fmt"
	"unsafe"

	"github.com/gopir/gopir/ir"
	"github.com/gopir/gopir/kernels"
	"github.com/gopir/gopir/tensor"
)

// Matrix product.
//
//	matmul {transpose_x, transpose_y} (x, y) -> out
//
// Like numpy.matmul: operands of rank >= 1, f32 or f64 (both the same).
// The last two dims are the matrices (after transposing them when
// transpose_x / transpose_y is true; default false) and the leading dims
// are batch dims, broadcast against each other. A 1-D x is promoted to a
// 1×K row and a 1-D y to a K×1 column, and the added dim is removed from
// the result; the transpose flags do not apply to 1-D operands. So
// [B,M,K]·[K,N] -> [B,M,N], [K]·[K] -> scalar, [M,K]·[K] -> [M].
// Runs on the multi-threaded GEMM; a batched x times an unbatched y is one
// GEMM over the stacked rows, without copies.

func init() {
	register(&Def{Name: "matmul", Infer: inferMatmul, Compute: bindMatmul, Grad: nnGradMatmul, Flops: matmulFlops})
}

// nnMatmulDims is the decomposition of a matmul's operands.
type nnMatmulDims struct {
	xBatch, yBatch, batch []int
	m, n, k               int
	xTrans, yTrans        bool // transpose flags that apply (not on 1-D operands)
	out                   []int
}

// nnMatmulShape applies the matmul shape rule to x and y (dims may be
// dynamic in Infer; they are static at run time).
func nnMatmulShape(x, y ir.Type, tx, ty bool) (nnMatmulDims, error) {
	var d nnMatmulDims
	if x.Rank() == 0 || y.Rank() == 0 {
		return d, fmt.Errorf("operands must have rank >= 1, got x %s and y %s", x, y)
	}
	xd, yd := x.Dims, y.Dims
	var k2 int
	xVec, yVec := len(xd) == 1, len(yd) == 1
	if xVec {
		d.m, d.k = 1, xd[0]
	} else {
		d.m, d.k = xd[len(xd)-2], xd[len(xd)-1]
		if tx {
			d.m, d.k = d.k, d.m
		}
		d.xBatch = xd[:len(xd)-2]
		d.xTrans = tx
	}
	if yVec {
		k2, d.n = yd[0], 1
	} else {
		k2, d.n = yd[len(yd)-2], yd[len(yd)-1]
		if ty {
			k2, d.n = d.n, k2
		}
		d.yBatch = yd[:len(yd)-2]
		d.yTrans = ty
	}
	if !nnDimEq(d.k, k2) {
		return d, fmt.Errorf("x %s and y %s: contracted dims %d and %d differ (transpose_x=%v, transpose_y=%v)", x, y, d.k, k2, tx, ty)
	}
	if d.k == ir.Dynamic {
		d.k = k2
	}
	batch, err := broadcastDims(d.xBatch, d.yBatch)
	if err != nil {
		return d, fmt.Errorf("x %s and y %s: batch dims %s and %s are not broadcastable", x, y, dimsString(d.xBatch), dimsString(d.yBatch))
	}
	d.batch = batch
	d.out = append([]int(nil), batch...)
	if !xVec {
		d.out = append(d.out, d.m)
	}
	if !yVec {
		d.out = append(d.out, d.n)
	}
	return d, nil
}

func inferMatmul(in []ir.Type, attrs ir.Attrs) ([]ir.Type, error) {
	if err := wantOperands(in, 2); err != nil {
		return nil, err
	}
	tx, ty, err := nnMatmulAttrs(attrs)
	if err != nil {
		return nil, err
	}
	x, y := in[0], in[1]
	if err := nnWantFloat("x", x); err != nil {
		return nil, err
	}
	if err := nnSameDType("y", y, x.DType, "x", x); err != nil {
		return nil, err
	}
	d, err := nnMatmulShape(x, y, tx, ty)
	if err != nil {
		return nil, err
	}
	return []ir.Type{ir.TensorOf(x.DType, d.out...)}, nil
}

func nnMatmulAttrs(attrs ir.Attrs) (tx, ty bool, err error) {
	if tx, err = nnBool(attrs, "transpose_x", false); err != nil {
		return
	}
	ty, err = nnBool(attrs, "transpose_y", false)
	return
}

// nnMatmulPlan is what the matmul kernel derives from its operands'
// shapes.
type nnMatmulPlan struct {
	d  nnMatmulDims
	xo nnMatmulX
	yo []int
}

func bindMatmul(op *ir.Op) (Compute, error) { return nnBindMatmul(op, nil) }

// nnBindMatmul is the kernel of matmul, or with an epilogue e that of
// matmul_fused (see fused.go), whose epilogue operands follow x and y.
func nnBindMatmul(op *ir.Op, e *fusedEpi) (Compute, error) {
	tx, ty, err := nnMatmulAttrs(op.Attrs)
	if err != nil {
		return Compute{}, err
	}
	var plans shapeMemo[*nnMatmulPlan]
	name, dts := op.Name(), ewOperandDTypes(op)
	pack := matmulPack(op.Operand(1).Type().DType, ty)
	return Compute{Pack: pack, Fn: func(c *Ctx, in, out []*tensor.Tensor) error {
		x, y := in[0], in[1]
		pl, ok := plans.lookup(x.Shape(), y.Shape())
		if !ok {
			d, err := nnMatmulShape(nnType(x), nnType(y), tx, ty)
			if err != nil {
				return err
			}
			xo, yo := nnMatmulOffsets(d)
			// The plan outlives these operands: it must not keep their
			// shapes, whose headers the executor may recycle.
			d.xBatch, d.yBatch, d.batch, d.out = nil, nil, nil, nil
			pl = &nnMatmulPlan{d, xo, yo}
			plans.store(pl, x.Shape(), y.Shape())
		}
		d, xo, yo := &pl.d, &pl.xo, pl.yo
		var ep kernels.Epilogue
		if e != nil {
			if err := ewCheckInputs(name, in, dts); err != nil {
				return err
			}
			var err error
			if ep, err = e.epilogue(name, in, out[0], d.n); err != nil {
				return err
			}
		}
		if pb := c.Packed(); pb != nil && y.Rank() == 2 && len(xo.off) == 1 {
			// One product with y packed once (a weight at inference).
			switch x.DType() {
			case tensor.F32:
				matmulPacked(d, xo.m, x.F32(), y.F32(), nnBytesAs[float32](pb), out[0].F32(), ep, nnThreads(c))
			case tensor.F64:
				matmulPacked(d, xo.m, x.F64(), y.F64(), nnBytesAs[float64](pb), out[0].F64(), ep, nnThreads(c))
			}
			return nil
		}
		switch x.DType() {
		case tensor.F32:
			kernels.MatmulFused(d.xTrans, d.yTrans, xo.m, d.n, d.k, x.F32(), xo.off, y.F32(), yo, out[0].F32(), ep, nnThreads(c))
		case tensor.F64:
			kernels.MatmulFused(d.xTrans, d.yTrans, xo.m, d.n, d.k, x.F64(), xo.off, y.F64(), yo, out[0].F64(), ep, nnThreads(c))
		}
		return nil
	}}, nil
}

// matmulPack is matmul's Compute.Pack: y, when it is a matrix (no batch
// dims), packed for the GEMM's micro-kernel, so that a weight constant at
// inference is not packed again on every call.
func matmulPack(dt ir.DType, ty bool) *Pack {
	if dt != ir.F32 && dt != ir.F64 {
		return nil
	}
	kn := func(y []int) (k, n int) {
		if ty {
			return y[1], y[0]
		}
		return y[0], y[1]
	}
	return &Pack{
		Operand: 1,
		Bytes: func(shapes [][]int) int64 {
			y := shapes[1]
			if len(y) != 2 {
				return 0
			}
			k, n := kn(y)
			if dt == ir.F32 {
				return int64(kernels.PackedGemmBLen[float32](k, n)) * 4
			}
			return int64(kernels.PackedGemmBLen[float64](k, n)) * 8
		},
		Fn: func(_ [][]int, y *tensor.Tensor, dst []byte) {
			k, n := kn(y.Shape())
			ld := max(y.Shape()[1], 1)
			if dt == ir.F32 {
				kernels.PackGemmB(nnBytesAs[float32](dst), ty, k, n, y.F32(), ld)
				return
			}
			kernels.PackGemmB(nnBytesAs[float64](dst), ty, k, n, y.F64(), ld)
		},
	}
}

// matmulPacked is the product x·y, then the epilogue ep, with y (a
// matrix) also packed in pb.
func matmulPacked[T float32 | float64](d *nnMatmulDims, m int, x, y, pb, out []T, ep kernels.Epilogue, threads int) {
	kernels.MatmulPackedB(d.xTrans, d.yTrans, m, d.n, d.k, x, y, pb, out, ep, threads)
}

// nnBytesAs views b, 64-byte aligned, as a []T.
func nnBytesAs[T float32 | float64](b []byte) []T {
	var z T
	return unsafe.Slice((*T)(unsafe.Pointer(unsafe.SliceData(b))), len(b)/int(unsafe.Sizeof(z)))
}

// nnMatmulX is x's side of the batched product: its offsets and the rows
// per product (m, or m times the batch when the batch folds into rows).
type nnMatmulX struct {
	off []int
	m   int
}

// nnMatmulOffsets returns where each product's x and y start. When x is
// not transposed, carries the whole batch itself and y has no batch to
// broadcast, the batch folds into one GEMM of batch·m rows.
func nnMatmulOffsets(d nnMatmulDims) (nnMatmulX, []int) {
	nb := nnProd(d.batch)
	if nnProd(d.yBatch) == 1 && nnProd(d.xBatch) == nb && !d.xTrans {
		return nnMatmulX{off: []int{0}, m: nb * d.m}, []int{0}
	}
	return nnMatmulX{off: nnBroadcastOffsets(d.xBatch, d.batch, d.m*d.k), m: d.m},
		nnBroadcastOffsets(d.yBatch, d.batch, d.k*d.n)
}

// nnBroadcastOffsets returns, for each index of the row-major batch shape
// dst, the element offset of the matching block (of block elements) in an
// operand whose batch dims src broadcast to dst (aligned from the right).
func nnBroadcastOffsets(src, dst []int, block int) []int {
	nb := nnProd(dst)
	offs := make([]int, nb)
	if nnProd(src) <= 1 {
		return offs
	}
	// strides of src aligned to dst, 0 where src broadcasts
	strides := make([]int, len(dst))
	s := block
	for i := len(dst) - 1; i >= 0; i-- {
		j := i - (len(dst) - len(src))
		if j < 0 {
			continue
		}
		if src[j] != 1 {
			strides[i] = s
		}
		s *= src[j]
	}
	idx := make([]int, len(dst))
	off := 0
	for b := range nb {
		offs[b] = off
		for i := len(dst) - 1; i >= 0; i-- {
			idx[i]++
			off += strides[i]
			if idx[i] < dst[i] {
				break
			}
			off -= strides[i] * idx[i]
			idx[i] = 0
		}
	}
	return offs
}

// Matmul appends the product of x and y (see the matmul op).
func Matmul(b *ir.Builder, x, y *ir.Value, transposeX, transposeY bool) *ir.Value {
	return b.Op1("matmul", ir.A("transpose_x", transposeX, "transpose_y", transposeY), x, y)
}

// nnGradMatmul: with out = op(X)·op(Y), dop(X) = dOut·op(Y)ᵀ and
// dop(Y) = op(X)ᵀ·dOut, transposed back where a flag was set, and summed
// over batch dims an operand was broadcast along. A 1-D operand is
// promoted as the forward does (x to a 1×K row, y to a K×1 column, with
// dOut unsqueezed to match) and its gradient is squeezed back to [K].
func nnGradMatmul(g *GradContext) ([]*ir.Value, error) {
	tx, _ := ewOptBool(g.Op.Attrs, "transpose_x", false)
	ty, _ := ewOptBool(g.Op.Attrs, "transpose_y", false)
	xVec := g.Op.Operand(0).Type().Rank() == 1
	yVec := g.Op.Operand(1).Type().Rank() == 1
	dout := g.DY[0]
	// Promote dOut to the 2-D (batched) product's shape.
	switch {
	case xVec && yVec:
		dout = Unsqueeze(g.B, dout, 0, 1)
	case xVec:
		dout = Unsqueeze(g.B, dout, -2)
	case yVec:
		dout = Unsqueeze(g.B, dout, -1)
	}
	if xVec {
		tx = false
	}
	if yVec {
		ty = false
	}
	x := func() *ir.Value {
		if xVec {
			return Unsqueeze(g.B, g.X(0), 0) // 1×K
		}
		return g.X(0)
	}
	y := func() *ir.Value {
		if yVec {
			return Unsqueeze(g.B, g.X(1), 1) // K×1
		}
		return g.X(1)
	}
	// Without batch dims nothing was broadcast: each gradient already has
	// its operand's shape, and reading the operand's shape at run time
	// would only keep it alive.
	plain := g.Op.Operand(0).Type().Rank() <= 2 && g.Op.Operand(1).Type().Rank() <= 2
	unbroadcast := func(d *ir.Value, i int) *ir.Value {
		if plain {
			return d
		}
		return g.Unbroadcast(d, i)
	}
	dx := make([]*ir.Value, 2)
	if g.Need(0) {
		if tx {
			dx[0] = Matmul(g.B, y(), dout, ty, true)
		} else {
			dx[0] = Matmul(g.B, dout, y(), false, !ty)
		}
		if xVec { // [..., 1, K] -> [..., K]
			dx[0] = Squeeze(g.B, dx[0], -2)
		}
		dx[0] = unbroadcast(dx[0], 0)
	}
	if g.Need(1) {
		if ty {
			dx[1] = Matmul(g.B, dout, x(), true, tx)
		} else {
			dx[1] = Matmul(g.B, x(), dout, !tx, false)
		}
		if yVec { // [..., K, 1] -> [..., K]
			dx[1] = Squeeze(g.B, dx[1], -1)
		}
		dx[1] = unbroadcast(dx[1], 1)
	}
	return dx, nil
}
