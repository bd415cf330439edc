package ops

import (
	"fmt"
	"sync"

	"github.com/gopir/gopir/ir"
	"github.com/gopir/gopir/kernels"
	"github.com/gopir/gopir/tensor"
)

// Dropout.
//
//	dropout {p, training, seed} (x) -> (out, mask)
//
// x is f32 or f64. With training=true (the default) each element is zeroed
// with probability p (default 0.5, 0 ≤ p ≤ 1) and the others are scaled by
// 1/(1−p): mask has x's shape and dtype and holds 0 or 1/(1−p), and
// out = x·mask, so the backward is dy·mask. With training=false, out is x
// itself (a view sharing its storage, no copy) and mask is a rank-0 tensor
// holding 1, so dy·mask still broadcasts to the right gradient.
//
// Randomness is a counter-based stream: element i's draw is a pure function
// of (key, i), so masks do not depend on the thread count. With a nonzero
// seed attribute the key comes from that seed alone (every call draws the
// same mask). With seed 0 or absent it comes from the context's Seed and
// Run, the op's position in the program (its index path through blocks
// and regions) and how many times this op's kernel already ran in this
// run, so a dropout inside a while body draws a fresh mask each iteration,
// and every run of a program is reproducible from its seed. An attribute
// stream (i64) stands for the op's position: a copy of the op with its
// original's (Pin) draws the same masks wherever it is placed.

func init() {
	register(&Def{Name: "dropout", Infer: inferDropout, Compute: bindDropout, Grad: nnGradDropout, Pin: pinStream(dropoutPosKey)})
}

type nnDropAttrs struct {
	p        float64
	training bool
	seed     int64
}

func nnDropDecode(attrs ir.Attrs) (a nnDropAttrs, err error) {
	if a.p, err = nnFloat(attrs, "p", 0.5); err != nil {
		return
	}
	if !(a.p >= 0 && a.p <= 1) {
		return a, fmt.Errorf("attribute p:%g must be in [0, 1]", a.p)
	}
	if a.training, err = nnBool(attrs, "training", true); err != nil {
		return
	}
	seed, err := nnInt(attrs, "seed", 0)
	a.seed = int64(seed)
	return
}

func inferDropout(in []ir.Type, attrs ir.Attrs) ([]ir.Type, error) {
	if err := wantOperands(in, 1); err != nil {
		return nil, err
	}
	a, err := nnDropDecode(attrs)
	if err != nil {
		return nil, err
	}
	x := in[0]
	if err := nnWantFloat("x", x); err != nil {
		return nil, err
	}
	mask := ir.Scalar(x.DType)
	if a.training {
		mask = ir.TensorOf(x.DType, x.Dims...)
	}
	return []ir.Type{ir.TensorOf(x.DType, x.Dims...), mask}, nil
}

// nnOpPosition is the index path of op from the program's top block: for
// each enclosing op, its index in its block and the region it is in.
func nnOpPosition(op *ir.Op) []uint64 {
	var path []uint64
	for op != nil && op.Block() != nil {
		blk := op.Block()
		path = append(path, uint64(blk.IndexOf(op)))
		parent := blk.ParentOp()
		if parent != nil {
			for r, reg := range parent.Regions() {
				if reg.Block() == blk {
					path = append(path, uint64(r))
				}
			}
		}
		op = parent
	}
	return path
}

// dropoutPosKey is the stream key of op's position.
func dropoutPosKey(op *ir.Op) uint64 { return kernels.DropoutKey(nnOpPosition(op)...) }

func bindDropout(op *ir.Op) (Compute, error) {
	a, err := nnDropDecode(op.Attrs)
	if err != nil {
		return Compute{}, err
	}
	if !a.training {
		// out is a view of x; mask the scalar 1.
		return Compute{
			Fn: func(_ *Ctx, _, out []*tensor.Tensor) error {
				fill(out[1], 1)
				return nil
			},
			View: []int{0, -1},
		}, nil
	}
	posKey, err := streamKey(op, dropoutPosKey)
	if err != nil {
		return Compute{}, err
	}
	// Calls of this kernel within the current (Seed, Run).
	var mu sync.Mutex
	var lastSeed, lastRun int64
	var calls uint64
	started := false
	nextKey := func(c *Ctx) uint64 {
		if a.seed != 0 {
			return kernels.DropoutKey(uint64(a.seed))
		}
		mu.Lock()
		defer mu.Unlock()
		if !started || c.Seed != lastSeed || c.Run != lastRun {
			started, lastSeed, lastRun, calls = true, c.Seed, c.Run, 0
		}
		k := kernels.DropoutKey(0, uint64(c.Seed), uint64(c.Run), posKey, calls)
		calls++
		return k
	}
	return Compute{Fn: func(c *Ctx, in, out []*tensor.Tensor) error {
		x := in[0]
		key := nextKey(c)
		switch x.DType() {
		case tensor.F32:
			kernels.Dropout(x.F32(), out[0].F32(), out[1].F32(), a.p, key, nnThreads(c))
		case tensor.F64:
			kernels.Dropout(x.F64(), out[0].F64(), out[1].F64(), a.p, key, nnThreads(c))
		}
		return nil
	}}, nil
}

// Dropout appends a dropout of x with drop probability p and returns out
// and the scale mask. seed 0 draws from the executor's seeded stream.
func Dropout(b *ir.Builder, x *ir.Value, p float64, training bool, seed int64) (out, mask *ir.Value) {
	op := b.Op("dropout", ir.A("p", p, "training", training, "seed", seed), x)
	return op.Result(0), op.Result(1)
}

// nnGradDropout: dx = dy·mask, or dy when not training. The mask does not
// depend on x, so a gradient flowing into it contributes nothing.
func nnGradDropout(g *GradContext) ([]*ir.Value, error) {
	if !g.Need(0) || g.DY[0] == nil {
		return []*ir.Value{nil}, nil
	}
	a, err := nnDropDecode(g.Op.Attrs)
	if err != nil {
		return nil, err
	}
	if !a.training {
		return []*ir.Value{g.DY[0]}, nil
	}
	return []*ir.Value{Multiply(g.B, g.DY[0], g.Y(1))}, nil
}
