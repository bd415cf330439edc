package onnx_test

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/gopir/gopir/onnx"
	"github.com/gopir/gopir/onnx/onnxpb"
)

// ONNX's backend tests feed attribute-like inputs (Pad's pads, Resize's
// scales, sizes and roi) as graph inputs, which gopir refuses since it
// needs them when it builds the program. Models usually hold them as
// initializers or constants: these tests turn every input but the first
// into an initializer holding its value from test_data_set_0, and must
// then pass.
var knownInputTests = []string{
	"test_constant_pad", "test_edge_pad", "test_reflect_pad",
	"test_upsample_nearest",
	"test_resize_downsample_scales_cubic",
	"test_resize_downsample_scales_cubic_A_n0p5_exclude_outside",
	"test_resize_downsample_scales_cubic_align_corners",
	"test_resize_downsample_scales_linear",
	"test_resize_downsample_scales_linear_align_corners",
	"test_resize_downsample_scales_nearest",
	"test_resize_downsample_sizes_cubic",
	"test_resize_downsample_sizes_linear_pytorch_half_pixel",
	"test_resize_downsample_sizes_nearest",
	"test_resize_downsample_sizes_nearest_tf_half_pixel_for_nn",
	"test_resize_tf_crop_and_resize",
	"test_resize_upsample_scales_cubic",
	"test_resize_upsample_scales_cubic_A_n0p5_exclude_outside",
	"test_resize_upsample_scales_cubic_align_corners",
	"test_resize_upsample_scales_cubic_asymmetric",
	"test_resize_upsample_scales_linear",
	"test_resize_upsample_scales_linear_align_corners",
	"test_resize_upsample_scales_nearest",
	"test_resize_upsample_sizes_cubic",
	"test_resize_upsample_sizes_nearest",
	"test_resize_upsample_sizes_nearest_ceil_half_pixel",
	"test_resize_upsample_sizes_nearest_floor_align_corners",
	"test_resize_upsample_sizes_nearest_round_prefer_ceil_asymmetric",
}

func TestBackendKnownInputs(t *testing.T) {
	root := filepath.Join(onnx.DebianTestData, "node")
	if _, err := os.Stat(root); err != nil {
		t.Skipf("ONNX's backend tests are not installed (Debian package libonnx-testdata): %v", err)
	}
	for _, name := range knownInputTests {
		t.Run(name, func(t *testing.T) {
			tc, err := onnx.ListTests(filepath.Join(root, name))
			if err != nil || len(tc) != 1 {
				t.Fatalf("%v (%d tests)", err, len(tc))
			}
			o := onnx.RunTest(withKnownInputs(t, tc[0]))
			if o.Status != onnx.Pass {
				t.Errorf("%s: %s", o.Status, o.Detail)
			}
		})
	}
}

// withKnownInputs rewrites tc's model so that every graph input but the
// first is an initializer with its value from the first data set, and
// returns a test case over the rewritten model and data sets.
func withKnownInputs(t *testing.T, tc onnx.TestCase) onnx.TestCase {
	t.Helper()
	m, err := onnx.ReadModel(tc.ModelPath)
	if err != nil {
		t.Fatal(err)
	}
	g := m.GetGraph()
	dir := t.TempDir()
	for i, in := range g.GetInput()[1:] {
		data, err := os.ReadFile(tc.DataSets[0].Inputs[i+1])
		if err != nil {
			t.Fatal(err)
		}
		var tp onnxpb.TensorProto
		if err := proto.Unmarshal(data, &tp); err != nil {
			t.Fatal(err)
		}
		tp.Name = proto.String(in.GetName())
		g.Initializer = append(g.Initializer, &tp)
	}
	g.Input = g.Input[:1]
	if m.GetIrVersion() < 4 {
		m.IrVersion = proto.Int64(4) // initializers need not be inputs from IR 4 on
	}
	out := onnx.TestCase{Name: tc.Name, Dir: dir, ModelPath: writeProto(t, dir, "model.onnx", m)}
	for _, ds := range tc.DataSets {
		set := onnx.DataSet{Dir: filepath.Join(dir, filepath.Base(ds.Dir)), Inputs: ds.Inputs[:1], Outputs: ds.Outputs}
		if !slices.EqualFunc(ds.Inputs[1:], tc.DataSets[0].Inputs[1:], sameFile(t)) {
			t.Fatalf("%s: data sets differ in their attribute-like inputs", tc.Name)
		}
		out.DataSets = append(out.DataSets, set)
	}
	return out
}

// sameFile reports whether two files hold the same bytes.
func sameFile(t *testing.T) func(a, b string) bool {
	return func(a, b string) bool {
		x, err := os.ReadFile(a)
		if err != nil {
			t.Fatal(err)
		}
		y, err := os.ReadFile(b)
		if err != nil {
			t.Fatal(err)
		}
		return bytes.Equal(x, y)
	}
}
