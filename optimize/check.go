package optimize

import (
	"fmt"
	"strings"

	"github.com/gopir/gopir/ir"
	"github.com/gopir/gopir/ops"
)

// BackwardError says that a program has a backward or updates its
// parameters, so that the passes, which assume frozen parameters and make
// ops without gradients, must not rewrite it.
type BackwardError struct {
	Op  string
	Pos ir.Pos
	Why string
}

func (e *BackwardError) Error() string {
	return fmt.Sprintf("%s: %q %s: the optimizing passes are for inference programs, whose parameters do not change (optimize the forward program, or run without --optimize)", e.Pos, e.Op, e.Why)
}

// CheckInference returns a *BackwardError when p has a backward or
// updates state: an op that writes its operands (an optimizer's update),
// a gradient op (the helpers autodiff appends: names ending in _grad or
// holding _grad_), or the stacks autodiff keeps for a loop's backward.
func CheckInference(p *ir.Program) error {
	var err error
	p.Walk(func(op *ir.Op) bool {
		if err != nil {
			return false
		}
		name := op.Name()
		d, _ := ops.Lookup(name)
		switch {
		case d != nil && len(d.Writes) > 0:
			err = &BackwardError{Op: name, Pos: op.Pos, Why: "updates its operands in place"}
		case strings.HasSuffix(name, "_grad") || strings.Contains(name, "_grad_"):
			err = &BackwardError{Op: name, Pos: op.Pos, Why: "is part of a backward pass"}
		case strings.HasPrefix(name, "stack_"):
			err = &BackwardError{Op: name, Pos: op.Pos, Why: "keeps a loop's tape for a backward pass"}
		}
		return true
	})
	return err
}
