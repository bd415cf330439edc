package onnx_test

import (
	"testing"

	"github.com/gopir/gopir/onnx"
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
