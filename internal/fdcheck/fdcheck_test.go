package fdcheck

import (
	"fmt"
	"math"
	"testing"
)

// recorder is a testing.TB that keeps the errors reported to it.
type recorder struct {
	testing.TB
	errs []string
}

func (r *recorder) Helper() {}
func (r *recorder) Errorf(format string, args ...any) {
	r.errs = append(r.errs, fmt.Sprintf(format, args...))
}

func TestCheck(t *testing.T) {
	// loss = Σ sin(x_i)·i, whose gradient is cos(x_i)·i.
	x := []float64{0, 0.5, -2, 30}
	loss := func() float64 {
		s := 0.0
		for i, v := range x {
			s += math.Sin(v) * float64(i)
		}
		return s
	}
	right := make([]float64, len(x))
	for i, v := range x {
		right[i] = math.Cos(v) * float64(i)
	}
	r := &recorder{TB: t}
	Check(r, "x", x, right, loss, 1e-6)
	if len(r.errs) != 0 {
		t.Errorf("a right gradient was refused: %q", r.errs)
	}
	if x[2] != -2 || x[3] != 30 {
		t.Errorf("x was not put back: %v", x)
	}
	wrong := append([]float64{}, right...)
	wrong[2] += 1e-3
	r = &recorder{TB: t}
	Check(r, "x", x, wrong, loss, 1e-6)
	if len(r.errs) != 1 || r.errs[0][:15] != "d loss / d x[2]" {
		t.Errorf("a wrong element: %q", r.errs)
	}
	r = &recorder{TB: t}
	Check(r, "x", x, right[:2], loss, 1e-6)
	if len(r.errs) != 1 {
		t.Errorf("a gradient of the wrong length: %q", r.errs)
	}
}

func TestStepScales(t *testing.T) {
	if Step(0) != 1e-6 || Step(-1e3) != 1e-3 {
		t.Errorf("Step(0) = %g, Step(-1e3) = %g", Step(0), Step(-1e3))
	}
}
