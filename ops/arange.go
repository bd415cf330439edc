package ops

import (
	"fmt"
	"math"

	"github.com/gopir/gopir/ir"
	"github.com/gopir/gopir/kernels"
	"github.com/gopir/gopir/tensor"
)

// arange {start, end, step, dtype} () -> 1-D [start, start+step, ...) up
// to end (excluded), of length max(0, ceil((end-start)/step)), known
// statically. start defaults to 0 and step to 1; step 0 is an error.
// dtype is f32, f64, i32 or i64; it defaults to i64 when start, end and
// step are all written as ints, else to f32 (like Paddle). For integer
// dtypes the three must be integral and the values are computed exactly;
// for floats element i is start + i*step computed in float64. It has no
// operands, so no gradient (NoGrad). The executor allocates the result
// (Compute).

func init() {
	register(&Def{Name: "arange", Infer: shpInferArange, Compute: shpComputeArange, NoGrad: true})
}

// shpArangeLimit caps the length of an arange (2^40 elements).
const shpArangeLimit = 1 << 40

// shpArangeSpec is the decoded attributes of arange.
type shpArangeSpec struct {
	dt               ir.DType
	start, end, step float64
	istart, istep, n int64
}

func shpArangeAttrs(attrs ir.Attrs) (*shpArangeSpec, error) {
	s := &shpArangeSpec{step: 1}
	allInt := true
	for _, f := range []struct {
		name     string
		dst      *float64
		required bool
	}{{"start", &s.start, false}, {"end", &s.end, true}, {"step", &s.step, false}} {
		a, ok := attrs.Get(f.name)
		if !ok && !f.required {
			continue
		}
		if _, isInt := a.(ir.Int); !isInt {
			allInt = false
		}
		v, err := attrs.Float(f.name)
		if err != nil {
			return nil, err
		}
		*f.dst = v
	}
	s.dt = ir.F32
	if allInt {
		s.dt = ir.I64
	}
	if attrs.Has("dtype") {
		var err error
		if s.dt, err = attrs.DType("dtype"); err != nil {
			return nil, err
		}
	}
	what := fmt.Sprintf("arange(%v, %v, %v)", s.start, s.end, s.step)
	switch {
	case s.step == 0:
		return nil, fmt.Errorf("%s: step is 0", what)
	case s.dt == ir.I1 || s.dt.Size() == 0:
		return nil, fmt.Errorf("%s: dtype %v is not f32, f64, i32 or i64", what, s.dt)
	}
	if s.dt.IsInt() {
		for _, v := range []float64{s.start, s.end, s.step} {
			if v != math.Trunc(v) || math.Abs(v) > 1<<53 {
				return nil, fmt.Errorf("%s: start, end and step must be integers (at most 2^53) for dtype %v", what, s.dt)
			}
		}
		s.istart, s.istep = int64(s.start), int64(s.step)
		iend := int64(s.end)
		switch {
		case s.istep > 0 && iend > s.istart:
			s.n = (iend-s.istart-1)/s.istep + 1
		case s.istep < 0 && iend < s.istart:
			s.n = (s.istart-iend-1)/-s.istep + 1
		}
		if s.dt == ir.I32 && s.n > 0 {
			last := s.istart + (s.n-1)*s.istep
			if s.istart != int64(int32(s.istart)) || last != int64(int32(last)) {
				return nil, fmt.Errorf("%s: values do not fit in i32", what)
			}
		}
	} else {
		l := math.Ceil((s.end - s.start) / s.step)
		if math.IsNaN(l) || math.IsInf(l, 0) {
			return nil, fmt.Errorf("%s: the length is not finite", what)
		}
		if l > 0 {
			s.n = int64(min(l, shpArangeLimit+1))
		}
	}
	if s.n > shpArangeLimit {
		return nil, fmt.Errorf("%s: more than 2^40 elements", what)
	}
	return s, nil
}

func shpInferArange(in []ir.Type, attrs ir.Attrs) ([]ir.Type, error) {
	if err := wantOperands(in, 0); err != nil {
		return nil, err
	}
	s, err := shpArangeAttrs(attrs)
	if err != nil {
		return nil, err
	}
	return []ir.Type{ir.TensorOf(s.dt, int(s.n))}, nil
}

func shpComputeArange(op *ir.Op) (Compute, error) {
	s, err := shpArangeAttrs(op.Attrs)
	if err != nil {
		return Compute{}, err
	}
	return Compute{Fn: func(c *Ctx, _, out []*tensor.Tensor) error {
		y := out[0]
		switch y.DType() {
		case tensor.F32:
			kernels.ArangeFloat(y.F32(), s.start, s.step, c.Threads)
		case tensor.F64:
			kernels.ArangeFloat(y.F64(), s.start, s.step, c.Threads)
		case tensor.I32:
			kernels.ArangeInt(y.I32(), s.istart, s.istep, c.Threads)
		case tensor.I64:
			kernels.ArangeInt(y.I64(), s.istart, s.istep, c.Threads)
		}
		return nil
	}}, nil
}

// Arange returns the 1-D tensor start, start+step, ... (end excluded) of
// dtype dt (f32, f64, i32 or i64; integer dtypes need integral bounds).
func Arange(b *ir.Builder, dt ir.DType, start, end, step float64) *ir.Value {
	return b.Op1("arange", ir.A("start", start, "end", end, "step", step, "dtype", dt))
}
