package optimize

import (
	"fmt"
	"math"

	"github.com/gopir/gopir/ir"
	"github.com/gopir/gopir/ops"
)

// Folding: a conv2d or matmul followed by ops that each map every output
// channel affinely (y = a·y + c, a and c known per channel) computes
// a·(x ⊛ w) + c = x ⊛ (a·w) + c, so the chain can become the product with
// weights scaled per output channel plus one bias add. The scaled weights
// and the bias are computed once, in float64 from the parameter values and
// rounded to the weights' dtype, and stored as new parameters (Params).
// The sums are then taken over scaled terms, so the results differ from
// the unfolded chain's by rounding (about 1e-7 relative in float32).

// producer is a conv2d or matmul whose output channels a fold can scale
// through its weights.
type producer struct {
	op     *ir.Op
	weight *ir.Value // operand 1
	axis   int       // the channel axis of the result
	wAxis  int       // the axis of the weight that indexes output channels
}

// asProducer reports whether op is a conv2d (OIHW weight) or a matmul
// whose operands have rank >= 2 (the channels are the columns of the
// result: the last dim of y, or its second to last when transposed).
func asProducer(op *ir.Op) (producer, bool) {
	if len(op.Results()) != 1 || !isFloat(op.Result(0).Type()) {
		return producer{}, false
	}
	out := op.Result(0).Type()
	switch op.Name() {
	case "conv2d":
		if out.Rank() != 4 {
			return producer{}, false
		}
		return producer{op: op, weight: op.Operand(1), axis: 1, wAxis: 0}, true
	case "matmul":
		x, y := op.Operand(0).Type(), op.Operand(1).Type()
		if x.Rank() < 2 || y.Rank() < 2 {
			return producer{}, false
		}
		ty, err := boolAttr(op.Attrs, "transpose_y")
		if err != nil {
			return producer{}, false
		}
		wAxis := y.Rank() - 1
		if ty {
			wAxis = y.Rank() - 2
		}
		return producer{op: op, weight: op.Operand(1), axis: out.Rank() - 1, wAxis: wAxis}, true
	}
	return producer{}, false
}

func boolAttr(attrs ir.Attrs, name string) (bool, error) {
	if !attrs.Has(name) {
		return false, nil
	}
	return attrs.Bool(name)
}

// affine is the per-channel map y ↦ a·y + c that a chain of ops after a
// producer computes, and the chain itself.
type affine struct {
	a, c    []float64
	chain   []*ir.Op  // the ops after the producer, in order
	end     *ir.Value // the chain's value (its last op's result)
	scales  bool      // some step multiplies or divides
	shifts  int       // steps that only add or subtract
	bnSteps int       // batch_norm steps
}

// stepKinds says which ops a trace may take.
type stepKinds struct {
	elementwise bool // add, subtract, multiply, divide, scale, neg with known per-channel values
	biasAdd     bool // add of a known per-channel value (a conv's bias before its batch_norm)
	batchNorm   bool // batch_norm in evaluation mode, ending the trace
}

// trace follows pr's result through single-use ops of the allowed kinds
// and returns the map they compute together.
func trace(pr producer, params *Params, kinds stepKinds) affine {
	out := pr.op.Result(0).Type()
	n := out.Dims[pr.axis]
	f := affine{a: make([]float64, n), c: make([]float64, n), end: pr.op.Result(0)}
	for i := range f.a {
		f.a[i] = 1
	}
	for {
		op, at, ok := soleUser(f.end)
		if !ok || op.Block() != pr.op.Block() {
			return f
		}
		a, c := append([]float64(nil), f.a...), append([]float64(nil), f.c...)
		bn := false
		switch name := op.Name(); {
		case name == "batch_norm" && kinds.batchNorm && at == 0:
			if !bnStep(op, out, pr.axis, params, a, c) {
				return f
			}
			bn = true
		case kinds.elementwise || kinds.biasAdd && name == "add":
			if !ewStep(op, at, out, pr.axis, params, kinds.elementwise, a, c) {
				return f
			}
		default:
			return f
		}
		if !finite(a) || !finite(c) {
			return f
		}
		scales := false
		for i := range a {
			if a[i] != f.a[i] {
				scales = true
			}
		}
		f.a, f.c, f.chain, f.end = a, c, append(f.chain, op), op.Result(0)
		f.scales = f.scales || scales
		switch {
		case bn:
			f.bnSteps++
			return f
		case !scales:
			f.shifts++
		}
	}
}

// ewStep applies the elementwise op (the current value is operand at) to
// a and c, and reports whether it is affine per channel with known
// values and keeps the value's type.
func ewStep(op *ir.Op, at int, out ir.Type, axis int, params *Params, all bool, a, c []float64) bool {
	if op.NumResults() != 1 || !op.Result(0).Type().Equal(out) {
		return false
	}
	switch op.Name() {
	case "neg":
		if !all {
			return false
		}
		for i := range a {
			a[i], c[i] = -a[i], -c[i]
		}
		return true
	case "scale":
		s, err1 := floatAttr(op.Attrs, "scale", 1)
		b, err2 := floatAttr(op.Attrs, "bias", 0)
		if !all || err1 != nil || err2 != nil {
			return false
		}
		for i := range a {
			a[i], c[i] = a[i]*s, c[i]*s+b
		}
		return true
	case "add", "subtract", "multiply", "divide":
	default:
		return false
	}
	if op.NumOperands() != 2 || (!all && op.Name() != "add") {
		return false
	}
	k, ok := perChannel(other(op, at), out, axis, params)
	if !ok {
		return false
	}
	for i := range a {
		switch {
		case op.Name() == "add":
			c[i] += k[i]
		case op.Name() == "subtract" && at == 0:
			c[i] -= k[i]
		case op.Name() == "subtract":
			a[i], c[i] = -a[i], k[i]-c[i]
		case op.Name() == "multiply":
			a[i], c[i] = a[i]*k[i], c[i]*k[i]
		case op.Name() == "divide" && at == 0 && k[i] != 0:
			a[i], c[i] = a[i]/k[i], c[i]/k[i]
		default: // k / y is not affine in y; y / 0 has no finite fold
			return false
		}
	}
	return true
}

// bnStep applies batch_norm in evaluation mode to a and c (as its kernel
// does: y·mul + add with mul = scale/√(var+ε), add = bias − mean·mul),
// when its statistics and affine parameters are known, its channels are
// the producer's and it has no other result in use.
func bnStep(op *ir.Op, out ir.Type, axis int, params *Params, a, c []float64) bool {
	if axis != 1 || op.NumOperands() != 5 {
		return false
	}
	training, err := boolAttrDefault(op.Attrs, "training", true)
	if err != nil || training {
		return false
	}
	eps, err := floatAttr(op.Attrs, "epsilon", 1e-5)
	if err != nil {
		return false
	}
	for _, r := range op.Results()[1:] {
		if len(r.Uses()) > 0 {
			return false
		}
	}
	var vecs [4][]float64
	for i := range vecs {
		v, ok := known(op.Operand(1+i), params)
		if !ok || len(v) != len(a) {
			return false
		}
		vecs[i] = v
	}
	scale, bias, mean, variance := vecs[0], vecs[1], vecs[2], vecs[3]
	for i := range a {
		mul := scale[i] * (1 / math.Sqrt(variance[i]+eps))
		add := bias[i] - mean[i]*mul
		a[i], c[i] = a[i]*mul, c[i]*mul+add
	}
	return true
}

func boolAttrDefault(attrs ir.Attrs, name string, def bool) (bool, error) {
	if !attrs.Has(name) {
		return def, nil
	}
	return attrs.Bool(name)
}

func floatAttr(attrs ir.Attrs, name string, def float64) (float64, error) {
	if !attrs.Has(name) {
		return def, nil
	}
	return attrs.Float(name)
}

func finite(xs []float64) bool {
	for _, x := range xs {
		if math.IsInf(x, 0) || math.IsNaN(x) {
			return false
		}
	}
	return true
}

// fold rewrites pr and the chain of f into pr with weights scaled by f.a
// (when some a is not 1) followed by one add of the bias f.c, which takes
// the place of the chain's value. The new values are parameters in
// params, named after the weight.
func fold(q *ir.Program, params *Params, taken map[string]bool, pr producer, f affine) error {
	out := pr.op.Result(0).Type()
	dt := out.DType
	base := "folded"
	if d := pr.weight.Def(); d != nil && d.Name() == "parameter" {
		if n, err := d.Attrs.Str("name"); err == nil {
			base = n
		}
	}
	b := builderBefore(q, pr.op)
	if f.scales {
		w, ok := known(pr.weight, params)
		if !ok {
			return fmt.Errorf("optimize: the weights of %q at %s are not known", pr.op.Name(), pr.op.Pos)
		}
		wt := pr.weight.Type()
		stride := 1
		for _, d := range wt.Dims[pr.wAxis+1:] {
			stride *= d
		}
		n := wt.Dims[pr.wAxis]
		for i := range w {
			w[i] *= f.a[(i/stride)%n]
		}
		name, err := params.add(base+":folded", wt, w, taken)
		if err != nil {
			return err
		}
		pr.op.SetOperand(1, ops.Parameter(b, name, dt, wt.Dims...))
	}
	name, err := params.add(base+":folded_bias", ir.TensorOf(dt, len(f.c)), f.c, taken)
	if err != nil {
		return err
	}
	bias := ops.Parameter(b, name, dt, len(f.c))
	after := ir.NewBuilder(q)
	after.SetInsertionPoint(pr.op.Block(), pr.op.Block().IndexOf(pr.op)+1)
	after.SetPos(f.chain[len(f.chain)-1].Pos)
	if trailing := out.Rank() - 1 - pr.axis; trailing > 0 {
		shape := []int{len(f.c)}
		for range trailing {
			shape = append(shape, 1)
		}
		bias = ops.Reshape(after, bias, shape...)
	}
	y := ops.Add(after, pr.op.Result(0), bias)
	if err := after.Err(); err != nil {
		return fmt.Errorf("optimize: folding into %q at %s: %w", pr.op.Name(), pr.op.Pos, err)
	}
	if err := b.Err(); err != nil {
		return fmt.Errorf("optimize: folding into %q at %s: %w", pr.op.Name(), pr.op.Pos, err)
	}
	f.end.ReplaceAllUsesWith(y)
	chain := make([]*ir.Op, len(f.chain))
	for i, op := range f.chain {
		chain[len(chain)-1-i] = op
	}
	if err := erase(chain...); err != nil {
		return err
	}
	return dropDead(pr.weight.Def()) // the unscaled weights, unless used elsewhere
}

// foldPass runs fold on every producer whose traced chain want accepts.
func foldPass(p *ir.Program, params *Params, kinds stepKinds, want func(affine) bool) (*ir.Program, int, error) {
	q := clone(p)
	taken := paramNames(q)
	var prods []producer
	q.Walk(func(op *ir.Op) bool {
		if pr, ok := asProducer(op); ok {
			prods = append(prods, pr)
		}
		return true
	})
	n := 0
	for _, pr := range prods {
		f := trace(pr, params, kinds)
		if len(f.chain) == 0 || !want(f) {
			continue
		}
		if _, ok := known(pr.weight, params); f.scales && !ok {
			continue
		}
		if err := fold(q, params, taken, pr, f); err != nil {
			return nil, 0, err
		}
		n++
	}
	return q, n, nil
}

// FoldBatchNorm folds each batch_norm in evaluation mode (training:false)
// that follows a conv2d, or a matmul whose result is N×C, possibly
// through adds of known per-channel values (the conv's bias), into the
// product: weights scaled by scale/√(var+ε) per output channel, and one
// bias. It needs the values of the weights and of batch_norm's
// parameters (params); a batch_norm whose other results are used is left
// alone. It returns the new program and how many batch_norms it folded.
func FoldBatchNorm(p *ir.Program, params *Params) (*ir.Program, int, error) {
	return foldPass(p, params, stepKinds{biasAdd: true, batchNorm: true}, func(f affine) bool { return f.bnSteps > 0 })
}

// FoldScaleShift folds each chain of elementwise adds, subtracts,
// multiplies and divides by known per-channel or scalar values (and
// scale, neg) after a conv2d or matmul into the product's weights and one
// bias, when the chain scales or holds more than one shift (a single bias
// add is left for FuseEpilogue). It returns the new program and how many
// chains it folded.
func FoldScaleShift(p *ir.Program, params *Params) (*ir.Program, int, error) {
	return foldPass(p, params, stepKinds{elementwise: true}, func(f affine) bool { return f.scales || f.shifts > 1 })
}
