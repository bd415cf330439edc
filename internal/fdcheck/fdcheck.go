// Package fdcheck checks gradients against central finite differences, for
// the tests of every package that computes gradients (ops, autodiff, onnx,
// models, the command line): one step rule, one tolerance rule, one
// message.
package fdcheck

import (
	"math"
	"testing"
)

// Step is the finite-difference step for an element of value x: small
// against x, and not below 1e-6 near zero.
func Step(x float64) float64 { return 1e-6 * math.Max(1, math.Abs(x)) }

// Derivative is the central difference (f(h) − f(−h)) / 2h with
// h = Step(x), where f(d) is the loss with the element of value x moved
// by d.
func Derivative(x float64, f func(d float64) float64) float64 {
	h := Step(x)
	return (f(h) - f(-h)) / (2 * h)
}

// Close reports whether a gradient element got matches the finite
// difference fd: |got − fd| ≤ tol·(1 + |fd|).
func Close(got, fd, tol float64) bool { return math.Abs(got-fd) <= tol*(1+math.Abs(fd)) }

// Check compares grad, the gradient of loss with respect to x, with
// finite differences, element by element: it moves x[i] in place, calls
// loss, puts x[i] back, and reports every element off by more than
// tol·(1 + |fd|) through t.Errorf, naming it name[i].
func Check(t testing.TB, name string, x, grad []float64, loss func() float64, tol float64) {
	t.Helper()
	if len(grad) != len(x) {
		t.Errorf("gradient of %s has %d elements, want %d", name, len(grad), len(x))
		return
	}
	for i := range x {
		orig := x[i]
		fd := Derivative(orig, func(d float64) float64 {
			x[i] = orig + d
			return loss()
		})
		x[i] = orig
		if !Close(grad[i], fd, tol) {
			t.Errorf("d loss / d %s[%d] = %.9g, finite difference %.9g", name, i, grad[i], fd)
		}
	}
}
