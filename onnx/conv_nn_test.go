package onnx_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/gopir/gopir/exec"
	"github.com/gopir/gopir/onnx"
	"github.com/gopir/gopir/onnx/onnxpb"
	"github.com/gopir/gopir/ops"
	"github.com/gopir/gopir/tensor"
)

// TestDropoutTraining: Dropout in training mode is the identity with
// ratio 0 and refused with a ratio above 0, at import when both inputs
// are known, else by the run whose values ask for it.
func TestDropoutTraining(t *testing.T) {
	m := oneNode{"Dropout", 13, []ioSpec{
		{onnxpb.TensorProto_FLOAT, []int64{3}}, {onnxpb.TensorProto_FLOAT, nil}, {onnxpb.TensorProto_BOOL, nil},
	}, nil}.model()
	m.Graph.Node[0].Output = []string{"y", "z"}
	m.Graph.Output = append(m.Graph.Output, &onnxpb.ValueInfoProto{Name: proto.String("z")})
	alloc := newAlloc(t)
	host := newAlloc(t)
	mod, err := onnx.Import(m, onnx.Options{Alloc: alloc, File: "m.onnx"})
	if err != nil {
		t.Fatal(err)
	}
	defer mod.Release()
	x, err := exec.Compile(mod.Program, exec.Options{Alloc: alloc})
	if err != nil {
		t.Fatal(err)
	}
	xs, _ := tensor.FromF32(host, []float32{1, -2, 3}, 3)
	defer xs.Release()
	for _, c := range []struct {
		ratio    float32
		training bool
		refused  bool
	}{{0, true, false}, {0.3, false, false}, {0.3, true, true}, {0, false, false}} {
		r, _ := tensor.Scalar(host, tensor.F32, float64(c.ratio))
		tr, _ := tensor.Scalar(host, tensor.Bool, map[bool]float64{true: 1}[c.training])
		res, err := x.Run(context.Background(), map[string]*tensor.Tensor{"a": xs, "b": r, "c": tr})
		r.Release()
		tr.Release()
		var ref *ops.RefusedError
		switch {
		case c.refused && (!errors.As(err, &ref) || !strings.Contains(err.Error(), "random draws cannot be reproduced")):
			t.Errorf("ratio %v training %v: %v, want a refusal", c.ratio, c.training, err)
		case !c.refused && err != nil:
			t.Errorf("ratio %v training %v: %v", c.ratio, c.training, err)
		case !c.refused:
			if y, z := res["y"].F32(), res["z"].Bool(); y[0] != 1 || y[1] != -2 || y[2] != 3 || !z[0] || !z[1] || !z[2] {
				t.Errorf("ratio %v training %v: y %v, mask %v", c.ratio, c.training, y, z)
			}
			res.Release()
		}
	}

	// Known training mode and ratio: refused at import.
	known := oneNode{"Dropout", 13, []ioSpec{{onnxpb.TensorProto_FLOAT, []int64{3}}}, nil}.model()
	known.Graph.Node[0].Input = []string{"a", "r", "t"}
	known.Graph.Initializer = []*onnxpb.TensorProto{
		{Name: proto.String("r"), DataType: proto.Int32(int32(onnxpb.TensorProto_FLOAT)), FloatData: []float32{0.5}},
		{Name: proto.String("t"), DataType: proto.Int32(int32(onnxpb.TensorProto_BOOL)), Int32Data: []int32{1}},
	}
	_, err = onnx.Import(known, onnx.Options{Alloc: alloc, File: "m.onnx"})
	var u *onnx.UnsupportedError
	if !errors.As(err, &u) || !strings.Contains(err.Error(), "training mode with a ratio above 0") {
		t.Errorf("known training mode and ratio 0.5: %v, want unsupported", err)
	}
}
