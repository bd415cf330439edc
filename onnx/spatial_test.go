package onnx_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/gopir/gopir/onnx"
	"github.com/gopir/gopir/onnx/onnxpb"
)

// TestSpatialModels runs the one-node models of testdata/spatial, written
// by tools/onnx_spatial_cases.py with expected outputs computed apart from
// gopir: the asymmetric, grouped, dilated, 1-D and 3-D cases of the
// spatial converters that ONNX's backend tests leave out. Each must pass.
func TestSpatialModels(t *testing.T) {
	tests, err := onnx.ListTests("testdata/spatial")
	if err != nil {
		t.Fatal(err)
	}
	if len(tests) == 0 {
		t.Fatal("no models (run /usr/bin/python3 tools/onnx_spatial_cases.py)")
	}
	for _, tc := range tests {
		t.Run(tc.Name, func(t *testing.T) {
			if o := onnx.RunTest(tc); o.Status != onnx.Pass {
				t.Errorf("%s: %s", o.Status, o.Detail)
			}
		})
	}
}

// TestResizePadRefusals: what Resize and Pad with run-time operands cannot
// do exactly is refused as unsupported, naming it; malformed nodes are
// errors.
func TestResizePadRefusals(t *testing.T) {
	f32 := func(dims ...int64) ioSpec { return ioSpec{onnxpb.TensorProto_FLOAT, dims} }
	i64 := func(dims ...int64) ioSpec { return ioSpec{onnxpb.TensorProto_INT64, dims} }
	cases := []struct {
		node        oneNode
		unsupported bool
		want        string
	}{
		{oneNode{"Resize", 13, []ioSpec{f32(1, 1, 2, 2), f32(0), f32(4), i64(4)}, nil}, true, "scales and sizes both given and computed at run time"},
		{oneNode{"Resize", 18, []ioSpec{f32(1, 1, 2, 2), f32(0), f32(0), i64(4)}, []*onnxpb.AttributeProto{stringAttr("keep_aspect_ratio_policy", "fit")}}, true, `keep_aspect_ratio_policy "fit"`},
		{oneNode{"Resize", 13, []ioSpec{f32(1, 1, 2, 2), f32(0), f32(3)}, nil}, false, "does not have 4 entries"},
		{oneNode{"Resize", 13, []ioSpec{f32(1, 1, 2, 2), f32(0), i64(4)}, nil}, false, "not a 1-D tensor of the right type"},
		{oneNode{"Resize", 13, []ioSpec{f32(1, 1, 2, 2), f32(3), f32(4)}, []*onnxpb.AttributeProto{stringAttr("coordinate_transformation_mode", "tf_crop_and_resize")}}, false, "roi with 8 numbers"},
		{oneNode{"Upsample", 9, []ioSpec{f32(1, 1, 2, 2), f32(3)}, nil}, false, "do not fit input"},
		{oneNode{"Pad", 18, []ioSpec{f32(2, 3), i64(2), f32(), i64(1)}, nil}, true, "axes computed at run time"},
		{oneNode{"Pad", 13, []ioSpec{f32(2, 3), i64(3)}, nil}, false, "do not fit 2 axes"},
		{oneNode{"Pad", 13, []ioSpec{f32(2, 3), i64(4), i64()}, nil}, false, "is not one element of f32"},
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
