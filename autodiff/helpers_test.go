package autodiff_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/gopir/gopir/internal/fdcheck"

	"github.com/gopir/gopir/autodiff"
	"github.com/gopir/gopir/exec"
	"github.com/gopir/gopir/ir"
	"github.com/gopir/gopir/memory"
	"github.com/gopir/gopir/ops"
	"github.com/gopir/gopir/tensor"
)

// model builds a forward program on b and returns its scalar loss and the
// feeds to differentiate with respect to.
type model func(b *ir.Builder) (loss *ir.Value, wrt []*ir.Value)

// gradProgram builds the model, appends its backward, fetches the loss as
// "loss" and each gradient as NAME@GRAD.
func gradProgram(t testing.TB, m model) *ir.Program {
	t.Helper()
	b := ir.NewBuilder(ir.NewProgram())
	loss, wrt := m(b)
	grads, err := autodiff.Backward(b, loss, wrt)
	if err != nil {
		t.Fatal(err)
	}
	ops.Fetch(b, "loss", loss)
	for i, w := range wrt {
		name, _ := w.Def().Attrs.Str("name")
		ops.Fetch(b, name+"@GRAD", grads[i])
	}
	p, err := b.Finish()
	if err != nil {
		t.Fatalf("%v\n%s", err, b.Program())
	}
	return p
}

func forwardProgram(t testing.TB, m model) *ir.Program {
	t.Helper()
	b := ir.NewBuilder(ir.NewProgram())
	loss, _ := m(b)
	ops.Fetch(b, "loss", loss)
	p, err := b.Finish()
	if err != nil {
		t.Fatal(err)
	}
	return p
}

var host = memory.New(memory.Options{})

func f64(t testing.TB, data []float64, shape ...int) *tensor.Tensor {
	t.Helper()
	x, err := tensor.FromF64(host, data, shape...)
	if err != nil {
		t.Fatal(err)
	}
	return x
}

func randF64(r *rand.Rand, n int) []float64 {
	d := make([]float64, n)
	for i := range d {
		d[i] = r.Float64()*2 - 1
	}
	return d
}

func run(t testing.TB, x *exec.Executable, feeds map[string]*tensor.Tensor) exec.Results {
	t.Helper()
	res, err := x.Run(context.Background(), feeds)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// checkGradients compares the gradients the backward computes with central
// finite differences of the forward program, for every element of every
// wrt feed. Feeds are f64.
func checkGradients(t *testing.T, m model, feeds map[string]*tensor.Tensor) {
	t.Helper()
	gp := gradProgram(t, m)
	a := memory.New(memory.Options{})
	gx, err := exec.Compile(gp, exec.Options{Alloc: a, CheckLeaks: true})
	if err != nil {
		t.Fatalf("%v\n%s", err, gp)
	}
	fx, err := exec.Compile(forwardProgram(t, m), exec.Options{})
	if err != nil {
		t.Fatal(err)
	}
	res := run(t, gx, feeds)
	defer res.Release()
	lossAt := func() float64 {
		r := run(t, fx, feeds)
		defer r.Release()
		return r["loss"].F64()[0]
	}
	if got, want := res["loss"].F64()[0], lossAt(); got != want {
		t.Fatalf("loss with backward appended = %v, forward alone = %v", got, want)
	}
	for name, g := range res {
		wname, ok := cutGrad(name)
		if !ok {
			continue
		}
		fdcheck.Check(t, wname, feeds[wname].F64(), g.F64(), lossAt, 1e-5)
	}
	res.Release()
	if got := a.Stats().Allocated.Current; got != 0 {
		t.Errorf("%d bytes allocated after the run", got)
	}
}

func cutGrad(name string) (string, bool) {
	const suffix = "@GRAD"
	if len(name) > len(suffix) && name[len(name)-len(suffix):] == suffix {
		return name[:len(name)-len(suffix)], true
	}
	return "", false
}

func sum(b *ir.Builder, x *ir.Value) *ir.Value { return ops.ReduceSum(b, x, nil, false) }

var _ = fmt.Sprint
