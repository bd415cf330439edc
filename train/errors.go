package train

import (
	"errors"

	"github.com/gopir/gopir/memory"
)

// SetupError is a problem New finds before training starts: a bad
// setting, an unknown model, missing data, a checkpoint that does not fit.
// The command line reports it as bad input.
type SetupError struct{ Err error }

func (e *SetupError) Error() string { return e.Err.Error() }
func (e *SetupError) Unwrap() error { return e.Err }

// setupError wraps err as a SetupError, except running out of memory,
// which stays what it is.
func setupError(err error) error {
	var oom *memory.ResourceExhausted
	var plan *PlanExceedsError
	var floor *FloorError
	var eval *EvalExceedsError
	if err == nil || errors.As(err, &oom) || errors.As(err, &plan) || errors.As(err, &floor) || errors.As(err, &eval) {
		return err
	}
	return &SetupError{err}
}
