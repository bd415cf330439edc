package onnx_test

import (
	"errors"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/gopir/gopir/onnx"
	"github.com/gopir/gopir/onnx/onnxpb"
)

// TestOptimizerCases runs the one-node Adam, Adagrad and Momentum models of
// tools/onnx_optimizer_cases.py (onnx/testdata/optim) against their numpy
// outputs: T > 0, float64, broadcasting, several tensors per node.
func TestOptimizerCases(t *testing.T) {
	tests, err := onnx.ListTests("testdata/optim")
	if err != nil {
		t.Fatal(err)
	}
	if len(tests) < 6 {
		t.Fatalf("found %d cases in testdata/optim, want at least 6", len(tests))
	}
	for _, tc := range tests {
		if o := onnx.RunTest(tc); o.Status != onnx.Pass {
			t.Errorf("%s: %s: %s", tc.Name, o.Status, o.Detail)
		}
	}
}

// TestOptimizerRefusals: Adam without epsilon is refused as unsupported;
// malformed nodes are errors.
func TestOptimizerRefusals(t *testing.T) {
	f32 := func(dims ...int64) ioSpec { return ioSpec{onnxpb.TensorProto_FLOAT, dims} }
	i64 := func(dims ...int64) ioSpec { return ioSpec{onnxpb.TensorProto_INT64, dims} }
	eps := floatAttr("epsilon", 1e-6)
	mom := []*onnxpb.AttributeProto{floatAttr("alpha", 0.9), floatAttr("beta", 0.1), stringAttr("mode", "standard"), floatAttr("norm_coefficient", 0)}
	cases := []struct {
		op          string
		inputs      []ioSpec
		attrs       []*onnxpb.AttributeProto
		unsupported bool
		want        string
	}{
		{"Adam", []ioSpec{f32(), i64(), f32(2), f32(2), f32(2), f32(2)}, nil, true, "Adam without an epsilon attribute"},
		{"Adam", []ioSpec{f32(), i64(), f32(2), f32(2), f32(2)}, []*onnxpb.AttributeProto{eps}, false, "4 tensors per optimized tensor"},
		{"Adagrad", []ioSpec{f32(), f32(), f32(2), f32(2), f32(2)}, nil, false, "T is tensor<f32>, want an i64 scalar"},
		{"Adagrad", []ioSpec{f32(2), i64(), f32(2), f32(2), f32(2)}, nil, false, "R is tensor<2xf32>, want a float scalar"},
		{"Adagrad", []ioSpec{f32(), i64(), f32(2), ioSpec{onnxpb.TensorProto_DOUBLE, []int64{2}}, f32(2)}, nil, false, "one dtype"},
		{"Momentum", []ioSpec{f32(), i64(), f32(2), f32(2), f32(2)}, mom[:3], false, "needs attribute norm_coefficient"},
		{"Momentum", []ioSpec{f32(), i64(), f32(2), f32(2), f32(2)}, append(mom[:2:2], mom[3], stringAttr("mode", "heavy")), false, `mode "heavy"`},
	}
	for _, c := range cases {
		m := oneNode{c.op, 17, c.inputs, c.attrs}.model()
		m.OpsetImport = append(m.OpsetImport, &onnxpb.OperatorSetIdProto{Domain: proto.String("ai.onnx.preview.training"), Version: proto.Int64(1)})
		m.Graph.Node[0].Domain = proto.String("ai.onnx.preview.training")
		a := newAlloc(t)
		mod, err := onnx.Import(m, onnx.Options{Alloc: a, File: "m.onnx"})
		if err == nil {
			mod.Release()
			t.Errorf("%s %v: imported, want an error mentioning %q", c.op, c.inputs, c.want)
			continue
		}
		var u *onnx.UnsupportedError
		if errors.As(err, &u) != c.unsupported || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s %v: error %v; want unsupported=%v mentioning %q", c.op, c.inputs, err, c.unsupported, c.want)
		}
	}
}
