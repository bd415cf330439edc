package ops

import (
	"fmt"
	"hash/fnv"
	"math"
	"sync"

	"github.com/gopir/gopir/ir"
	"github.com/gopir/gopir/kernels"
	"github.com/gopir/gopir/tensor"
)

// Random ops; f32 or f64, static shape.
//
//	uniform_random  {shape, dtype, min, max, seed}  () -> uniform in [min, max); min -1, max 1 by default
//	gaussian_random {shape, dtype, mean, std, seed} () -> normal; mean 0, std 1 by default
//
// dtype defaults to f32 and seed to 0. The numbers come from a
// counter-based generator (kernels.RandBits): element i is a pure function
// of the stream key and i, so the result does not depend on the thread
// count. The stream key is:
//
//   - with seed != 0, a function of the seed alone: the same numbers every
//     run, and in every op with that seed, dtype and shape;
//   - with seed 0, a function of (Ctx.Seed, Ctx.Run, the op's key, k): the
//     op's key hashes its name and position in the program (its index in
//     its block and those of the enclosing ops and regions), fixed at Bind;
//     k counts the op's executions within one run (0 for the first), so
//     that each iteration of an enclosing while draws new numbers. The
//     whole program is thus reproducible for a given Ctx.Seed, and
//     successive runs differ. An attribute stream (i64) stands for the
//     op's key: a copy of the op with its original's key (Pin) draws the
//     same numbers wherever it is placed.
//
// No gradient flows through them (NoGrad): they have no operands.

func init() {
	register(&Def{Name: "uniform_random", Infer: rndInfer(true), Compute: rndBind(true), NoGrad: true, Pin: pinStream(rndOpKey)})
	register(&Def{Name: "gaussian_random", Infer: rndInfer(false), Compute: rndBind(false), NoGrad: true, Pin: pinStream(rndOpKey)})
}

// rndSpec is the decoded attributes of a random op.
type rndSpec struct {
	shape []int
	dt    ir.DType
	a, b  float64 // min and max, or mean and std
	seed  int64
}

func rndFloat(attrs ir.Attrs, name string, def float64) (float64, error) {
	if !attrs.Has(name) {
		return def, nil
	}
	return attrs.Float(name)
}

func rndAttrs(attrs ir.Attrs, uniform bool) (*rndSpec, error) {
	s := &rndSpec{dt: ir.F32}
	var err error
	if s.shape, err = shapeAttr(attrs, false); err != nil {
		return nil, err
	}
	if attrs.Has("dtype") {
		if s.dt, err = attrs.DType("dtype"); err != nil {
			return nil, err
		}
	}
	if !s.dt.IsFloat() {
		return nil, fmt.Errorf("dtype %v is not f32 or f64", s.dt)
	}
	if attrs.Has("seed") {
		if s.seed, err = attrs.Int("seed"); err != nil {
			return nil, err
		}
	}
	an, bn, ad, bd := "min", "max", -1.0, 1.0
	if !uniform {
		an, bn, ad, bd = "mean", "std", 0, 1
	}
	if s.a, err = rndFloat(attrs, an, ad); err != nil {
		return nil, err
	}
	if s.b, err = rndFloat(attrs, bn, bd); err != nil {
		return nil, err
	}
	finite := !math.IsNaN(s.a) && !math.IsInf(s.a, 0) && !math.IsNaN(s.b) && !math.IsInf(s.b, 0)
	switch {
	case uniform && !(finite && s.a <= s.b):
		return nil, fmt.Errorf("min %v and max %v must be finite with min <= max", s.a, s.b)
	case !uniform && !(finite && s.b >= 0):
		return nil, fmt.Errorf("mean %v and std %v must be finite with std >= 0", s.a, s.b)
	}
	return s, nil
}

func rndInfer(uniform bool) func([]ir.Type, ir.Attrs) ([]ir.Type, error) {
	return func(in []ir.Type, attrs ir.Attrs) ([]ir.Type, error) {
		if err := wantOperands(in, 0); err != nil {
			return nil, err
		}
		s, err := rndAttrs(attrs, uniform)
		if err != nil {
			return nil, err
		}
		return []ir.Type{ir.TensorOf(s.dt, s.shape...)}, nil
	}
}

// rndOpKey hashes op's name and its position in the program: its index in
// its block, then for each enclosing op the region index and that op's own
// index, up to the top level.
func rndOpKey(op *ir.Op) uint64 {
	h := fnv.New64a()
	h.Write([]byte(op.Name()))
	put := func(v int) {
		var b [8]byte
		for i := range b {
			b[i] = byte(uint64(v) >> (8 * i))
		}
		h.Write(b[:])
	}
	for o := op; o != nil && o.Block() != nil; {
		put(o.Block().IndexOf(o))
		parent := o.ParentOp()
		if parent != nil {
			for i, r := range parent.Regions() {
				if r.Block() == o.Block() {
					put(i)
				}
			}
		}
		o = parent
	}
	put(0) // result index
	return h.Sum64()
}

// rndStream hands out the stream key of each execution of one op.
type rndStream struct {
	seed  int64
	opKey uint64

	mu    sync.Mutex
	run   int64
	calls uint64
	begun bool
}

func (s *rndStream) key(c *Ctx) uint64 {
	if s.seed != 0 {
		return kernels.RandKey(uint64(s.seed))
	}
	s.mu.Lock()
	if !s.begun || c.Run != s.run {
		s.begun, s.run, s.calls = true, c.Run, 0
	}
	k := s.calls
	s.calls++
	s.mu.Unlock()
	return kernels.RandKey(uint64(c.Seed), uint64(c.Run), s.opKey, k)
}

func rndBind(uniform bool) func(*ir.Op) (Compute, error) {
	return func(op *ir.Op) (Compute, error) {
		s, err := rndAttrs(op.Attrs, uniform)
		if err != nil {
			return Compute{}, err
		}
		opKey, err := streamKey(op, rndOpKey)
		if err != nil {
			return Compute{}, err
		}
		stream := &rndStream{seed: s.seed, opKey: opKey}
		return Compute{Fn: func(c *Ctx, _, out []*tensor.Tensor) error {
			y := out[0]
			key := stream.key(c)
			switch {
			case uniform && s.dt == ir.F32:
				kernels.UniformF32(y.F32(), key, s.a, s.b, c.Threads)
			case uniform:
				kernels.UniformF64(y.F64(), key, s.a, s.b, c.Threads)
			case s.dt == ir.F32:
				kernels.NormalF32(y.F32(), key, s.a, s.b, c.Threads)
			default:
				kernels.NormalF64(y.F64(), key, s.a, s.b, c.Threads)
			}
			return nil
		}}, nil
	}
}

// UniformRandom returns a tensor of dtype dt (f32 or f64) with numbers
// uniform in [lo, hi). With seed != 0 the numbers depend on the seed
// only; with seed 0 they come from the run's stream (see Ctx.Seed).
func UniformRandom(b *ir.Builder, dt ir.DType, lo, hi float64, seed int64, shape ...int) *ir.Value {
	return b.Op1("uniform_random", ir.A("shape", shape, "dtype", dt, "min", lo, "max", hi, "seed", seed))
}

// GaussianRandom returns a tensor of dtype dt (f32 or f64) with normal
// numbers of the given mean and standard deviation; seed as in
// UniformRandom.
func GaussianRandom(b *ir.Builder, dt ir.DType, mean, std float64, seed int64, shape ...int) *ir.Value {
	return b.Op1("gaussian_random", ir.A("shape", shape, "dtype", dt, "mean", mean, "std", std, "seed", seed))
}
