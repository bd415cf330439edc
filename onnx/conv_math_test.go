package onnx_test

import (
	"errors"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/gopir/gopir/onnx"
	"github.com/gopir/gopir/onnx/onnxpb"
)

// TestMathCases runs the one-node models of tools/onnx_math_cases.py
// (onnx/testdata/math): each must import, run and match numpy's output,
// leaving the allocators as it found them.
func TestMathCases(t *testing.T) {
	tests, err := onnx.ListTests("testdata/math")
	if err != nil {
		t.Fatal(err)
	}
	if len(tests) < 70 {
		t.Fatalf("found %d cases in testdata/math, want at least 70", len(tests))
	}
	for _, tc := range tests {
		if o := onnx.RunTest(tc); o.Status != onnx.Pass {
			t.Errorf("%s: %s: %s", tc.Name, o.Status, o.Detail)
		}
	}
}

// oneNode is a model of one node of the default domain at opset, whose
// inputs are graph inputs of the given element types and shapes (-1: a
// dim named "n").
type oneNode struct {
	op     string
	opset  int64
	inputs []ioSpec
	attrs  []*onnxpb.AttributeProto
}

type ioSpec struct {
	elem onnxpb.TensorProto_DataType
	dims []int64
}

func (c oneNode) model() *onnxpb.ModelProto {
	var inputs []*onnxpb.ValueInfoProto
	var names []string
	for i, in := range c.inputs {
		name := string(rune('a' + i))
		names = append(names, name)
		shape := &onnxpb.TensorShapeProto{}
		for _, d := range in.dims {
			dim := &onnxpb.TensorShapeProto_Dimension{Value: &onnxpb.TensorShapeProto_Dimension_DimValue{DimValue: d}}
			if d < 0 {
				dim.Value = &onnxpb.TensorShapeProto_Dimension_DimParam{DimParam: "n"}
			}
			shape.Dim = append(shape.Dim, dim)
		}
		inputs = append(inputs, &onnxpb.ValueInfoProto{Name: proto.String(name), Type: &onnxpb.TypeProto{
			Value: &onnxpb.TypeProto_TensorType{TensorType: &onnxpb.TypeProto_Tensor{ElemType: proto.Int32(int32(in.elem)), Shape: shape}},
		}})
	}
	return &onnxpb.ModelProto{
		IrVersion:   proto.Int64(8),
		OpsetImport: []*onnxpb.OperatorSetIdProto{{Domain: proto.String(""), Version: proto.Int64(c.opset)}},
		Graph: &onnxpb.GraphProto{
			Name:   proto.String("g"),
			Input:  inputs,
			Node:   []*onnxpb.NodeProto{{OpType: proto.String(c.op), Input: names, Output: []string{"y"}, Attribute: c.attrs}},
			Output: []*onnxpb.ValueInfoProto{{Name: proto.String("y")}},
		},
	}
}

func intAttr(name string, v int64) *onnxpb.AttributeProto {
	return &onnxpb.AttributeProto{Name: proto.String(name), Type: onnxpb.AttributeProto_INT.Enum(), I: proto.Int64(v)}
}

func floatAttr(name string, v float32) *onnxpb.AttributeProto {
	return &onnxpb.AttributeProto{Name: proto.String(name), Type: onnxpb.AttributeProto_FLOAT.Enum(), F: proto.Float32(v)}
}

func stringAttr(name, v string) *onnxpb.AttributeProto {
	return &onnxpb.AttributeProto{Name: proto.String(name), Type: onnxpb.AttributeProto_STRING.Enum(), S: []byte(v)}
}

// TestMathRefusals checks that what the math converters cannot do exactly
// is refused as unsupported, naming it, and that malformed nodes are
// errors (not refusals); neither leaves memory behind.
func TestMathRefusals(t *testing.T) {
	f32 := func(dims ...int64) ioSpec { return ioSpec{onnxpb.TensorProto_FLOAT, dims} }
	f64 := func(dims ...int64) ioSpec { return ioSpec{onnxpb.TensorProto_DOUBLE, dims} }
	i32 := func(dims ...int64) ioSpec { return ioSpec{onnxpb.TensorProto_INT32, dims} }
	i64 := func(dims ...int64) ioSpec { return ioSpec{onnxpb.TensorProto_INT64, dims} }
	b1 := func(dims ...int64) ioSpec { return ioSpec{onnxpb.TensorProto_BOOL, dims} }
	eq := func(s string) []*onnxpb.AttributeProto { return []*onnxpb.AttributeProto{stringAttr("equation", s)} }
	cases := []struct {
		node        oneNode
		unsupported bool
		want        string
	}{
		{oneNode{"Bernoulli", 15, []ioSpec{f32(3)}, nil}, true, "random op Bernoulli"},
		{oneNode{"RandomUniformLike", 15, []ioSpec{f32(3)}, []*onnxpb.AttributeProto{floatAttr("high", 2)}}, true, "random op RandomUniformLike"},
		{oneNode{"RandomNormal", 15, nil, nil}, true, "random op RandomNormal"},
		{oneNode{"Erf", 13, []ioSpec{i32(3)}, nil}, true, "tensor<3xi32>"},
		{oneNode{"Floor", 13, []ioSpec{i64(3)}, nil}, true, "tensor<3xi64>"},
		{oneNode{"Det", 11, []ioSpec{i32(2, 2)}, nil}, true, "tensor<2x2xi32>"},
		{oneNode{"Sign", 13, []ioSpec{b1(3)}, nil}, true, "tensor<3xi1>"},
		{oneNode{"IsInf", 10, []ioSpec{i32(3)}, nil}, true, "tensor<3xi32>"},
		{oneNode{"Mod", 13, []ioSpec{b1(3), b1(3)}, nil}, true, "tensor<3xi1>"},
		{oneNode{"Mod", 13, []ioSpec{i32(3), i64(3)}, nil}, false, "want one type"},
		{oneNode{"Mod", 13, []ioSpec{i32(3), i32(3)}, []*onnxpb.AttributeProto{intAttr("fmod", 2)}}, false, "fmod=2"},
		{oneNode{"Shrink", 9, []ioSpec{i32(3)}, []*onnxpb.AttributeProto{floatAttr("lambd", 1.5)}}, true, "lambd=1.5"},
		{oneNode{"ReduceProd", 18, []ioSpec{f32(2, 3), i64(1)}, nil}, true, "axes computed at run time"},
		{oneNode{"ReduceProd", 13, []ioSpec{b1(2, 3)}, nil}, true, "tensor<2x3xi1>"},
		{oneNode{"MeanVarianceNormalization", 13, []ioSpec{i32(2, 3, 4, 5)}, nil}, true, "tensor<2x3x4x5xi32>"},
		{oneNode{"MeanVarianceNormalization", 8, []ioSpec{f32(2, 3, 4, 5)}, nil}, false, "does not exist at opset 8 (it came in opset 9)"},
		{oneNode{"MeanVarianceNormalization", 13, []ioSpec{f32(2, 3)}, []*onnxpb.AttributeProto{{Name: proto.String("axes"), Type: onnxpb.AttributeProto_INTS.Enum(), Ints: []int64{1, -1}}}}, false, "twice"},
		{oneNode{"Einsum", 12, []ioSpec{f32(-1, 3), f32(3)}, eq("ij,j->i")}, true, "dims unknown at import time"},
		{oneNode{"Einsum", 12, []ioSpec{b1(3)}, eq("i->i")}, true, "tensor<3xi1>"},
		{oneNode{"Einsum", 12, []ioSpec{f32(2, 3), f64(3)}, eq("ij,j->i")}, false, "want one type"},
		{oneNode{"Einsum", 12, []ioSpec{f32(2, 3)}, eq("ij,j->i")}, false, "2 input subscripts for 1 inputs"},
		{oneNode{"Einsum", 12, []ioSpec{f32(2, 3)}, eq("ijk->i")}, false, "3 letters for input 0 of rank 2"},
		{oneNode{"Einsum", 12, []ioSpec{f32(2, 3)}, eq("i...j...->i")}, false, "unexpected"},
		{oneNode{"Einsum", 12, []ioSpec{f32(2, 3)}, eq("i1->i")}, false, `subscript "i1": unexpected "1"`},
		{oneNode{"Einsum", 12, []ioSpec{f32(2, 3)}, eq("ij->k")}, false, "output letter k is in no input"},
		{oneNode{"Einsum", 12, []ioSpec{f32(2, 3)}, eq("ij->ii")}, false, "appears twice"},
		{oneNode{"Einsum", 12, []ioSpec{f32(2, 3)}, eq("ij->i->j")}, false, "more than one ->"},
		{oneNode{"Einsum", 12, []ioSpec{f32(4, 2, 3)}, eq("...ij->i")}, false, "no ..."},
		{oneNode{"Einsum", 12, []ioSpec{f32(2, 3), f32(4)}, eq("ij,j->i")}, false, "letter j has sizes 3 and 4"},
		{oneNode{"Einsum", 12, []ioSpec{f32(2, 3)}, eq("ii->i")}, false, "letter i has sizes 2 and 3"},
		{oneNode{"Einsum", 12, []ioSpec{f32(1, 3)}, eq("ii->i")}, false, "letter i repeats with sizes 1 and 3"},
	}
	for _, c := range cases {
		a := newAlloc(t)
		m, err := onnx.Import(c.node.model(), onnx.Options{Alloc: a, File: "m.onnx"})
		if err == nil {
			m.Release()
			t.Errorf("%s %v: imported, want an error mentioning %q", c.node.op, c.node.inputs, c.want)
			continue
		}
		var u *onnx.UnsupportedError
		if errors.As(err, &u) != c.unsupported || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s %v: error %v; want unsupported=%v mentioning %q", c.node.op, c.node.inputs, err, c.unsupported, c.want)
		}
	}
}
