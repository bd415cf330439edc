package ops_test

import (
	"testing"

	"github.com/gopir/gopir/ops"
)

// TestEveryOpSaysHowItDifferentiates guards the autodiff contract: each op
// of the catalog either has a gradient rule or is marked NoGrad, except
// the program I/O ops the executor runs itself and the stack ops the
// differentiation itself appends.
func TestEveryOpSaysHowItDifferentiates(t *testing.T) {
	exempt := map[string]bool{"data": true, "parameter": true, "fetch": true, "stack_new": true, "stack_push": true, "stack_pop": true}
	for _, name := range ops.Names() {
		d, _ := ops.Lookup(name)
		if exempt[name] || d.Grad != nil || d.NoGrad {
			continue
		}
		t.Errorf("op %q has neither a Grad rule nor NoGrad", name)
	}
}
