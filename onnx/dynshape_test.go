package onnx_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/gopir/gopir/exec"
	"github.com/gopir/gopir/ir"
	"github.com/gopir/gopir/memory"
	"github.com/gopir/gopir/onnx"
	"github.com/gopir/gopir/onnx/onnxpb"
	"github.com/gopir/gopir/tensor"
)

// Models with shapes computed at run time: a dynamic batch, shape inputs.
// The importer keeps types as precise as it knows them, builds static ops
// where the shape arithmetic settles it, and the run-time ops elsewhere.

// info is a graph input or output of element type et; a dim of -1 is
// dynamic (a dim_param).
func info(name string, et onnxpb.TensorProto_DataType, dims ...int64) *onnxpb.ValueInfoProto {
	var ds []*onnxpb.TensorShapeProto_Dimension
	for i, d := range dims {
		if d < 0 {
			ds = append(ds, &onnxpb.TensorShapeProto_Dimension{Value: &onnxpb.TensorShapeProto_Dimension_DimParam{DimParam: fmt.Sprint("d", i)}})
		} else {
			ds = append(ds, &onnxpb.TensorShapeProto_Dimension{Value: &onnxpb.TensorShapeProto_Dimension_DimValue{DimValue: d}})
		}
	}
	return &onnxpb.ValueInfoProto{Name: proto.String(name), Type: &onnxpb.TypeProto{Value: &onnxpb.TypeProto_TensorType{
		TensorType: &onnxpb.TypeProto_Tensor{ElemType: dtype(et), Shape: &onnxpb.TensorShapeProto{Dim: ds}},
	}}}
}

// i64Const is an INT64 initializer.
func i64Const(name string, dims []int64, vals ...int64) *onnxpb.TensorProto {
	return &onnxpb.TensorProto{Name: proto.String(name), Dims: dims, DataType: dtype(onnxpb.TensorProto_INT64), Int64Data: vals}
}

// op is a node; attrs alternate names and int64 values or tensors.
func op(opType string, in []string, out string, attrs ...any) *onnxpb.NodeProto {
	n := &onnxpb.NodeProto{OpType: proto.String(opType), Input: in, Output: []string{out}}
	for i := 0; i < len(attrs); i += 2 {
		a := &onnxpb.AttributeProto{Name: proto.String(attrs[i].(string))}
		switch v := attrs[i+1].(type) {
		case int64:
			a.Type, a.I = onnxpb.AttributeProto_INT.Enum(), proto.Int64(v)
		case *onnxpb.TensorProto:
			a.Type, a.T = onnxpb.AttributeProto_TENSOR.Enum(), v
		}
		n.Attribute = append(n.Attribute, a)
	}
	return n
}

// model is an opset-17 model of the given graph; outputs are named.
func model(inputs []*onnxpb.ValueInfoProto, inits []*onnxpb.TensorProto, nodes []*onnxpb.NodeProto, outputs ...string) *onnxpb.ModelProto {
	g := &onnxpb.GraphProto{Name: proto.String("g"), Input: inputs, Initializer: inits, Node: nodes}
	for _, o := range outputs {
		g.Output = append(g.Output, &onnxpb.ValueInfoProto{Name: proto.String(o)})
	}
	return &onnxpb.ModelProto{
		IrVersion:   proto.Int64(8),
		OpsetImport: []*onnxpb.OperatorSetIdProto{{Domain: proto.String(""), Version: proto.Int64(17)}},
		Graph:       g,
	}
}

// flattenBatch is x.view(x.size(0), -1) as PyTorch exports it, for x of
// type tensor<?x3x4xf32>.
func flattenBatch() *onnxpb.ModelProto {
	return model(
		[]*onnxpb.ValueInfoProto{info("x", onnxpb.TensorProto_FLOAT, -1, 3, 4)},
		[]*onnxpb.TensorProto{i64Const("zero", nil, 0), i64Const("axes0", []int64{1}, 0), i64Const("minus1", []int64{1}, -1)},
		[]*onnxpb.NodeProto{
			op("Shape", []string{"x"}, "shape"),
			op("Gather", []string{"shape", "zero"}, "batch", "axis", int64(0)),
			op("Unsqueeze", []string{"batch", "axes0"}, "batch1"),
			op("Concat", []string{"batch1", "minus1"}, "spec", "axis", int64(0)),
			op("Reshape", []string{"x", "spec"}, "y"),
		}, "y")
}

// opNames lists the names of the ops of p's top-level block.
func opNames(p *ir.Program) []string {
	var names []string
	for _, o := range p.Body().Ops() {
		names = append(names, o.Name())
	}
	return names
}

// fetchType is the type of the value fetched as name.
func fetchType(t *testing.T, p *ir.Program, name string) ir.Type {
	t.Helper()
	for _, o := range p.Body().Ops() {
		if n, _ := o.Attrs.Str("name"); o.Name() == "fetch" && n == name {
			return o.Operand(0).Type()
		}
	}
	t.Fatalf("no fetch of %q in\n%s", name, p)
	return ir.Type{}
}

// runModel imports mp and returns a function that runs it on feeds and
// one that releases the results of a run. Memory must be back at its
// baseline after each failed run and each release.
func runModel(t *testing.T, mp *onnxpb.ModelProto) (*onnx.Model, func(feeds map[string]*tensor.Tensor) (exec.Results, error), func(exec.Results)) {
	t.Helper()
	alloc := newAlloc(t)
	m, err := onnx.Import(mp, onnx.Options{Alloc: alloc})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(m.Release)
	x, err := exec.Compile(m.Program, exec.Options{Alloc: alloc, CheckLeaks: true})
	if err != nil {
		t.Fatalf("%v\n%s", err, m.Program)
	}
	base := alloc.Stats().Allocated.Current
	settled := func(what string) {
		t.Helper()
		if a := alloc.Stats().Allocated.Current; a != base {
			t.Fatalf("%d bytes allocated after %s, %d before", a, what, base)
		}
	}
	run := func(feeds map[string]*tensor.Tensor) (exec.Results, error) {
		t.Helper()
		res, err := x.Run(context.Background(), feeds)
		if err != nil {
			settled("a failed run")
		}
		return res, err
	}
	release := func(res exec.Results) {
		t.Helper()
		res.Release()
		settled("a run")
	}
	return m, run, release
}

// seq returns the float32 tensor 0, 1, ... of the given shape on a.
func seq(t *testing.T, a *memory.Allocator, shape ...int) *tensor.Tensor {
	t.Helper()
	n := 1
	for _, d := range shape {
		n *= d
	}
	vs := make([]float32, n)
	for i := range vs {
		vs[i] = float32(i)
	}
	x, err := tensor.FromF32(a, vs, shape...)
	if err != nil {
		t.Fatal(err)
	}
	return x
}

// TestDynamicBatchFlatten imports x.view(x.size(0), -1) for a dynamic
// batch: the shape arithmetic settles to the static reshape [-1, 12],
// the Shape, Gather, Unsqueeze and Concat are gone, and the model runs at
// several batch sizes with memory back at its baseline after each.
func TestDynamicBatchFlatten(t *testing.T) {
	m, run, release := runModel(t, flattenBatch())
	if got := fetchType(t, m.Program, "y"); !got.Equal(ir.TensorOf(ir.F32, -1, 12)) {
		t.Errorf("y is %s, want tensor<?x12xf32>", got)
	}
	if names := opNames(m.Program); !slices.Equal(names, []string{"data", "reshape", "fetch"}) {
		t.Errorf("ops %v, want data, reshape, fetch:\n%s", names, m.Program)
	}
	host := newAlloc(t)
	for _, batch := range []int{2, 5, 0, 2} {
		for range 3 {
			x := seq(t, host, batch, 3, 4)
			res, err := run(map[string]*tensor.Tensor{"x": x})
			if err != nil {
				t.Fatal(err)
			}
			y := res["y"]
			if !slices.Equal(y.Shape(), []int{batch, 12}) || !slices.Equal(y.F32(), x.F32()) {
				t.Fatalf("batch %d: y is %s %v", batch, y.Type(), y.F32())
			}
			release(res)
			x.Release()
		}
	}
}

// TestPartialShapes: what the importer knows of shape vectors makes the
// result types and, where exact, the static ops.
func TestPartialShapes(t *testing.T) {
	f32, i64 := onnxpb.TensorProto_FLOAT, onnxpb.TensorProto_INT64
	fill := &onnxpb.TensorProto{Dims: []int64{1}, DataType: dtype(onnxpb.TensorProto_FLOAT), FloatData: []float32{2}}
	consts := []*onnxpb.TensorProto{
		i64Const("zero", nil, 0), i64Const("zero1", []int64{1}, 0), i64Const("one", nil, 1), i64Const("axes0", []int64{1}, 0),
		i64Const("minus1", []int64{1}, -1), i64Const("four", []int64{1}, 4), i64Const("sixteen", []int64{1}, 16),
	}
	batchOf := func(x string) []*onnxpb.NodeProto {
		return []*onnxpb.NodeProto{
			op("Shape", []string{x}, x+"_shape"),
			op("Gather", []string{x + "_shape", "zero"}, x+"_b"),
			op("Unsqueeze", []string{x + "_b", "axes0"}, x+"_b1"),
		}
	}
	for _, c := range []struct {
		name   string
		inputs []*onnxpb.ValueInfoProto
		nodes  []*onnxpb.NodeProto
		want   ir.Type  // y's type
		ops    []string // ops that must be in the program
		absent []string // ops that must not
		feeds  func(t *testing.T, a *memory.Allocator, batch int) map[string]*tensor.Tensor
		check  func(t *testing.T, batch int, feeds map[string]*tensor.Tensor, y *tensor.Tensor)
	}{{
		// A known element of a partly known shape folds: dim 1 is 3.
		name:   "known dim",
		inputs: []*onnxpb.ValueInfoProto{info("x", f32, -1, 3, 4)},
		nodes: []*onnxpb.NodeProto{
			op("Shape", []string{"x"}, "s"), op("Gather", []string{"s", "one"}, "d"),
			op("Unsqueeze", []string{"d", "axes0"}, "d1"), op("ConstantOfShape", []string{"d1"}, "y", "value", fill),
		},
		want: ir.TensorOf(ir.F32, 3), ops: []string{"constant"}, absent: []string{"shape", "gather", "constant_of_shape"},
		feeds: func(t *testing.T, a *memory.Allocator, batch int) map[string]*tensor.Tensor {
			return map[string]*tensor.Tensor{"x": seq(t, a, batch, 3, 4)}
		},
		check: func(t *testing.T, batch int, _ map[string]*tensor.Tensor, y *tensor.Tensor) {
			if !slices.Equal(y.F32(), []float32{2, 2, 2}) {
				t.Fatalf("y = %v", y.F32())
			}
		},
	}, {
		// zeros(batch, 16): constant_of_shape with the batch dynamic.
		name:   "constant of shape",
		inputs: []*onnxpb.ValueInfoProto{info("x", f32, -1, 3)},
		nodes:  append(batchOf("x"), op("Concat", []string{"x_b1", "sixteen"}, "s", "axis", int64(0)), op("ConstantOfShape", []string{"s"}, "y")),
		want:   ir.TensorOf(ir.F32, -1, 16), ops: []string{"shape", "constant_of_shape"},
		feeds: func(t *testing.T, a *memory.Allocator, batch int) map[string]*tensor.Tensor {
			return map[string]*tensor.Tensor{"x": seq(t, a, batch, 3)}
		},
		check: func(t *testing.T, batch int, _ map[string]*tensor.Tensor, y *tensor.Tensor) {
			if !slices.Equal(y.Shape(), []int{batch, 16}) || slices.ContainsFunc(y.F32(), func(v float32) bool { return v != 0 }) {
				t.Fatalf("y is %s %v", y.Type(), y.F32())
			}
		},
	}, {
		// expand(x, [batch, 4]) of x [?, 1]: the batch is x's own dim,
		// so the static expand keeps it.
		name:   "expand keeps the batch",
		inputs: []*onnxpb.ValueInfoProto{info("x", f32, -1, 1)},
		nodes:  append(batchOf("x"), op("Concat", []string{"x_b1", "four"}, "s", "axis", int64(0)), op("Expand", []string{"x", "s"}, "y")),
		want:   ir.TensorOf(ir.F32, -1, 4), ops: []string{"expand"}, absent: []string{"shape", "expand_dyn"},
		feeds: func(t *testing.T, a *memory.Allocator, batch int) map[string]*tensor.Tensor {
			return map[string]*tensor.Tensor{"x": seq(t, a, batch, 1)}
		},
		check: func(t *testing.T, batch int, _ map[string]*tensor.Tensor, y *tensor.Tensor) {
			for i, v := range y.F32() {
				if v != float32(i/4) {
					t.Fatalf("y = %v", y.F32())
				}
			}
		},
	}, {
		// expand(x, [batch of z, 4]): another value's dim is read at run
		// time; the type still knows the 4.
		name:   "expand by another batch",
		inputs: []*onnxpb.ValueInfoProto{info("x", f32, 1, 1), info("z", f32, -1)},
		nodes:  append(batchOf("z"), op("Concat", []string{"z_b1", "four"}, "s", "axis", int64(0)), op("Expand", []string{"x", "s"}, "y")),
		want:   ir.TensorOf(ir.F32, -1, 4), ops: []string{"shape", "expand_dyn"},
		feeds: func(t *testing.T, a *memory.Allocator, batch int) map[string]*tensor.Tensor {
			return map[string]*tensor.Tensor{"x": seq(t, a, 1, 1), "z": seq(t, a, batch)}
		},
		check: func(t *testing.T, batch int, _ map[string]*tensor.Tensor, y *tensor.Tensor) {
			if !slices.Equal(y.Shape(), []int{batch, 4}) {
				t.Fatalf("y is %s", y.Type())
			}
		},
	}, {
		// A constant [0, -1] copies the dynamic batch: the static reshape.
		name:   "reshape copying the batch",
		inputs: []*onnxpb.ValueInfoProto{info("x", f32, -1, 3, 4)},
		nodes:  []*onnxpb.NodeProto{op("Concat", []string{"zero1", "minus1"}, "s", "axis", int64(0)), op("Reshape", []string{"x", "s"}, "y")},
		want:   ir.TensorOf(ir.F32, -1, 12), ops: []string{"reshape"}, absent: []string{"reshape_dyn"},
		feeds: func(t *testing.T, a *memory.Allocator, batch int) map[string]*tensor.Tensor {
			return map[string]*tensor.Tensor{"x": seq(t, a, batch, 3, 4)}
		},
		check: func(t *testing.T, batch int, f map[string]*tensor.Tensor, y *tensor.Tensor) {
			if !slices.Equal(y.Shape(), []int{batch, 12}) || !slices.Equal(y.F32(), f["x"].F32()) {
				t.Fatalf("y is %s", y.Type())
			}
		},
	}, {
		// Two dynamic dims: reshape_dyn, with the rank known.
		name:   "reshape two dynamic dims",
		inputs: []*onnxpb.ValueInfoProto{info("x", f32, -1, -1, 4)},
		nodes:  append(batchOf("x"), op("Concat", []string{"x_b1", "minus1"}, "s", "axis", int64(0)), op("Reshape", []string{"x", "s"}, "y")),
		want:   ir.TensorOf(ir.F32, -1, -1), ops: []string{"shape", "reshape_dyn"},
		feeds: func(t *testing.T, a *memory.Allocator, batch int) map[string]*tensor.Tensor {
			return map[string]*tensor.Tensor{"x": seq(t, a, batch, 3, 4)}
		},
		check: func(t *testing.T, batch int, f map[string]*tensor.Tensor, y *tensor.Tensor) {
			if !slices.Equal(y.Shape(), []int{batch, 12}) || !slices.Equal(y.F32(), f["x"].F32()) {
				t.Fatalf("y is %s", y.Type())
			}
		},
	}, {
		// A 0 read at run time copies the input's dim (ONNX's rule), even
		// where it comes from another tensor's shape.
		name:   "run-time zero copies",
		inputs: []*onnxpb.ValueInfoProto{info("x", f32, 4, 3), info("z", f32, -1)},
		nodes:  append(batchOf("z"), op("Concat", []string{"z_b1", "minus1"}, "s", "axis", int64(0)), op("Reshape", []string{"x", "s"}, "y")),
		want:   ir.TensorOf(ir.F32, -1, -1), ops: []string{"reshape_dyn"},
		feeds: func(t *testing.T, a *memory.Allocator, batch int) map[string]*tensor.Tensor {
			return map[string]*tensor.Tensor{"x": seq(t, a, 4, 3), "z": seq(t, a, []int{0, 2}[batch%2])}
		},
		check: func(t *testing.T, batch int, _ map[string]*tensor.Tensor, y *tensor.Tensor) {
			if want := [][]int{{4, 3}, {2, 6}}[batch%2]; !slices.Equal(y.Shape(), want) {
				t.Fatalf("y is %s, want %v", y.Type(), want)
			}
		},
	}, {
		// Shape's start and end (opset 15) on a dynamic shape; Size.
		name:   "shape slice and size",
		inputs: []*onnxpb.ValueInfoProto{info("x", f32, 2, -1, 4)},
		nodes: []*onnxpb.NodeProto{
			op("Shape", []string{"x"}, "s", "start", int64(1), "end", int64(-1)), op("Size", []string{"x"}, "n"),
			op("Unsqueeze", []string{"n", "axes0"}, "n1"), op("Concat", []string{"s", "n1"}, "y", "axis", int64(0)),
		},
		want: ir.TensorOf(ir.I64, 2), ops: []string{"shape", "slice", "size"},
		feeds: func(t *testing.T, a *memory.Allocator, batch int) map[string]*tensor.Tensor {
			return map[string]*tensor.Tensor{"x": seq(t, a, 2, batch, 4)}
		},
		check: func(t *testing.T, batch int, _ map[string]*tensor.Tensor, y *tensor.Tensor) {
			if want := []int64{int64(batch), int64(8 * batch)}; !slices.Equal(y.I64(), want) {
				t.Fatalf("y = %v, want %v", y.I64(), want)
			}
		},
	}, {
		// A shape input: only its length is known.
		name:   "shape input",
		inputs: []*onnxpb.ValueInfoProto{info("x", f32, 2, 3, 4), info("s", i64, 2)},
		nodes:  []*onnxpb.NodeProto{op("Reshape", []string{"x", "s"}, "y")},
		want:   ir.TensorOf(ir.F32, -1, -1), ops: []string{"reshape_dyn"},
		feeds: func(t *testing.T, a *memory.Allocator, batch int) map[string]*tensor.Tensor {
			s, err := tensor.FromI64(a, []int64{int64(batch + 1), -1}, 2)
			if err != nil {
				t.Fatal(err)
			}
			return map[string]*tensor.Tensor{"x": seq(t, a, 2, 3, 4), "s": s}
		},
		check: func(t *testing.T, batch int, _ map[string]*tensor.Tensor, y *tensor.Tensor) {
			if want := []int{batch + 1, 24 / (batch + 1)}; !slices.Equal(y.Shape(), want) {
				t.Fatalf("y is %s, want %v", y.Type(), want)
			}
		},
	}} {
		t.Run(c.name, func(t *testing.T) {
			m, run, release := runModel(t, model(c.inputs, consts, c.nodes, "y"))
			if got := fetchType(t, m.Program, "y"); !got.Equal(c.want) {
				t.Errorf("y is %s, want %s\n%s", got, c.want, m.Program)
			}
			names := opNames(m.Program)
			for _, o := range c.ops {
				if !slices.Contains(names, o) {
					t.Errorf("no %s among %v", o, names)
				}
			}
			for _, o := range c.absent {
				if slices.Contains(names, o) {
					t.Errorf("%s among %v", o, names)
				}
			}
			host := newAlloc(t)
			for _, batch := range []int{2, 3, 1, 2} {
				feeds := c.feeds(t, host, batch)
				res, err := run(feeds)
				if err != nil {
					t.Fatalf("batch %d: %v", batch, err)
				}
				c.check(t, batch, feeds, res["y"])
				release(res)
				for _, f := range feeds {
					f.Release()
				}
			}
		})
	}
}

// TestDynamicShapeErrors: a shape that does not fit fails the run with an
// error naming the op, and leaves nothing allocated.
func TestDynamicShapeErrors(t *testing.T) {
	f32, i64 := onnxpb.TensorProto_FLOAT, onnxpb.TensorProto_INT64
	for _, c := range []struct {
		name  string
		mp    *onnxpb.ModelProto
		feeds func(a *memory.Allocator) map[string]*tensor.Tensor
		want  string
	}{{
		name: "reshape",
		mp:   model([]*onnxpb.ValueInfoProto{info("x", f32, 2, 3), info("s", i64, 2)}, nil, []*onnxpb.NodeProto{op("Reshape", []string{"x", "s"}, "y")}, "y"),
		feeds: func(a *memory.Allocator) map[string]*tensor.Tensor {
			s, _ := tensor.FromI64(a, []int64{4, -1}, 2)
			return map[string]*tensor.Tensor{"x": seq(t, a, 2, 3), "s": s}
		},
		want: "reshape_dyn",
	}, {
		name: "expand",
		mp:   model([]*onnxpb.ValueInfoProto{info("x", f32, 2, 3), info("s", i64, 2)}, nil, []*onnxpb.NodeProto{op("Expand", []string{"x", "s"}, "y")}, "y"),
		feeds: func(a *memory.Allocator) map[string]*tensor.Tensor {
			s, _ := tensor.FromI64(a, []int64{4, 3}, 2)
			return map[string]*tensor.Tensor{"x": seq(t, a, 2, 3), "s": s}
		},
		want: "expand_dyn",
	}} {
		t.Run(c.name, func(t *testing.T) {
			_, run, _ := runModel(t, c.mp)
			host := newAlloc(t)
			for range 3 {
				feeds := c.feeds(host)
				_, err := run(feeds)
				if err == nil || !strings.Contains(err.Error(), c.want) {
					t.Fatalf("error %v, want one naming %s", err, c.want)
				}
				for _, f := range feeds {
					f.Release()
				}
			}
		})
	}
}

// TestDynamicShapeRefusals: what the importer cannot type is refused,
// clearly.
func TestDynamicShapeRefusals(t *testing.T) {
	f32, i64 := onnxpb.TensorProto_FLOAT, onnxpb.TensorProto_INT64
	for _, c := range []struct {
		name string
		mp   *onnxpb.ModelProto
		want string
	}{
		{"reshape to a shape of dynamic length",
			model([]*onnxpb.ValueInfoProto{info("x", f32, 2, 3), info("s", i64, -1)}, nil, []*onnxpb.NodeProto{op("Reshape", []string{"x", "s"}, "y")}, "y"),
			"not 1-D of static length"},
		{"squeeze axes of dynamic length",
			model([]*onnxpb.ValueInfoProto{info("x", f32, 1, 3), info("a", i64, -1)}, nil, []*onnxpb.NodeProto{op("Squeeze", []string{"x", "a"}, "y")}, "y"),
			"not 1-D of static length"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := onnx.Import(c.mp, onnx.Options{})
			var u *onnx.UnsupportedError
			if !errors.As(err, &u) || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %v, want an UnsupportedError naming %q", err, c.want)
			}
		})
	}
}

// TestRunTimeMatchesImportTime converts each op twice: with its shape,
// axes, bounds or sizes as initializers (known at import time: the static
// ops) and as graph inputs (read at run time: the _dyn ops). Both must
// give the same results, of types that the run-time ones refine.
func TestRunTimeMatchesImportTime(t *testing.T) {
	type idx struct {
		name string
		vals []int64
	}
	f32, i64 := onnxpb.TensorProto_FLOAT, onnxpb.TensorProto_INT64
	type testCase struct {
		op    string
		opset int64
		x     []int64 // x's shape; x holds 0, 1, 2, ...
		idx   []idx
		attrs []any
		outs  int
	}
	cases := []testCase{
		{"Reshape", 14, []int64{2, 3, 4}, []idx{{"s", []int64{0, -1, 2}}}, nil, 1},
		{"Reshape", 14, []int64{0, 3}, []idx{{"s", []int64{3, 0}}}, []any{"allowzero", int64(1)}, 1},
		{"Expand", 13, []int64{3, 1}, []idx{{"s", []int64{2, 1, 4}}}, nil, 1},
		{"Tile", 13, []int64{2, 3}, []idx{{"r", []int64{2, 0}}}, nil, 1},
		{"Tile", 13, []int64{2, 1, 3}, []idx{{"r", []int64{1, 4, 2}}}, nil, 1},
		{"Slice", 13, []int64{5, 6}, []idx{{"st", []int64{1, -1}}, {"en", []int64{4, -7}}, {"ax", []int64{0, 1}}, {"sp", []int64{2, -2}}}, nil, 1},
		{"Slice", 13, []int64{5, 6, 2}, []idx{{"st", []int64{-100}}, {"en", []int64{3}}}, nil, 1},
		{"Slice", 13, []int64{5, 6}, []idx{{"st", []int64{2}}, {"en", []int64{9}}, {"", nil}, {"sp", []int64{2}}}, nil, 1},
		{"Squeeze", 13, []int64{1, 3, 1}, []idx{{"a", []int64{-1, 0}}}, nil, 1},
		{"Unsqueeze", 13, []int64{3, 2}, []idx{{"a", []int64{3, 0}}}, nil, 1},
		{"Split", 13, []int64{2, 7}, []idx{{"s", []int64{2, 0, 5}}}, []any{"axis", int64(-1)}, 3},
		{"ConstantOfShape", 13, nil, []idx{{"s", []int64{2, 3}}}, nil, 1},
		{"Range", 13, nil, []idx{{"a", []int64{3}}, {"b", []int64{-7}}, {"c", []int64{-3}}}, nil, 1},
	}
	for _, red := range []string{"ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin", "ReduceSumSquare", "ReduceL1", "ReduceL2", "ReduceLogSum", "ReduceLogSumExp"} {
		for _, axes := range [][]int64{{1}, {-1, 0}} {
			for _, keep := range []int64{0, 1} {
				cases = append(cases, testCase{red, 18, []int64{2, 3, 4}, []idx{{"a", axes}}, []any{"keepdims", keep}, 1})
			}
		}
	}
	for _, c := range cases {
		t.Run(fmt.Sprintf("%s%v%v", c.op, c.attrs, c.idx), func(t *testing.T) {
			run := func(known bool) (*onnx.Model, []*tensor.Tensor) {
				var inputs []*onnxpb.ValueInfoProto
				var inits []*onnxpb.TensorProto
				in := []string{}
				if c.x != nil {
					inputs = append(inputs, info("x", f32, c.x...))
					in = append(in, "x")
				}
				host := newAlloc(t)
				feeds := map[string]*tensor.Tensor{}
				if c.x != nil {
					shape := make([]int, len(c.x))
					for i, d := range c.x {
						shape[i] = int(d)
					}
					feeds["x"] = seq(t, host, shape...)
				}
				for _, ix := range c.idx {
					in = append(in, ix.name)
					switch {
					case ix.name == "":
					case known && c.op == "Range":
						inits = append(inits, i64Const(ix.name, nil, ix.vals...))
					case known:
						inits = append(inits, i64Const(ix.name, []int64{int64(len(ix.vals))}, ix.vals...))
					case c.op == "Range":
						inputs = append(inputs, info(ix.name, i64))
						feeds[ix.name], _ = tensor.FromI64(host, ix.vals, []int{}...)
					default:
						inputs = append(inputs, info(ix.name, i64, int64(len(ix.vals))))
						feeds[ix.name], _ = tensor.FromI64(host, ix.vals, len(ix.vals))
					}
				}
				var outs []string
				for i := range c.outs {
					outs = append(outs, fmt.Sprint("y", i))
				}
				node := op(c.op, in, "", c.attrs...)
				node.Output = outs
				mp := model(inputs, inits, []*onnxpb.NodeProto{node}, outs...)
				mp.OpsetImport[0].Version = proto.Int64(c.opset)
				m, run, release := runModel(t, mp)
				res, err := run(feeds)
				if err != nil {
					t.Fatalf("known %v: %v\n%s", known, err, m.Program)
				}
				var ys []*tensor.Tensor
				for _, o := range outs {
					y, err := res[o].Clone(host)
					if err != nil {
						t.Fatal(err)
					}
					ys = append(ys, y)
				}
				release(res)
				for _, f := range feeds {
					f.Release()
				}
				t.Cleanup(func() {
					for _, y := range ys {
						y.Release()
					}
				})
				return m, ys
			}
			ms, static := run(true)
			md, dynamic := run(false)
			for i, o := range static {
				d := dynamic[i]
				if !slices.Equal(o.Shape(), d.Shape()) || fmt.Sprint(values(o)) != fmt.Sprint(values(d)) {
					t.Fatalf("output %d: known %s %v, run time %s %v", i, o.Type(), values(o), d.Type(), values(d))
				}
				st, dt := fetchType(t, ms.Program, fmt.Sprint("y", i)), fetchType(t, md.Program, fmt.Sprint("y", i))
				if !st.Refines(dt) {
					t.Errorf("output %d: type %s known, %s at run time", i, st, dt)
				}
			}
			if names := opNames(md.Program); !slices.ContainsFunc(names, func(n string) bool {
				return strings.HasSuffix(n, "_dyn") || n == "range" || n == "constant_of_shape" || n == "tile"
			}) {
				t.Errorf("no run-time op among %v", names)
			}
		})
	}
}
