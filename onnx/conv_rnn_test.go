package onnx_test

import (
	"context"
	"errors"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/gopir/gopir/internal/fdcheck"

	"google.golang.org/protobuf/proto"

	"github.com/gopir/gopir/autodiff"
	"github.com/gopir/gopir/exec"
	"github.com/gopir/gopir/ir"
	"github.com/gopir/gopir/onnx"
	"github.com/gopir/gopir/onnx/onnxpb"
	"github.com/gopir/gopir/ops"
	"github.com/gopir/gopir/tensor"
)

// TestRNNCases runs the one-node RNN, GRU and LSTM models of
// tools/onnx_rnn_cases.py (onnx/testdata/rnn) against their numpy
// outputs; RunTest also checks that memory returns to where it started.
func TestRNNCases(t *testing.T) {
	tests, err := onnx.ListTests("testdata/rnn")
	if err != nil {
		t.Fatal(err)
	}
	if len(tests) < 19 {
		t.Fatalf("found %d cases in testdata/rnn, want at least 19", len(tests))
	}
	for _, tc := range tests {
		if o := onnx.RunTest(tc); o.Status != onnx.Pass {
			t.Errorf("%s: %s: %s", tc.Name, o.Status, o.Detail)
		}
	}
}

// TestRNNGradients differentiates the float64 cases of testdata/rnn (the
// sum of the squares of every output) with respect to every float input
// and compares with central finite differences.
func TestRNNGradients(t *testing.T) {
	tests, err := onnx.ListTests("testdata/rnn")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, tc := range tests {
		if !strings.Contains(tc.Name, "f64") {
			continue
		}
		n++
		t.Run(tc.Name, func(t *testing.T) { checkRNNGradients(t, tc) })
	}
	if n < 5 {
		t.Fatalf("%d float64 cases, want at least 5", n)
	}
}

func checkRNNGradients(t *testing.T, tc onnx.TestCase) {
	alloc := newAlloc(t)
	host := newAlloc(t)
	path := filepath.Join(tc.Dir, "model.onnx")
	mp, err := onnx.ReadModel(path)
	if err != nil {
		t.Fatal(err)
	}
	m, err := onnx.Import(mp, onnx.Options{Alloc: alloc, File: path})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Release()
	p := m.Program
	var outs, wrt []*ir.Value
	var names []string
	for _, op := range p.Body().Ops() {
		switch op.Name() {
		case "fetch":
			outs = append(outs, op.Operand(0))
		case "data":
			if v := op.Result(0); v.Type().DType == ir.F64 {
				name, _ := op.Attrs.Str("name")
				wrt, names = append(wrt, v), append(names, name)
			}
		}
	}
	b := ir.NewBuilder(p)
	var loss *ir.Value
	for _, o := range outs {
		s := ops.ReduceSum(b, ops.Square(b, o), nil, false)
		if loss == nil {
			loss = s
		} else {
			loss = ops.Add(b, loss, s)
		}
	}
	grads, err := autodiff.Backward(b, loss, wrt)
	if err != nil {
		t.Fatal(err)
	}
	ops.Fetch(b, "loss", loss)
	for i, g := range grads {
		ops.Fetch(b, names[i]+"@GRAD", g)
	}
	if _, err := b.Finish(); err != nil {
		t.Fatal(err)
	}
	x, err := exec.Compile(p, exec.Options{Alloc: alloc, CheckLeaks: true})
	if err != nil {
		t.Fatal(err)
	}
	feeds := map[string]*tensor.Tensor{}
	for k, f := range tc.DataSets[0].Inputs {
		v, err := onnx.ReadTensorFile(f, host)
		if err != nil {
			t.Fatal(err)
		}
		feeds[mp.GetGraph().GetInput()[k].GetName()] = v
	}
	defer func() {
		for _, f := range feeds {
			f.Release()
		}
	}()
	run := func() (float64, exec.Results) {
		t.Helper()
		res, err := x.Run(context.Background(), feeds)
		if err != nil {
			t.Fatal(err)
		}
		return res["loss"].Float64At(0), res
	}
	_, res := run()
	defer res.Release()
	lossAt := func() float64 {
		l, r := run()
		r.Release()
		return l
	}
	for _, name := range names {
		fdcheck.Check(t, name, feeds[name].F64(), res[name+"@GRAD"].F64(), lossAt, 1e-5)
	}
	base := alloc.Stats().Allocated.Current
	for range 20 {
		_, r := run()
		r.Release()
		if a := alloc.Stats().Allocated.Current; a != base {
			t.Fatalf("%d bytes allocated after a run, %d before", a, base)
		}
	}
}

// TestRNNRefusals: what the recurrent converters cannot do exactly is
// refused as unsupported, naming it; malformed nodes are errors.
func TestRNNRefusals(t *testing.T) {
	f32 := func(dims ...int64) ioSpec { return ioSpec{onnxpb.TensorProto_FLOAT, dims} }
	i32 := func(dims ...int64) ioSpec { return ioSpec{onnxpb.TensorProto_INT32, dims} }
	strs := func(name string, vs ...string) *onnxpb.AttributeProto {
		a := &onnxpb.AttributeProto{Name: proto.String(name), Type: onnxpb.AttributeProto_STRINGS.Enum()}
		for _, v := range vs {
			a.Strings = append(a.Strings, []byte(v))
		}
		return a
	}
	lstm := []ioSpec{f32(3, 2, 4), f32(1, 8, 4), f32(1, 8, 2)}
	rnn := []ioSpec{f32(3, 2, 4), f32(1, 2, 4), f32(1, 2, 2)}
	attrs := func(as ...*onnxpb.AttributeProto) []*onnxpb.AttributeProto { return as }
	cases := []struct {
		node        oneNode
		unsupported bool
		want        string
	}{
		{oneNode{"LSTM", 14, lstm, attrs(floatAttr("clip", 1))}, true, "clip on LSTM"},
		{oneNode{"RNN", 14, rnn, attrs(strs("activations", "ThresholdedRelu"))}, true, `activation "ThresholdedRelu"`},
		{oneNode{"RNN", 14, rnn, attrs(strs("activations", "Gelu"))}, true, `activation "Gelu"`},
		{oneNode{"RNN", 14, rnn, attrs(strs("activations", "Affine"))}, true, "activation Affine without its activation_alpha"},
		{oneNode{"RNN", 14, rnn, attrs(&onnxpb.AttributeProto{Name: proto.String("activation_alpha"), Type: onnxpb.AttributeProto_FLOATS.Enum(), Floats: []float32{1}})}, true, "that no activation takes"},
		{oneNode{"RNN", 14, []ioSpec{i32(3, 2, 4), i32(1, 2, 4), i32(1, 2, 2)}, nil}, true, "RNN of tensor<3x2x4xi32>"},
		{oneNode{"RNN", 14, []ioSpec{f32(3, 2, 4), f32(1, 2, -1), f32(1, 2, -1)}, nil}, true, "hidden size"},
		{oneNode{"RNN", 14, rnn, attrs(stringAttr("direction", "sideways"))}, false, `direction "sideways"`},
		{oneNode{"RNN", 14, rnn, attrs(strs("activations", "Tanh", "Tanh"))}, false, "2 activations, want 1"},
		{oneNode{"RNN", 14, rnn, attrs(intAttr("layout", 2))}, false, "layout 2"},
		{oneNode{"RNN", 14, rnn, attrs(floatAttr("clip", -1))}, false, "clip -1 is not positive"},
		{oneNode{"RNN", 14, []ioSpec{f32(3, 2, 4), f32(1, 3, 4), f32(1, 2, 2)}, nil}, false, "want dims [1 2 4]"},
		{oneNode{"GRU", 14, []ioSpec{f32(3, 2, 4), f32(2, 6, 4), f32(2, 6, 2)}, nil}, false, "want dims [1 6 4]"},
		{oneNode{"LSTM", 14, []ioSpec{f32(3, 2), f32(1, 8, 4), f32(1, 8, 2)}, nil}, false, "want a 3-D tensor"},
	}
	for _, c := range cases {
		a := newAlloc(t)
		m, err := onnx.Import(c.node.model(), onnx.Options{Alloc: a, File: "m.onnx"})
		if err == nil {
			m.Release()
			t.Errorf("%s %v: imported, want an error mentioning %q", c.node.op, c.node.attrs, c.want)
			continue
		}
		var u *onnx.UnsupportedError
		if errors.As(err, &u) != c.unsupported || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s %v: error %v; want unsupported=%v mentioning %q", c.node.op, c.node.attrs, err, c.unsupported, c.want)
		}
	}
}

// TestRNNPeakIndependentOfLength: an LSTM's peak memory does not grow with
// the sequence length when only Y_h is asked for, and grows by Y's bytes
// (at most twice: each direction's Y, then their concatenation) when Y
// is.
func TestRNNPeakIndependentOfLength(t *testing.T) {
	const batch, in, hidden = 2, 3, 4
	for _, withY := range []bool{false, true} {
		node := oneNode{"LSTM", 14, []ioSpec{
			{onnxpb.TensorProto_FLOAT, []int64{-1, batch, in}},
			{onnxpb.TensorProto_FLOAT, []int64{2, 4 * hidden, in}},
			{onnxpb.TensorProto_FLOAT, []int64{2, 4 * hidden, hidden}},
		}, []*onnxpb.AttributeProto{stringAttr("direction", "bidirectional")}}
		mp := node.model()
		if !withY {
			mp.Graph.Node[0].Output = []string{"", "y"}
		}
		alloc := newAlloc(t)
		host := newAlloc(t)
		m, err := onnx.Import(mp, onnx.Options{Alloc: alloc, File: "lstm.onnx"})
		if err != nil {
			t.Fatal(err)
		}
		x, err := exec.Compile(m.Program, exec.Options{Alloc: alloc})
		if err != nil {
			t.Fatal(err)
		}
		w, _ := tensor.New(host, tensor.F32, 2, 4*hidden, in)
		r, _ := tensor.New(host, tensor.F32, 2, 4*hidden, hidden)
		for i := range w.F32() {
			w.F32()[i] = float32(i%7) * 0.05
		}
		for i := range r.F32() {
			r.F32()[i] = float32(i%5) * -0.04
		}
		var peaks []int64
		lengths := []int{1, 10, 1000}
		for _, steps := range lengths {
			xs, _ := tensor.New(host, tensor.F32, steps, batch, in)
			for i := range xs.F32() {
				xs.F32()[i] = float32(i%11) * 0.1
			}
			alloc.ResetPeak()
			res, err := x.Run(context.Background(), map[string]*tensor.Tensor{"a": xs, "b": w, "c": r})
			xs.Release()
			if err != nil {
				t.Fatal(err)
			}
			res.Release()
			peaks = append(peaks, alloc.Stats().Allocated.Peak)
		}
		// No steps at all: Y_h is the initial state (zeros), Y empty.
		xs, _ := tensor.New(host, tensor.F32, 0, batch, in)
		res, err := x.Run(context.Background(), map[string]*tensor.Tensor{"a": xs, "b": w, "c": r})
		xs.Release()
		if err != nil {
			t.Fatal(err)
		}
		y := res["y"]
		want := []int{2, batch, hidden}
		if withY {
			want = []int{0, 2, batch, hidden}
		}
		if !slices.Equal(y.Shape(), want) || slices.ContainsFunc(y.F32(), func(v float32) bool { return v != 0 }) {
			t.Errorf("Y asked for: %v: no steps give %v %v, want zeros of %v", withY, y.Shape(), y.F32(), want)
		}
		res.Release()
		w.Release()
		r.Release()
		m.Release()
		for i, p := range peaks {
			extra := int64(0)
			if withY {
				extra = 2 * int64(lengths[i]) * 2 * batch * hidden * 4 // two directions, twice
			}
			if p < peaks[0] || p > peaks[0]+extra {
				t.Errorf("Y asked for: %v: peaks %v for lengths %v; want at most %d more than the first", withY, peaks, lengths, extra)
			}
		}
		if !withY && peaks[2] != peaks[0] {
			t.Errorf("peaks %v for lengths %v without Y; want one value", peaks, lengths)
		}
	}
}
