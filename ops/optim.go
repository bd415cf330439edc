package ops

import (
	"fmt"

	"github.com/gopir/gopir/ir"
	"github.com/gopir/gopir/kernels"
	"github.com/gopir/gopir/tensor"
)

// In-place updates of persistable values: optimizer steps, running
// statistics, counters. They have no results; each writes some of its
// operands (Def.Writes) in place and allocates nothing (a Compute kernel
// with no results and no workspace).
//
//	sgd_update      (param, grad, lr)                   {weight_decay}
//	momentum_update (param, grad, velocity, lr)         {momentum, nesterov, weight_decay}
//	adam_update     (param, grad, m, v, lr, step)       {beta1, beta2, epsilon, weight_decay, decoupled}
//	assign_into     (dst, src)                          dst = src, elementwise
//	increment       (x)                                 {by}  x = x + by
//
// Attributes default to 0 / false (by: 1), except momentum (required) and
// Adam's beta1 0.9, beta2 0.999 and epsilon 1e-8 (PyTorch's defaults).
// assign_into takes any dtype; increment f32, f64, i32 or i64 (by must be
// an integer for integer x).
//
// param, grad and the optimizer state (velocity, m, v) are f32 or f64
// tensors of one dtype and one shape (a grad may have dynamic dims; its run
// time shape must match). lr is a float scalar (f32 or f64, whatever the
// param's dtype) holding the learning rate; step is a scalar, i64 or f64,
// holding the 1-based number of the step being taken, for Adam's bias
// correction: increment it before the update (package optim does). The
// formulas are PyTorch 1.13's (SGD without dampening, Adam, AdamW); see
// kernels/optim.go.
//
// Writing in place is only meaningful for values that outlive the step:
// a written operand must be read directly from a "parameter" op (the
// store's tensor, shared with the run, not copied), or be a "data" feed
// (the caller's tensor). The verifier rejects anything else: an
// intermediate value is the run's own buffer, possibly a view shared with
// other values, and writing it would be lost or corrupt them. The update
// writes the store's tensor itself: ops placed after it read the new
// value, and a fetch of the parameter (which shares the buffer, wherever
// it is placed) shows the value after the run's updates. Optimizers
// therefore append their updates after the backward pass.

// Operand names, for error messages.
var (
	optSGDNames      = []string{"param", "grad", "lr"}
	optMomentumNames = []string{"param", "grad", "velocity", "lr"}
	optAdamNames     = []string{"param", "grad", "m", "v", "lr", "step"}
)

// optDefs lists the family: each op's operand names and written operands.
var optDefs = []struct {
	name     string
	operands []string
	writes   []int
	infer    func([]ir.Type, ir.Attrs) ([]ir.Type, error)
	compute  func(*ir.Op) (Compute, error)
}{
	{"sgd_update", optSGDNames, []int{0}, optInferSGD, optBindSGD},
	{"momentum_update", optMomentumNames, []int{0, 2}, optInferMomentum, optBindMomentum},
	{"adam_update", optAdamNames, []int{0, 2, 3}, optInferAdam, optBindAdam},
	{"assign_into", []string{"dst", "src"}, []int{0}, optInferAssignInto, optBindAssignInto},
	{"increment", []string{"x"}, []int{0}, optInferIncrement, optBindIncrement},
}

func init() {
	for _, d := range optDefs {
		register(&Def{
			Name: d.name, Infer: d.infer, Compute: d.compute, Writes: d.writes,
			Verify: optVerifyWrites(d.writes, d.operands), NoGrad: true,
		})
	}
}

// optVerifyWrites checks that every written operand comes straight from a
// "parameter" or "data" op.
func optVerifyWrites(writes []int, names []string) func(*ir.Op) error {
	return func(op *ir.Op) error {
		for _, i := range writes {
			if i >= op.NumOperands() {
				continue
			}
			def := op.Operand(i).Def()
			if def == nil || (def.Name() != "parameter" && def.Name() != "data") {
				what := "a block argument"
				if def != nil {
					what = fmt.Sprintf("the result of %q", def.Name())
				}
				return fmt.Errorf("operand %d (%s) is written in place, so it must be read from a \"parameter\" (or \"data\") op, not %s", i, names[i], what)
			}
		}
		return nil
	}
}

// optFloat checks that t is an f32 or f64 tensor.
func optFloat(what string, t ir.Type) error {
	if !t.DType.IsFloat() {
		return fmt.Errorf("%s %s must be f32 or f64", what, t)
	}
	return nil
}

// optLike checks that t, operand i, has the dtype and rank of ref (operand
// 0) and dims that agree where both are static. Infer runs again on the
// operands' run-time shapes before the kernel, so this is the run-time
// shape check too; with static shapes the error names both.
func optLike(what string, i int, t ir.Type, refName string, ref ir.Type) error {
	if t.DType != ref.DType {
		return fmt.Errorf("%s %s must have the dtype of %s %s", what, t, refName, ref)
	}
	ok := t.Rank() == ref.Rank()
	for k := 0; ok && k < t.Rank(); k++ {
		a, b := t.Dims[k], ref.Dims[k]
		ok = a == b || a == ir.Dynamic || b == ir.Dynamic
	}
	if !ok {
		if t.IsStatic() && ref.IsStatic() {
			return fmt.Errorf("%s %s must have the shape of %s %s (operand %d has shape %v, operand 0 has %v)", what, t, refName, ref, i, t.Dims, ref.Dims)
		}
		return fmt.Errorf("%s %s must have the shape of %s %s", what, t, refName, ref)
	}
	return nil
}

// optScalar checks that t is a scalar (rank 0) accepted by ok.
func optScalar(what string, t ir.Type, want string, ok func(ir.DType) bool) error {
	if t.Rank() != 0 || !ok(t.DType) {
		return fmt.Errorf("%s %s must be a scalar (rank 0) of %s", what, t, want)
	}
	return nil
}

// optInferState checks param, grad and the state operands that follow grad
// (all like param), then the lr scalar at index lr.
func optInferState(in []ir.Type, n int, names []string) error {
	if err := wantOperands(in, n); err != nil {
		return err
	}
	if err := optFloat(names[0], in[0]); err != nil {
		return err
	}
	for i := 1; i < len(names); i++ {
		if names[i] == "lr" {
			return optScalar("lr", in[i], "f32 or f64", ir.DType.IsFloat)
		}
		if err := optLike(names[i], i, in[i], names[0], in[0]); err != nil {
			return err
		}
	}
	return nil
}

func optInferSGD(in []ir.Type, attrs ir.Attrs) ([]ir.Type, error) {
	if err := optInferState(in, 3, optSGDNames); err != nil {
		return nil, err
	}
	_, err := optDecodeSGD(attrs)
	return nil, err
}

func optInferMomentum(in []ir.Type, attrs ir.Attrs) ([]ir.Type, error) {
	if err := optInferState(in, 4, optMomentumNames); err != nil {
		return nil, err
	}
	_, err := optDecodeMomentum(attrs)
	return nil, err
}

func optInferAdam(in []ir.Type, attrs ir.Attrs) ([]ir.Type, error) {
	if err := optInferState(in, 6, optAdamNames); err != nil {
		return nil, err
	}
	if err := optScalar("step", in[5], "i64 or f64", func(d ir.DType) bool { return d == ir.I64 || d == ir.F64 }); err != nil {
		return nil, err
	}
	_, err := optDecodeAdam(attrs)
	return nil, err
}

func optInferAssignInto(in []ir.Type, _ ir.Attrs) ([]ir.Type, error) {
	if err := wantOperands(in, 2); err != nil {
		return nil, err
	}
	if in[0].DType.Size() == 0 {
		return nil, fmt.Errorf("dst %s must be a tensor", in[0])
	}
	return nil, optLike("src", 1, in[1], "dst", in[0])
}

func optInferIncrement(in []ir.Type, attrs ir.Attrs) ([]ir.Type, error) {
	if err := wantOperands(in, 1); err != nil {
		return nil, err
	}
	if err := ewNumbers.check(in[0]); err != nil {
		return nil, err
	}
	_, err := optDecodeBy(attrs, in[0].DType)
	return nil, err
}

// optNonNeg returns the float attribute name (def if absent), which must
// be >= 0.
func optNonNeg(attrs ir.Attrs, name string, def float64) (float64, error) {
	v, err := ewOptFloat(attrs, name, def)
	if err != nil {
		return 0, err
	}
	if !(v >= 0) {
		return 0, fmt.Errorf("attribute %s:%v must be >= 0", name, v)
	}
	return v, nil
}

// optBeta returns the float attribute name (def if absent), in [0, 1).
func optBeta(attrs ir.Attrs, name string, def float64) (float64, error) {
	v, err := ewOptFloat(attrs, name, def)
	if err != nil {
		return 0, err
	}
	if !(v >= 0 && v < 1) {
		return 0, fmt.Errorf("attribute %s:%v must be in [0, 1)", name, v)
	}
	return v, nil
}

type optSGDAttrs struct {
	momentum, weightDecay float64
	nesterov              bool
}

func optDecodeSGD(attrs ir.Attrs) (optSGDAttrs, error) {
	wd, err := optNonNeg(attrs, "weight_decay", 0)
	return optSGDAttrs{weightDecay: wd}, err
}

func optDecodeMomentum(attrs ir.Attrs) (optSGDAttrs, error) {
	a, err := optDecodeSGD(attrs)
	if err != nil {
		return a, err
	}
	if a.momentum, err = attrs.Float("momentum"); err != nil {
		return a, err
	}
	if !(a.momentum >= 0) {
		return a, fmt.Errorf("attribute momentum:%v must be >= 0", a.momentum)
	}
	if a.nesterov, err = ewOptBool(attrs, "nesterov", false); err != nil {
		return a, err
	}
	if a.nesterov && a.momentum == 0 {
		return a, fmt.Errorf("nesterov needs a momentum > 0")
	}
	return a, nil
}

func optDecodeAdam(attrs ir.Attrs) (kernels.AdamHyper, error) {
	var h kernels.AdamHyper
	var err error
	if h.Beta1, err = optBeta(attrs, "beta1", 0.9); err != nil {
		return h, err
	}
	if h.Beta2, err = optBeta(attrs, "beta2", 0.999); err != nil {
		return h, err
	}
	if h.Epsilon, err = optNonNeg(attrs, "epsilon", 1e-8); err != nil {
		return h, err
	}
	if h.WeightDecay, err = optNonNeg(attrs, "weight_decay", 0); err != nil {
		return h, err
	}
	h.Decoupled, err = ewOptBool(attrs, "decoupled", false)
	return h, err
}

func optDecodeBy(attrs ir.Attrs, dt ir.DType) (float64, error) {
	by, err := ewOptFloat(attrs, "by", 1)
	if err != nil {
		return 0, err
	}
	if dt.IsInt() {
		if err := ewIntegral("by", by, dt); err != nil {
			return 0, err
		}
	}
	return by, nil
}

func optBindSGD(op *ir.Op) (Compute, error) {
	a, err := optDecodeSGD(op.Attrs)
	if err != nil {
		return Compute{}, err
	}
	dts := ewOperandDTypes(op)
	return Compute{Fn: func(c *Ctx, in, _ []*tensor.Tensor) error {
		if err := ewCheckInputs("sgd_update", in, dts); err != nil {
			return err
		}
		lr := in[2].Float64At(0)
		switch in[0].DType() {
		case tensor.F32:
			kernels.SGDUpdate(in[0].F32(), in[1].F32(), lr, a.weightDecay, c.Threads)
		case tensor.F64:
			kernels.SGDUpdate(in[0].F64(), in[1].F64(), lr, a.weightDecay, c.Threads)
		}
		return nil
	}}, nil
}

func optBindMomentum(op *ir.Op) (Compute, error) {
	a, err := optDecodeMomentum(op.Attrs)
	if err != nil {
		return Compute{}, err
	}
	dts := ewOperandDTypes(op)
	return Compute{Fn: func(c *Ctx, in, _ []*tensor.Tensor) error {
		if err := ewCheckInputs("momentum_update", in, dts); err != nil {
			return err
		}
		lr := in[3].Float64At(0)
		switch in[0].DType() {
		case tensor.F32:
			kernels.MomentumUpdate(in[0].F32(), in[1].F32(), in[2].F32(), lr, a.momentum, a.weightDecay, a.nesterov, c.Threads)
		case tensor.F64:
			kernels.MomentumUpdate(in[0].F64(), in[1].F64(), in[2].F64(), lr, a.momentum, a.weightDecay, a.nesterov, c.Threads)
		}
		return nil
	}}, nil
}

func optBindAdam(op *ir.Op) (Compute, error) {
	hyper, err := optDecodeAdam(op.Attrs)
	if err != nil {
		return Compute{}, err
	}
	dts := ewOperandDTypes(op)
	return Compute{Fn: func(c *Ctx, in, _ []*tensor.Tensor) error {
		if err := ewCheckInputs("adam_update", in, dts); err != nil {
			return err
		}
		h := hyper
		h.LR = in[4].Float64At(0)
		h.Step = in[5].Float64At(0)
		if !(h.Step >= 1) {
			return fmt.Errorf("adam_update: step is %v; it counts steps from 1 (increment it before the update)", h.Step)
		}
		switch in[0].DType() {
		case tensor.F32:
			kernels.AdamUpdate(in[0].F32(), in[1].F32(), in[2].F32(), in[3].F32(), h, c.Threads)
		case tensor.F64:
			kernels.AdamUpdate(in[0].F64(), in[1].F64(), in[2].F64(), in[3].F64(), h, c.Threads)
		}
		return nil
	}}, nil
}

func optBindAssignInto(op *ir.Op) (Compute, error) {
	dts := ewOperandDTypes(op)
	return Compute{Fn: func(c *Ctx, in, _ []*tensor.Tensor) error {
		if err := ewCheckInputs("assign_into", in, dts); err != nil {
			return err
		}
		kernels.CopyInto(in[0].Raw(), in[1].Raw(), c.Threads)
		return nil
	}}, nil
}

func optBindIncrement(op *ir.Op) (Compute, error) {
	dt := op.Operand(0).Type().DType
	by, err := optDecodeBy(op.Attrs, dt)
	if err != nil {
		return Compute{}, err
	}
	return Compute{Fn: func(c *Ctx, in, _ []*tensor.Tensor) error {
		if err := ewCheckInputs("increment", in, []ir.DType{dt}); err != nil {
			return err
		}
		x := in[0]
		switch x.DType() {
		case tensor.F32:
			kernels.Increment(x.F32(), float32(by), c.Threads)
		case tensor.F64:
			kernels.Increment(x.F64(), by, c.Threads)
		case tensor.I32:
			kernels.Increment(x.I32(), int32(by), c.Threads)
		case tensor.I64:
			kernels.Increment(x.I64(), int64(by), c.Threads)
		}
		return nil
	}}, nil
}

// SGDUpdate appends an in-place SGD step on param (see the file comment).
func SGDUpdate(b *ir.Builder, param, grad, lr *ir.Value, weightDecay float64) *ir.Op {
	return b.Op("sgd_update", ir.A("weight_decay", weightDecay), param, grad, lr)
}

// MomentumUpdate appends an in-place SGD-with-momentum step on param and
// velocity.
func MomentumUpdate(b *ir.Builder, param, grad, velocity, lr *ir.Value, momentum float64, nesterov bool, weightDecay float64) *ir.Op {
	return b.Op("momentum_update", ir.A("momentum", momentum, "nesterov", nesterov, "weight_decay", weightDecay),
		param, grad, velocity, lr)
}

// AdamUpdate appends an in-place Adam step (AdamW if decoupled) on param
// and its moments m and v; step holds the 1-based step number.
func AdamUpdate(b *ir.Builder, param, grad, m, v, lr, step *ir.Value, beta1, beta2, epsilon, weightDecay float64, decoupled bool) *ir.Op {
	return b.Op("adam_update", ir.A("beta1", beta1, "beta2", beta2, "epsilon", epsilon,
		"weight_decay", weightDecay, "decoupled", decoupled), param, grad, m, v, lr, step)
}

// AssignInto appends an in-place copy of src's elements into dst.
func AssignInto(b *ir.Builder, dst, src *ir.Value) *ir.Op {
	return b.Op("assign_into", nil, dst, src)
}

// Increment appends an in-place x += by.
func Increment(b *ir.Builder, x *ir.Value, by float64) *ir.Op {
	return b.Op("increment", ir.A("by", by), x)
}
