package ops

import (
	"fmt"

	"github.com/gopir/gopir/ir"
	"github.com/gopir/gopir/tensor"
)

// Refusals at run time.
//
//	check {message} (cond) -> ()
//
// check fails the run with a *RefusedError holding message when any
// element of cond (i1) is true, and does nothing otherwise. An importer
// uses it where only the values of a run show that the program asks for
// something gopir does not compute exactly (a random draw it cannot
// reproduce, say), so that such a run is refused rather than answered.
// Kernels refuse values the same way (unique of NaN, ...). No gradient
// flows (NoGrad): check has no results.

func init() {
	register(&Def{Name: "check", Infer: checkInfer, Bind: checkBind, NoGrad: true})
}

// RefusedError is a run refused because of its values: what it asks for
// has no exact answer gopir gives (readings of a specification differ, or
// random draws cannot be reproduced). errors.As finds it through the
// executor's *exec.OpError.
type RefusedError struct {
	What string
}

func (e *RefusedError) Error() string { return "refused: " + e.What }

// refused returns a *RefusedError saying what, formatted.
func refused(format string, args ...any) error {
	return &RefusedError{What: fmt.Sprintf(format, args...)}
}

func checkInfer(in []ir.Type, attrs ir.Attrs) ([]ir.Type, error) {
	if err := wantOperands(in, 1); err != nil {
		return nil, err
	}
	if in[0].DType != ir.I1 {
		return nil, fmt.Errorf("cond %s is not i1", in[0])
	}
	if _, err := attrs.Str("message"); err != nil {
		return nil, err
	}
	return nil, nil
}

func checkBind(op *ir.Op) (Kernel, error) {
	msg, err := op.Attrs.Str("message")
	if err != nil {
		return nil, err
	}
	return func(c *Ctx, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
		for _, v := range in[0].Bool() {
			if v {
				return nil, &RefusedError{What: msg}
			}
		}
		return nil, nil
	}, nil
}

// Check appends a refusal of the run, saying message, when any element of
// cond is true.
func Check(b *ir.Builder, cond *ir.Value, message string) {
	b.Op("check", ir.A("message", message), cond)
}
