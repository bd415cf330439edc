package onnx

import (
	"context"
	"errors"
	"fmt"
	"math"
	"runtime/debug"
	"slices"
	"strings"

	"github.com/gopir/gopir/exec"
	"github.com/gopir/gopir/memory"
	"github.com/gopir/gopir/onnx/onnxpb"
	"github.com/gopir/gopir/ops"
	"github.com/gopir/gopir/tensor"
)

// Outcome is how gopir does on one backend test.
type Outcome struct {
	Test   string
	Status Status
	// Detail says why a test is unsupported or failed: the import error,
	// the run error, or the first output that differs.
	Detail string
}

// Status is the verdict on a backend test.
type Status string

const (
	Pass        Status = "pass"
	Unsupported Status = "unsupported" // a clear refusal: an op, attribute or type gopir lacks, or values it refuses at run time
	Error       Status = "error"       // any other failure to import or run: a bug
	Wrong       Status = "wrong"       // ran, but an output differs beyond the tolerance
	Panic       Status = "panic"       // a bug that crashed
)

// Tolerances of ONNX's backend test runner (numpy.testing.assert_allclose).
const (
	RTol = 1e-3
	ATol = 1e-7
)

// RunTest imports tc's model and runs it on each of its data sets,
// comparing the outputs with the expected ones. It never panics; a panic
// is an Outcome with Status Panic. Every run must leave the allocator as
// it found it (the parameters aside), or the test fails.
func RunTest(tc TestCase) (out Outcome) {
	out.Test = tc.Name
	defer func() {
		if r := recover(); r != nil {
			out.Status, out.Detail = Panic, fmt.Sprintf("%v\n%s", r, debug.Stack())
		}
	}()
	mp, err := ReadModel(tc.ModelPath)
	if err != nil {
		return classify(out, err)
	}
	alloc := memory.New(memory.Options{})
	m, err := Import(mp, Options{Alloc: alloc, File: "model.onnx", Dir: tc.Dir})
	if err != nil {
		return classify(out, err)
	}
	defer m.Release()
	store := exec.NewStore()
	for n, t := range m.Params {
		store.Set(n, t.Retain())
	}
	defer store.Release()
	x, err := exec.Compile(m.Program, exec.Options{Alloc: alloc, Store: store, Threads: 1})
	if err != nil {
		return classify(out, err)
	}
	g := mp.GetGraph()
	base := alloc.Stats().Allocated.Current
	host := memory.New(memory.Options{})
	for _, ds := range tc.DataSets {
		if err := runDataSet(x, g, m, ds, host); err != nil {
			var w *wrongError
			if errors.As(err, &w) {
				out.Status, out.Detail = Wrong, err.Error()
				return out
			}
			return classify(out, err)
		}
		if a := alloc.Stats().Allocated.Current; a != base {
			out.Status, out.Detail = Error, fmt.Sprintf("%d bytes allocated after a run, %d before", a, base)
			return out
		}
	}
	if a := host.Stats().Allocated.Current; a != 0 {
		out.Status, out.Detail = Error, fmt.Sprintf("%d bytes of feeds and fetches not released", a)
		return out
	}
	out.Status = Pass
	return out
}

// classify makes an outcome of err: unsupported for a refusal, at import
// (*UnsupportedError) or by a run's values (*ops.RefusedError), else an
// error.
func classify(out Outcome, err error) Outcome {
	var u *UnsupportedError
	var r *ops.RefusedError
	if errors.As(err, &u) || errors.As(err, &r) {
		out.Status = Unsupported
	} else {
		out.Status = Error
	}
	out.Detail = err.Error()
	return out
}

// wrongError is an output that differs from the expected one.
type wrongError struct{ msg string }

func (e *wrongError) Error() string { return e.msg }

// runDataSet feeds one data set's inputs, runs, and compares the outputs.
func runDataSet(x *exec.Executable, g *onnxpb.GraphProto, m *Model, ds DataSet, host *memory.Allocator) error {
	if len(ds.Inputs) != len(m.Inputs) {
		return fmt.Errorf("%s: %d inputs, the model has %d", ds.Dir, len(ds.Inputs), len(m.Inputs))
	}
	types := map[string]*onnxpb.TypeProto{}
	for _, vi := range g.GetInput() {
		types[vi.GetName()] = vi.GetType()
	}
	feeds := map[string]*tensor.Tensor{}
	defer func() {
		for _, t := range feeds {
			t.Release()
		}
	}()
	for i, in := range m.Inputs {
		t, err := readValue(ds.Inputs[i], types[in.Name], host)
		if err != nil {
			return err
		}
		feeds[in.Name] = t
	}
	res, err := x.Run(context.Background(), feeds)
	if err != nil {
		return err
	}
	defer res.Release()
	if len(ds.Outputs) != len(m.Outputs) {
		return fmt.Errorf("%s: %d outputs, the model has %d", ds.Dir, len(ds.Outputs), len(m.Outputs))
	}
	for i, name := range m.Outputs {
		want, err := readValue(ds.Outputs[i], g.GetOutput()[i].GetType(), host)
		if err != nil {
			return err
		}
		err = compareValues(name, res[name], want)
		want.Release()
		if err != nil {
			return err
		}
	}
	return nil
}

// readValue reads a .pb file as the kind of value its graph type says: a
// tensor, or a sequence or optional as a stack.
func readValue(path string, tp *onnxpb.TypeProto, a *memory.Allocator) (*tensor.Tensor, error) {
	switch {
	case tp.GetSequenceType() != nil:
		items, err := ReadSequenceFile(path, a)
		if err != nil {
			return nil, err
		}
		return stackOf(items), nil
	case tp.GetOptionalType() != nil:
		o, err := ReadOptionalFile(path, a)
		if err != nil {
			return nil, err
		}
		s := tensor.NewStack()
		switch {
		case o.Tensor != nil:
			s.Push(o.Tensor)
		case o.Sequence != nil:
			s.Push(stackOf(o.Sequence))
		}
		return s, nil
	}
	return ReadTensorFile(path, a)
}

// stackOf makes a stack of items, taking over their references.
func stackOf(items []*tensor.Tensor) *tensor.Tensor {
	s := tensor.NewStack()
	for _, t := range items {
		s.Push(t)
	}
	return s
}

// compareValues checks got against want: same kind, dtype and shape, and
// elements within the tolerances (NaN matches NaN, infinities must be
// equal).
func compareValues(name string, got, want *tensor.Tensor) error {
	if got == nil {
		return fmt.Errorf("output %q was not fetched", name)
	}
	if got.IsStack() || want.IsStack() {
		if !got.IsStack() || !want.IsStack() {
			return &wrongError{fmt.Sprintf("output %q is %s, want %s", name, got.Type(), want.Type())}
		}
		if got.StackLen() != want.StackLen() {
			return &wrongError{fmt.Sprintf("output %q has %d items, want %d", name, got.StackLen(), want.StackLen())}
		}
		for i := range got.StackLen() {
			if err := compareValues(fmt.Sprintf("%s[%d]", name, i), got.StackItem(i), want.StackItem(i)); err != nil {
				return err
			}
		}
		return nil
	}
	if got.DType() != want.DType() || !slices.Equal(got.Shape(), want.Shape()) {
		return &wrongError{fmt.Sprintf("output %q is %s, want %s", name, got.Type(), want.Type())}
	}
	for i := range got.Len() {
		g, w := got.Float64At(i), want.Float64At(i)
		if got.DType() == tensor.I64 {
			if got.I64()[i] != want.I64()[i] {
				return &wrongError{fmt.Sprintf("output %q element %d is %d, want %d", name, i, got.I64()[i], want.I64()[i])}
			}
			continue
		}
		switch {
		case math.IsNaN(w) && math.IsNaN(g):
		case math.IsInf(w, 0) || math.IsInf(g, 0):
			if g != w {
				return &wrongError{fmt.Sprintf("output %q element %d is %v, want %v", name, i, g, w)}
			}
		case !(math.Abs(g-w) <= ATol+RTol*math.Abs(w)):
			return &wrongError{fmt.Sprintf("output %q element %d is %v, want %v (%s)", name, i, g, w, strings.TrimSpace(fmt.Sprintf("rtol %g, atol %g", RTol, ATol)))}
		}
	}
	return nil
}
