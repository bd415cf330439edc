package ops_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/gopir/gopir/dist"
	"github.com/gopir/gopir/exec"
	"github.com/gopir/gopir/ir"
	"github.com/gopir/gopir/memory"
	"github.com/gopir/gopir/ops"
	"github.com/gopir/gopir/tensor"
)

// The zero-size property test (issue 12). Every op of the catalog has
// example programs (zdCases, which must cover ops.Names()). Each example
// is mutated (zdVariants): each dim of each operand set to 0, each size
// set to 0 or 1 in every operand at once (so that the operands stay
// consistent and reach the kernel), all sizes ×8 (so that kernels split
// their work over threads), and each int, float or bool attribute
// degenerated (0, −1, −2, 100, NaN, +Inf, empty lists, ...), also together
// with the emptied operands. Every variant must either fail verification,
// or compile and run without a panic (no *exec.KernelPanicError), with
// results of exactly the inferred types and every byte released
// afterwards, twice in a row. The programs have static types, so a
// run-time error is accepted only where operand values decide it
// (indices, labels: dataDep), never for shapes or attributes, which Infer
// sees. The same program with every feed dim dynamic must agree: where
// the static one is rejected it must not run, where the static one runs
// it must run to the same shapes. Where an empty operand gives a
// non-empty result, its values are checked against numpy's and PyTorch's
// (zdExpect: sums over nothing are 0, a mean NaN, ...).
//
// GOPIR_ZERODIMS_REPORT=FILE writes what each variant did, op by op.

// zdOperand is one operand of an example: its type and how to fill it.
type zdOperand struct {
	t    ir.Type
	fill string // "" random; "idx:N" i%N; "pos" in [0.5, 2); "one" all 1
}

func zdF(dims ...int) zdOperand { return zdOperand{t: ir.TensorOf(ir.F32, dims...)} }
func zdD(dims ...int) zdOperand { return zdOperand{t: ir.TensorOf(ir.F64, dims...)} }
func zdB(dims ...int) zdOperand { return zdOperand{t: ir.TensorOf(ir.I1, dims...)} }
func zdI(dims ...int) zdOperand { return zdOperand{t: ir.TensorOf(ir.I32, dims...)} }
func zdPos(dims ...int) zdOperand {
	return zdOperand{t: ir.TensorOf(ir.F32, dims...), fill: "pos"}
}
func zdOne(dt ir.DType, dims ...int) zdOperand {
	return zdOperand{t: ir.TensorOf(dt, dims...), fill: "one"}
}

// zdIdx is an i64 index operand holding i%n: in range for an axis of size n.
func zdIdx(n int, dims ...int) zdOperand {
	return zdOperand{t: ir.TensorOf(ir.I64, dims...), fill: fmt.Sprintf("idx:%d", n)}
}

// zdCase is one example program of an op.
type zdCase struct {
	attrs ir.Attrs
	in    []zdOperand
	// build appends the op(s) on the operands and returns what to fetch;
	// nil means b.Op(name, attrs, in...) and all its results.
	build func(b *ir.Builder, in []*ir.Value, attrs ir.Attrs) []*ir.Value
	// params feeds the operands as "parameter" ops from the store instead
	// of "data" feeds.
	params bool
	// dataDep marks examples whose run can fail because of operand values
	// (indices, labels) once a dim is 0: a run-time error is fine there.
	dataDep bool
	// sizes lists int and int-list attributes that hold operand sizes
	// (input_size, shape, ...): when a size is replaced by 0 or 1 in every
	// operand, it is replaced there too.
	sizes []string
}

// zdBucket sums its operands over the ranks through one bucket: an
// all_reduce_start and its all_reduce_wait (with attrs and the operands'
// types).
func zdBucket(b *ir.Builder, in []*ir.Value, attrs ir.Attrs) []*ir.Value {
	types := make(ir.List, len(in))
	for i, v := range in {
		types[i] = ir.TypeAttr{Type: v.Type()}
	}
	return b.Op("all_reduce_wait", attrs.With("types", types), ops.AllReduceStart(b, in...)).Results()
}

// zdCases has at least one example per op of the catalog.
var zdCases = map[string][]zdCase{
	// Program I/O; every example also feeds and fetches zero-size values.
	"data":  {{in: []zdOperand{zdF(2, 3)}, build: zdIdentity}},
	"fetch": {{in: []zdOperand{zdB(2, 3)}, build: zdIdentity}},
	"parameter": {{in: []zdOperand{zdF(2, 3)}, params: true, build: zdIdentity},
		{in: []zdOperand{zdF(2, 3)}, params: true, build: func(b *ir.Builder, in []*ir.Value, _ ir.Attrs) []*ir.Value {
			return []*ir.Value{ops.Relu(b, in[0])}
		}}},
	"full": {{attrs: ir.A("shape", []int{2, 3}, "value", 1.5, "dtype", ir.F32)},
		{attrs: ir.A("shape", []int{0}, "value", 1, "dtype", ir.I64)}},

	// Stacks: pushed and popped in one program.
	"stack_new":  {{in: []zdOperand{zdF(2, 3)}, build: zdStackRoundTrip}},
	"stack_push": {{in: []zdOperand{zdF(0, 3)}, build: zdStackRoundTrip}},
	"stack_pop":  {{in: []zdOperand{zdI(2, 0)}, build: zdStackRoundTrip}},

	// Sequences: built, edited and read back in one program. An empty
	// sequence of items whose dims are dynamic has no shape to concatenate
	// to, so the dynamic program may fail where the static one runs: the
	// number of items is value-like (dataDep).
	"seq_construct":   {{in: []zdOperand{zdF(2, 3)}, build: zdSeqRoundTrip, dataDep: true}},
	"seq_insert":      {{in: []zdOperand{zdF(0, 3)}, build: zdSeqRoundTrip, dataDep: true}},
	"seq_erase":       {{in: []zdOperand{zdI(2, 0)}, build: zdSeqRoundTrip, dataDep: true}},
	"seq_at":          {{in: []zdOperand{zdD(1, 2)}, build: zdSeqRoundTrip, dataDep: true}},
	"seq_length":      {{in: []zdOperand{zdI(2, 2)}, build: zdSeqRoundTrip, dataDep: true}},
	"concat_from_seq": {{in: []zdOperand{zdF(3, 2)}, build: zdSeqRoundTrip, dataDep: true}},
	"split_to_seq":    {{in: []zdOperand{zdF(4, 2)}, build: zdSeqRoundTrip, dataDep: true}},
	"constant": {{attrs: ir.A("value", zdDense(ir.TensorOf(ir.F32, 2, 3), 1, 2, 3, 4, 5, 6))},
		{attrs: ir.A("value", zdDense(ir.TensorOf(ir.I64, 0, 3)))}},

	// Elementwise.
	"add":           zdBinary(zdF),
	"subtract":      zdBinary(zdF),
	"multiply":      zdBinary(zdI),
	"divide":        zdBinary(zdD),
	"maximum":       zdBinary(zdF),
	"minimum":       zdBinary(zdF),
	"pow":           zdBinary(zdF),
	"equal":         zdBinary(zdF),
	"not_equal":     zdBinary(zdI),
	"less_than":     zdBinary(zdF),
	"less_equal":    zdBinary(zdF),
	"greater_than":  zdBinary(zdD),
	"greater_equal": zdBinary(zdF),
	"logical_and":   zdBinary(zdB),
	"logical_or":    zdBinary(zdB),
	"logical_not":   {{in: []zdOperand{zdB(2, 3)}}},
	"where":         {{in: []zdOperand{zdB(2, 3), zdF(2, 3), zdF(1, 3)}}, {in: []zdOperand{zdB(2, 1), zdF(3), zdF(2, 3)}}},
	"scale":         {{attrs: ir.A("scale", 2.0, "bias", 1.0), in: []zdOperand{zdF(2, 3)}}},
	"clip":          {{attrs: ir.A("min", -1.0, "max", 1.0), in: []zdOperand{zdF(2, 3)}}},
	"abs":           zdUnary(zdI),
	"exp":           zdUnary(zdF),
	"log":           zdUnary(zdPos),
	"neg":           zdUnary(zdF),
	"relu":          zdUnary(zdD),
	"rsqrt":         zdUnary(zdPos),
	"sigmoid":       zdUnary(zdF),
	"sigmoid_f32":   zdUnary(zdF),
	"silu":          zdUnary(zdF),
	"softplus":      zdUnary(zdF),
	"sqrt":          zdUnary(zdPos),
	"floor":         zdUnary(zdF),
	"ceil":          zdUnary(zdD),
	"round":         zdUnary(zdF),
	"sign":          zdUnary(zdI),
	"sin":           zdUnary(zdF),
	"cos":           zdUnary(zdD),
	"tan":           zdUnary(zdF),
	"asin":          zdUnary(zdF),
	"acos":          zdUnary(zdF),
	"atan":          zdUnary(zdD),
	"sinh":          zdUnary(zdF),
	"cosh":          zdUnary(zdF),
	"asinh":         zdUnary(zdF),
	"acosh":         zdUnary(zdPos),
	"atanh":         zdUnary(zdF),
	"erf":           zdUnary(zdD),
	"is_nan":        zdUnary(zdF),
	"is_inf":        {{attrs: ir.A("detect_positive", true, "detect_negative", false), in: []zdOperand{zdF(2, 3)}}},
	"mod":           zdBinary(zdF),
	"fmod":          zdBinary(zdF),
	"reduce_prod":   zdReductions(zdF),
	"det":           {{in: []zdOperand{zdF(2, 3, 3)}}},
	"square":        zdUnary(zdF),
	"tanh":          zdUnary(zdF),
	"gelu":          {{attrs: ir.A("approximate", false), in: []zdOperand{zdF(2, 3)}}},
	"gelu_grad":     {{attrs: ir.A("approximate", true), in: []zdOperand{zdF(2, 3), zdF(2, 3)}}},
	"silu_grad":     {{in: []zdOperand{zdF(2, 3), zdF(2, 3)}}},
	"relu_grad":     {{in: []zdOperand{zdF(2, 3), zdF(2, 3)}}},
	"cast":          {{attrs: ir.A("dtype", ir.I32), in: []zdOperand{zdF(2, 3)}}},
	"assign":        {{in: []zdOperand{zdF(2, 3)}}},
	"full_like":     {{attrs: ir.A("value", 2.0), in: []zdOperand{zdF(2, 3)}}},
	"stop_gradient": {{in: []zdOperand{zdF(2, 3)}}},

	// Constants and random numbers.
	"arange": {{attrs: ir.A("start", 1, "end", 7, "step", 2)},
		{attrs: ir.A("start", 1.5, "end", -1.0, "step", -0.5, "dtype", ir.F64)}},
	"uniform_random":  {{attrs: ir.A("shape", []int{2, 3}, "min", -1.0, "max", 1.0, "seed", 3)}},
	"gaussian_random": {{attrs: ir.A("shape", []int{2, 3}, "mean", 0.0, "std", 1.0)}},
	"dropout": {{attrs: ir.A("p", 0.5, "training", true, "seed", 1), in: []zdOperand{zdF(2, 3)}},
		{attrs: ir.A("training", false), in: []zdOperand{zdF(2, 3)}}},

	// Reductions.
	"reduce_sum":  zdReductions(zdF),
	"reduce_mean": zdReductions(zdD),
	"reduce_max":  zdReductions(zdI),
	"reduce_min":  zdReductions(zdF),
	"argmax": {{attrs: ir.A("axis", 1, "keepdim", false), in: []zdOperand{zdF(2, 3)}},
		{attrs: ir.A("axis", 0, "keepdim", true), in: []zdOperand{zdI(2, 3)}}},
	"reduce_grad": {{attrs: ir.A("axes", []int{1}, "keepdim", false, "mean", true), in: []zdOperand{zdF(2), zdF(2, 3)}},
		{attrs: ir.A("axes", []int{}, "keepdim", true), in: []zdOperand{zdD(1, 1), zdD(2, 3)}}},
	"reduce_sum_to": {{attrs: ir.A("shape", []int{1, 3}), in: []zdOperand{zdF(4, 2, 3)}, sizes: []string{"shape"}},
		{in: []zdOperand{zdF(2, 3), zdF(3)}}},

	// Shapes.
	"reshape": {{attrs: ir.A("shape", []int{3, 2}), in: []zdOperand{zdF(2, 3)}, sizes: []string{"shape"}},
		{attrs: ir.A("shape", []int{-1, 2}), in: []zdOperand{zdI(2, 3)}}},
	"transpose": {{attrs: ir.A("perm", []int{1, 0, 2}), in: []zdOperand{zdF(2, 3, 4)}}},
	"squeeze":   {{attrs: ir.A("axes", []int{1}), in: []zdOperand{zdF(2, 1, 3)}}},
	"unsqueeze": {{attrs: ir.A("axes", []int{0, 2}), in: []zdOperand{zdF(2, 3)}}},
	"flatten":   {{attrs: ir.A("start_axis", 1, "stop_axis", 2), in: []zdOperand{zdF(2, 3, 4)}}},
	"expand": {{attrs: ir.A("shape", []int{2, 3}), in: []zdOperand{zdF(1, 3)}, sizes: []string{"shape"}},
		{attrs: ir.A("shape", []int{4, -1, 3}), in: []zdOperand{zdB(2, 1)}}},
	"concat": {{attrs: ir.A("axis", 0), in: []zdOperand{zdF(2, 3), zdF(1, 3), zdF(2, 3)}},
		{attrs: ir.A("axis", -1), in: []zdOperand{zdI(2, 1)}}},
	"split": {{attrs: ir.A("sections", []int{1, 2}, "axis", 1), in: []zdOperand{zdF(2, 3)}},
		{attrs: ir.A("sections", []int{2, 0, 1}, "axis", 0), in: []zdOperand{zdF(3, 2)}}},
	"reshape_like": {{in: []zdOperand{zdF(2, 3), zdF(3, 2)}}},
	"split_like":   {{attrs: ir.A("axis", 1, "sections", []int{1, -1}), in: []zdOperand{zdF(2, 3), zdF(2, 2)}}},
	"slice": {{attrs: ir.A("axes", []int{1}, "starts", []int{0}, "ends", []int{2}), in: []zdOperand{zdF(2, 3)}},
		{attrs: ir.A("axes", []int{0, 1}, "starts", []int{3, 0}, "ends", []int{0, 3}, "strides", []int{-2, 2}), in: []zdOperand{zdF(4, 3)}}},
	"slice_grad": {{attrs: ir.A("axes", []int{1}, "starts", []int{0}, "ends", []int{2}, "shape", []int{4, 3}), in: []zdOperand{zdF(4, 2)}, sizes: []string{"shape"}},
		{attrs: ir.A("axes", []int{0}, "starts", []int{-1}, "ends", []int{-5}, "strides", []int{-2}), in: []zdOperand{zdF(2, 3), zdF(4, 3)}}},

	// Indexing.
	"gather": {{attrs: ir.A("axis", 0), in: []zdOperand{zdF(3, 4), zdIdx(3, 2)}, dataDep: true},
		{attrs: ir.A("axis", 1), in: []zdOperand{zdF(2, 3), zdIdx(3, 2, 2)}, dataDep: true}},
	"one_hot": {{attrs: ir.A("depth", 4), in: []zdOperand{zdIdx(4, 3)}, dataDep: true}, {attrs: ir.A("depth", 3, "dtype", ir.I32), in: []zdOperand{zdIdx(3, 2, 5)}, dataDep: true, sizes: []string{"depth"}}},
	"topk": {{attrs: ir.A("k", 2, "axis", 1), in: []zdOperand{zdF(2, 3)}},
		{attrs: ir.A("k", 1, "axis", 0), in: []zdOperand{zdI(3)}}},
	"gather_grad": {{attrs: ir.A("axis", 0, "size", 3), in: []zdOperand{zdF(2, 4), zdIdx(3, 2)}, dataDep: true, sizes: []string{"size"}},
		{attrs: ir.A("axis", 1), in: []zdOperand{zdF(2, 2, 2), zdIdx(3, 2, 2), zdF(2, 3)}, dataDep: true}},
	"take_along_axis": {{attrs: ir.A("axis", 1), in: []zdOperand{zdF(2, 3), zdIdx(3, 2, 2)}, dataDep: true}},
	"scatter_elements": {{attrs: ir.A("axis", 1), in: []zdOperand{zdF(2, 3), zdIdx(3, 2, 2), zdF(2, 2)}, dataDep: true},
		{attrs: ir.A("axis", 0, "reduction", "add"), in: []zdOperand{zdF(3, 2), zdIdx(3, 2, 2), zdF(2, 2)}, dataDep: true}},
	"scatter_elements_grad": {{attrs: ir.A("axis", 1), in: []zdOperand{zdF(2, 3), zdIdx(3, 2, 2)}, dataDep: true}},
	"gather_nd":             {{in: []zdOperand{zdF(3, 4), zdIdx(3, 2, 1)}, dataDep: true}},
	"scatter_nd":            {{in: []zdOperand{zdF(3, 4), zdIdx(3, 2, 1), zdF(2, 4)}, dataDep: true}},
	"scatter_nd_grad":       {{in: []zdOperand{zdF(3, 4), zdIdx(3, 2, 1)}, dataDep: true}},
	"nonzero":               {{in: []zdOperand{zdF(2, 3)}}},
	"check":                 {{attrs: ir.A("message", "refused"), in: []zdOperand{zdB(2, 3)}, build: zdCheck, dataDep: true}},
	"unique":                {{in: []zdOperand{zdF(2, 3)}}, {attrs: ir.A("axis", 1, "sorted", false), in: []zdOperand{zdI(2, 3)}}},
	"non_max_suppression": {{attrs: ir.A("center_point_box", true), in: []zdOperand{zdF(2, 3, 4), zdF(2, 2, 3), zdOne(ir.I64), zdOne(ir.F32)}},
		{in: []zdOperand{zdF(1, 4, 4), zdF(1, 1, 4), zdOne(ir.I64, 1), zdOne(ir.F32, 1), zdF()}, dataDep: true}},
	// Shapes, axes and sizes read at run time: their values decide
	// whether a run works (dataDep).
	"shape":             {{in: []zdOperand{zdF(2, 3)}}},
	"size":              {{in: []zdOperand{zdF(2, 3)}}},
	"reshape_dyn":       {{in: []zdOperand{zdF(1, 1), zdOne(ir.I64, 2)}, dataDep: true}},
	"squeeze_dyn":       {{in: []zdOperand{zdF(2, 1, 3), zdOne(ir.I64, 1)}, dataDep: true}},
	"unsqueeze_dyn":     {{in: []zdOperand{zdF(2, 3), zdOne(ir.I64, 1)}, dataDep: true}},
	"expand_dyn":        {{in: []zdOperand{zdF(2, 1), zdOne(ir.I64, 2)}, dataDep: true}},
	"constant_of_shape": {{attrs: ir.A("value", 1.5, "dtype", ir.F32), in: []zdOperand{zdOne(ir.I64, 2)}, dataDep: true}},
	"range":             {{in: []zdOperand{zdIdx(1), zdOne(ir.I64), zdOne(ir.I64)}, dataDep: true}},
	"slice_dyn":         {{in: []zdOperand{zdF(3, 4), zdIdx(1, 1), zdOne(ir.I64, 1)}, dataDep: true}},
	"slice_dyn_grad":    {{attrs: ir.A("shape", []int{3, 4}), in: []zdOperand{zdF(1, 4), zdIdx(1, 1), zdOne(ir.I64, 1)}, dataDep: true, sizes: []string{"shape"}}},
	"split_dyn":         {{attrs: ir.A("axis", 0), in: []zdOperand{zdF(2, 3), zdOne(ir.I64, 2)}, dataDep: true}},
	"tile":              {{attrs: ir.A("repeats", []int{2, 1}), in: []zdOperand{zdF(2, 3)}}, {in: []zdOperand{zdF(2, 3), zdOne(ir.I64, 2)}, dataDep: true}},
	"tile_grad":         {{attrs: ir.A("shape", []int{2, 3}), in: []zdOperand{zdF(4, 3)}, dataDep: true, sizes: []string{"shape"}}},
	"reduce_sum_dyn":    {{in: []zdOperand{zdF(2, 3), zdOne(ir.I64, 1)}, dataDep: true}},
	"reduce_mean_dyn":   {{in: []zdOperand{zdF(2, 3), zdOne(ir.I64, 1)}, dataDep: true}},
	"reduce_max_dyn":    {{in: []zdOperand{zdF(2, 3), zdOne(ir.I64, 1)}, dataDep: true}},
	"reduce_min_dyn":    {{in: []zdOperand{zdF(2, 3), zdOne(ir.I64, 1)}, dataDep: true}},
	"cumsum": {{attrs: ir.A("axis", 1), in: []zdOperand{zdF(2, 3)}},
		{attrs: ir.A("axis", 0, "exclusive", true, "reverse", true), in: []zdOperand{zdI(4)}}},
	"scatter_add_along_axis": {{attrs: ir.A("axis", 1, "size", 3), in: []zdOperand{zdF(2, 2), zdIdx(3, 2, 2)}, dataDep: true, sizes: []string{"size"}},
		{attrs: ir.A("axis", 0), in: []zdOperand{zdF(2, 2), zdIdx(3, 2, 2), zdF(3, 2)}, dataDep: true}},

	// Neural-network ops.
	"matmul": {{in: []zdOperand{zdF(2, 3), zdF(3, 4)}},
		{attrs: ir.A("transpose_x", true, "transpose_y", true), in: []zdOperand{zdD(5, 3, 2), zdD(4, 3)}},
		{in: []zdOperand{zdF(3), zdF(2, 3, 2)}}},
	"conv2d": {{attrs: zdConvAttrs, in: []zdOperand{zdF(1, 2, 11, 10), zdF(3, 2, 4, 5)}},
		{attrs: ir.A("strides", []int{2, 1}, "paddings", []int{1, 0}, "dilations", []int{1, 2}, "groups", 2), in: []zdOperand{zdF(2, 4, 5, 5), zdF(4, 2, 3, 2)}},
		{attrs: ir.A("paddings", 1, "groups", 2), in: []zdOperand{zdD(1, 2, 3, 3), zdD(2, 1, 1, 1)}}},
	"conv2d_fused": {{attrs: zdConvAttrs.With("bias", ir.Bool(true)).With("residual", ir.Bool(true)).With("activation", ir.Str("relu")),
		in: []zdOperand{zdF(1, 2, 11, 10), zdF(3, 2, 4, 5), zdF(3), zdF(1, 3, 8, 6)}},
		{attrs: ir.A("strides", 2, "paddings", 1, "groups", 2, "bias", true, "activation", "clip", "min", -0.5, "max", 0.5), in: []zdOperand{zdF(2, 4, 5, 5), zdF(4, 2, 3, 2), zdF(4)}},
		{attrs: ir.A("paddings", 1, "groups", 2, "residual", true, "activation", "swish"), in: []zdOperand{zdD(1, 2, 3, 3), zdD(2, 1, 1, 1), zdD(1, 2, 5, 5)}},
		{attrs: ir.A("paddings", 1, "bias", true, "activation", "relu", "pool", "max2x2"), in: []zdOperand{zdF(1, 2, 4, 4), zdF(3, 2, 2, 2), zdF(3)}}},
	"conv2d_nchwc": {{attrs: zdConvAttrs.With("bias", ir.Bool(true)).With("residual", ir.Bool(true)).With("activation", ir.Str("relu")),
		in: []zdOperand{zdF(1, 1, 11, 10, 16), zdF(16, 16, 4, 5), zdF(16), zdF(1, 1, 8, 6, 16)}},
		{attrs: ir.A("strides", 2, "paddings", 1, "bias", true, "block", 8), in: []zdOperand{zdF(2, 3, 5, 5), zdF(32, 3, 3, 2), zdF(32)}}},
	"reorder_nchwc":          {{attrs: ir.A("block", 16), in: []zdOperand{zdF(2, 32, 3, 4)}}},
	"reorder_nchw":           {{in: []zdOperand{zdF(2, 2, 3, 4, 16)}}, {in: []zdOperand{zdF(1, 3, 2, 2, 8)}}},
	"max_pool2d_nchwc":       {{attrs: ir.A("kernel_size", []int{3, 5}, "strides", []int{2, 1}, "paddings", []int{1, 2}), in: []zdOperand{zdF(1, 1, 8, 10, 16)}}},
	"upsample_nearest_nchwc": {{attrs: ir.A("factors", []int{2, 3}), in: []zdOperand{zdF(2, 1, 2, 3, 16)}}},
	"matmul_fused": {{attrs: ir.A("bias", true, "residual", true, "activation", "relu"), in: []zdOperand{zdF(2, 3), zdF(3, 4), zdF(4), zdF(2, 4)}},
		{attrs: ir.A("transpose_x", true, "transpose_y", true, "bias", true, "activation", "sigmoid"), in: []zdOperand{zdD(5, 3, 2), zdD(4, 3), zdD(4)}}},
	"conv2d_grad_input": {{attrs: zdConvAttrs.With("input_size", ir.List{ir.Int(11), ir.Int(10)}), in: []zdOperand{zdF(1, 3, 8, 6), zdF(3, 2, 4, 5)}, sizes: []string{"input_size"}},
		{attrs: ir.A("strides", 2, "paddings", 1, "groups", 2), in: []zdOperand{zdF(2, 4, 3, 2), zdF(4, 2, 3, 3), zdF(2, 4, 5, 4)}}},
	"conv2d_grad_filter_acc": {{attrs: zdConvAttrs, in: []zdOperand{zdF(3, 2, 4, 5), zdF(1, 3, 8, 6), zdF(1, 2, 11, 10)}}},
	"reduce_sum_to_acc":      {{in: []zdOperand{zdF(1, 3), zdF(4, 2, 3)}}, {in: []zdOperand{zdD(3), zdD(5, 3)}}},
	// Batch norm in pieces: states of 33 and 65 f64 per channel; the
	// count a finish reads is a value (one per channel is refused), 32
	// in the example (i%33 puts 32 in every channel's last element).
	"batch_norm_sum_acc":      {{in: []zdOperand{zdD(3, 33), zdF(2, 3, 4, 5)}}},
	"batch_norm_sqdev_acc":    {{in: []zdOperand{zdD(3, 33), zdD(2, 3, 5), zdD(3, 33)}}},
	"batch_norm_finish":       {{attrs: ir.A("epsilon", 1e-5, "momentum", 0.1), in: []zdOperand{{t: ir.TensorOf(ir.F64, 3, 33), fill: "idx:33"}, zdD(3, 33), zdF(3), zdF(3), zdF(3), zdPos(3)}, dataDep: true}},
	"batch_norm_apply":        {{in: []zdOperand{zdF(2, 3, 4, 5), zdD(2, 3)}}},
	"batch_norm_grad_sum_acc": {{in: []zdOperand{zdD(3, 65), zdF(2, 3, 4, 5), zdF(2, 3, 4, 5), zdF(3)}}},
	"batch_norm_grad_finish":  {{in: []zdOperand{zdD(3, 65), zdPos(3)}}},
	"batch_norm_grad_x":       {{in: []zdOperand{zdF(2, 3, 4, 5), zdF(2, 3, 4, 5), zdF(3), zdF(3), zdPos(3), zdD(3, 65)}}},
	"conv2d_grad_filter": {{attrs: zdConvAttrs.With("filter_size", ir.List{ir.Int(4), ir.Int(5)}), in: []zdOperand{zdF(1, 3, 8, 6), zdF(1, 2, 11, 10)}, sizes: []string{"filter_size"}},
		{attrs: ir.A("strides", 2, "paddings", 1, "groups", 2), in: []zdOperand{zdF(2, 4, 3, 2), zdF(2, 4, 5, 4), zdF(4, 2, 3, 3)}}},
	"max_pool2d": {{attrs: ir.A("kernel_size", []int{2, 5}), in: []zdOperand{zdF(1, 3, 8, 10)}},
		{attrs: ir.A("kernel_size", []int{3, 2}, "strides", []int{1, 2}, "paddings", []int{1, 1}), in: []zdOperand{zdD(2, 1, 3, 5)}}},
	"max_pool2d_values": {{attrs: ir.A("kernel_size", []int{3, 5}, "strides", []int{2, 1}, "paddings", []int{1, 2}), in: []zdOperand{zdF(1, 3, 8, 10)}},
		{attrs: ir.A("kernel_size", []int{3, 2}, "strides", []int{1, 2}, "paddings", []int{1, 1}), in: []zdOperand{zdD(2, 1, 3, 5)}}},
	"avg_pool2d": {{attrs: ir.A("kernel_size", []int{2, 5}), in: []zdOperand{zdF(1, 3, 8, 10)}},
		{attrs: ir.A("kernel_size", []int{3, 2}, "strides", []int{1, 2}, "paddings", []int{1, 1}), in: []zdOperand{zdD(2, 1, 3, 5)}}},
	"max_pool": {{attrs: ir.A("kernel_size", []int{2, 3}, "pads", []int{1, 0, 0, 2}, "ceil_mode", true), in: []zdOperand{zdF(1, 2, 5, 6)}},
		{attrs: ir.A("kernel_size", []int{3}, "dilations", []int{2}), in: []zdOperand{zdD(2, 1, 9)}}},
	"avg_pool":      {{attrs: ir.A("kernel_size", []int{2, 2, 2}, "count_include_pad", true, "pads", []int{1, 1, 1, 0, 0, 0}), in: []zdOperand{zdF(1, 1, 3, 4, 4)}}},
	"max_pool_grad": {{attrs: ir.A("input_size", []int{5, 6}), in: []zdOperand{zdF(1, 2, 3, 3), zdIdx(30, 1, 2, 3, 3)}, dataDep: true, sizes: []string{"input_size"}}},
	"avg_pool_grad": {{attrs: ir.A("kernel_size", []int{2, 2}, "input_size", []int{4, 4}), in: []zdOperand{zdF(1, 2, 2, 2)}, sizes: []string{"input_size"}}},
	"pad": {{attrs: ir.A("pads", []int{1, 0, 2, 1}), in: []zdOperand{zdF(2, 3)}},
		{attrs: ir.A("pads", []int{1, 2, 1, 2}, "mode", "reflect"), in: []zdOperand{zdF(3, 4)}},
		{attrs: ir.A("pads", []int{0, 1, -1, 1}, "mode", "edge"), in: []zdOperand{zdI(3, 4)}}},
	"pad_grad": {{attrs: ir.A("pads", []int{1, 1, 1, 1}, "mode", "reflect"), in: []zdOperand{zdF(5, 6)}}},
	"resize": {{attrs: ir.A("axes", []int{2, 3}, "sizes", []int{4, 6}, "scales", []float64{2, 2}), in: []zdOperand{zdF(1, 2, 2, 3)}},
		{attrs: ir.A("axes", []int{1}, "sizes", []int{5}, "scales", []float64{2.5}, "mode", "linear"), in: []zdOperand{zdD(2, 2)}}},
	"resize_grad": {{attrs: ir.A("axes", []int{2, 3}, "sizes", []int{4, 6}, "scales", []float64{2, 2}, "input_size", []int{2, 3}), in: []zdOperand{zdF(1, 2, 4, 6)}, sizes: []string{"input_size", "sizes"}}},
	"resize_dyn": {{attrs: ir.A("axes", []int{2, 3}, "by", "scales", "mode", "linear"), in: []zdOperand{zdF(1, 2, 2, 3), zdPos(2)}},
		{attrs: ir.A("axes", []int{1}, "by", "sizes", "mode", "cubic"), in: []zdOperand{zdD(2, 3), zdIdx(4, 1)}, dataDep: true}},
	"resize_dyn_grad": {{attrs: ir.A("axes", []int{2, 3}, "by", "scales"), in: []zdOperand{zdF(1, 2, 2, 3), zdF(1, 2, 2, 3), zdOne(ir.F32, 2)}, dataDep: true}},
	"pad_dyn": {{in: []zdOperand{zdF(2, 3), zdIdx(2, 4)}, dataDep: true},
		{attrs: ir.A("mode", "reflect", "axes", []int{1}), in: []zdOperand{zdF(3, 4), zdOne(ir.I64, 2)}, dataDep: true},
		{in: []zdOperand{zdI(2, 3), zdIdx(3, 4), zdI()}, dataDep: true}},
	"pad_dyn_grad":     {{attrs: ir.A("mode", "edge"), in: []zdOperand{zdF(5, 6), zdOne(ir.I64, 4)}, dataDep: true}},
	"grid_sample":      {{in: []zdOperand{zdF(1, 2, 4, 5), zdF(1, 3, 3, 2)}}},
	"grid_sample_grad": {{in: []zdOperand{zdF(1, 2, 3, 3), zdF(1, 2, 4, 5), zdF(1, 3, 3, 2)}}},
	"max_pool2d_grad": {{attrs: ir.A("input_size", []int{8, 10}), in: []zdOperand{zdF(1, 3, 4, 2), zdIdx(80, 1, 3, 4, 2)}, dataDep: true, sizes: []string{"input_size"}},
		{in: []zdOperand{zdF(1, 2, 2, 2), zdIdx(12, 1, 2, 2, 2), zdF(1, 2, 3, 4)}, dataDep: true}},
	"avg_pool2d_grad": {{attrs: ir.A("kernel_size", []int{2, 5}, "input_size", []int{8, 10}), in: []zdOperand{zdF(1, 3, 4, 2)}, sizes: []string{"input_size"}},
		{attrs: ir.A("kernel_size", []int{3, 2}, "strides", []int{1, 2}, "paddings", []int{1, 1}), in: []zdOperand{zdD(2, 1, 3, 3), zdD(2, 1, 3, 5)}}},
	"max_pool2d_grad_x": {{attrs: ir.A("kernel_size", []int{2, 5}), in: []zdOperand{zdF(1, 3, 4, 2), zdF(1, 3, 8, 10)}},
		{attrs: ir.A("kernel_size", []int{3, 2}, "strides", []int{1, 2}, "paddings", []int{1, 1}), in: []zdOperand{zdD(2, 1, 3, 3), zdD(2, 1, 3, 5)}}},
	"batch_norm": {{attrs: ir.A("training", true, "epsilon", 1e-5, "momentum", 0.1), in: []zdOperand{zdF(2, 3, 4, 5), zdF(3), zdF(3), zdF(3), zdPos(3)}},
		{attrs: ir.A("training", true, "sync", true), in: []zdOperand{zdF(2, 3, 4), zdF(3), zdF(3), zdF(3), zdPos(3)}},
		{attrs: ir.A("training", false), in: []zdOperand{zdF(4, 3), zdF(3), zdF(3), zdF(3), zdPos(3)}}},
	"batch_norm_grad": {{attrs: ir.A("training", true), in: []zdOperand{zdF(2, 3, 4, 5), zdF(2, 3, 4, 5), zdF(3), zdF(3), zdPos(3)}},
		{attrs: ir.A("training", true, "sync", true), in: []zdOperand{zdF(2, 3, 4), zdF(2, 3, 4), zdF(3), zdF(3), zdPos(3)}},
		{attrs: ir.A("training", false), in: []zdOperand{zdF(4, 3), zdF(4, 3), zdF(3), zdF(3), zdPos(3)}}},
	"batch_norm_silu": {{attrs: ir.A("epsilon", 1e-5, "momentum", 0.1), in: []zdOperand{zdF(2, 3, 4, 5), zdF(3), zdF(3), zdF(3), zdPos(3)}},
		{in: []zdOperand{zdD(2, 3, 4), zdD(3), zdD(3), zdD(3), zdD(3)}}},
	"batch_norm_silu_grad": {{in: []zdOperand{zdF(2, 3, 4, 5), zdF(2, 3, 4, 5), zdF(3), zdF(3), zdD(3), {t: ir.TensorOf(ir.F64, 3), fill: "pos"}}}},
	"layer_norm": {{attrs: ir.A("begin_norm_axis", 1, "epsilon", 1e-5), in: []zdOperand{zdF(2, 3, 4), zdF(3, 4), zdF(3, 4)}},
		{in: []zdOperand{zdD(2, 3), zdD(3), zdD(3)}}},
	"layer_norm_grad":  {{attrs: ir.A("begin_norm_axis", 1), in: []zdOperand{zdF(2, 3), zdF(2, 3), zdF(3), zdF(2), zdPos(2)}}},
	"softmax":          {{attrs: ir.A("axis", 1), in: []zdOperand{zdF(2, 3)}}, {in: []zdOperand{zdD(3)}}},
	"log_softmax":      {{attrs: ir.A("axis", 0), in: []zdOperand{zdF(2, 3)}}},
	"softmax_f32":      {{attrs: ir.A("axis", 1), in: []zdOperand{zdF(2, 3)}}, {in: []zdOperand{zdF(4, 17)}}},
	"softmax_grad":     {{attrs: ir.A("axis", 1), in: []zdOperand{zdF(2, 3), zdF(2, 3)}}},
	"log_softmax_grad": {{attrs: ir.A("axis", -1), in: []zdOperand{zdF(2, 3), zdF(2, 3)}}},
	"cross_entropy_with_softmax": {{attrs: ir.A("axis", -1), in: []zdOperand{zdF(2, 3), zdIdx(3, 2)}, dataDep: true},
		{attrs: ir.A("axis", 1, "ignore_index", 1), in: []zdOperand{zdD(2, 3, 2), zdIdx(3, 2, 2)}, dataDep: true}},
	"cross_entropy_with_softmax_grad":  {{attrs: ir.A("axis", -1), in: []zdOperand{zdF(2, 3), zdIdx(3, 2), zdF(2)}, dataDep: true}},
	"binary_cross_entropy_with_logits": {{in: []zdOperand{zdF(2, 3), zdF(2, 3)}}},

	// Collectives, on a job of one in-process rank (zdRun's Comm).
	"all_reduce":       {{attrs: ir.A("mean", true), in: []zdOperand{zdF(2, 3)}}, {in: []zdOperand{zdD(4)}}},
	"all_reduce_start": {{in: []zdOperand{zdF(2, 3), zdF(4)}, params: true, build: zdBucket}},
	"all_reduce_wait":  {{attrs: ir.A("mean", true), in: []zdOperand{zdD(2, 3)}, params: true, build: zdBucket}},

	// In-place updates of feeds.
	"sgd_update":      {{attrs: ir.A("weight_decay", 0.1), in: []zdOperand{zdF(2, 3), zdF(2, 3), zdOne(ir.F32)}}},
	"momentum_update": {{attrs: ir.A("momentum", 0.9, "nesterov", true), in: []zdOperand{zdF(2, 3), zdF(2, 3), zdF(2, 3), zdOne(ir.F32)}}},
	"adam_update":     {{attrs: ir.A("weight_decay", 0.01, "decoupled", true), in: []zdOperand{zdF(2, 3), zdF(2, 3), zdF(2, 3), zdPos(2, 3), zdOne(ir.F32), zdOne(ir.I64)}}},
	"assign_into":     {{in: []zdOperand{zdF(2, 3), zdF(2, 3)}}},
	"increment":       {{attrs: ir.A("by", 2), in: []zdOperand{zdI(2)}}},
}

var zdConvAttrs = ir.A("strides", []int{1, 1}, "paddings", []int{0, 0}, "dilations", []int{1, 1}, "groups", 1)

func zdBinary(mk func(...int) zdOperand) []zdCase {
	return []zdCase{{in: []zdOperand{mk(2, 3), mk(3)}}, {in: []zdOperand{mk(2, 1), mk(1, 3)}}}
}

func zdUnary(mk func(...int) zdOperand) []zdCase { return []zdCase{{in: []zdOperand{mk(2, 3)}}} }

func zdReductions(mk func(...int) zdOperand) []zdCase {
	return []zdCase{{attrs: ir.A("axes", []int{1}, "keepdim", false), in: []zdOperand{mk(2, 3)}},
		{attrs: ir.A("axes", []int{}, "keepdim", true), in: []zdOperand{mk(2, 3)}},
		{attrs: ir.A("axes", []int{0, 2}), in: []zdOperand{mk(2, 3, 4)}}}
}

func zdIdentity(_ *ir.Builder, in []*ir.Value, _ ir.Attrs) []*ir.Value { return in }

// zdCheck appends a check of the operand and fetches it.
func zdCheck(b *ir.Builder, in []*ir.Value, attrs ir.Attrs) []*ir.Value {
	b.Op("check", attrs, in...)
	return in
}

// zdStackRoundTrip pushes x twice onto a new stack and pops once.
func zdStackRoundTrip(b *ir.Builder, in []*ir.Value, _ ir.Attrs) []*ir.Value {
	s := ops.StackNew(b, in[0].Type())
	s = ops.StackPush(b, s, in[0])
	s = ops.StackPush(b, s, ops.Neg(b, in[0]))
	_, top := ops.StackPop(b, s)
	return []*ir.Value{top}
}

// zdSeqRoundTrip puts x in a sequence, inserts, erases and splits, and
// reads the sequence back with seq_at, seq_length and concat_from_seq.
func zdSeqRoundTrip(b *ir.Builder, in []*ir.Value, _ ir.Attrs) []*ir.Value {
	x := in[0]
	s := ops.SeqConstruct(b, x, x)
	s = ops.SeqInsert(b, s, ops.Neg(b, x), ops.Full(b, ir.I64, 0))
	s = ops.SeqErase(b, s, ops.Full(b, ir.I64, -1))
	parts := ops.SplitToSeq(b, x, nil, 0, true)
	return []*ir.Value{
		ops.SeqAt(b, s, ops.Full(b, ir.I64, 1)),
		ops.SeqLength(b, s),
		ops.ConcatFromSeq(b, s, 0, false),
		ops.ConcatFromSeq(b, s, -1, true),
		ops.ConcatFromSeq(b, parts, 0, false),
	}
}

// zdDense is a constant attribute of type t with the given elements.
func zdDense(t ir.Type, elems ...float64) ir.Dense {
	d, err := ir.DenseOf(t, elems)
	if err != nil {
		panic(err)
	}
	return d
}

// zdVariant is one mutation of an example.
type zdVariant struct {
	what  string
	attrs ir.Attrs
	in    []zdOperand
}

// zdVariants lists the base example and its mutations (see the top of
// the file).
func zdVariants(c zdCase) []zdVariant {
	out := []zdVariant{{what: "base", attrs: c.attrs, in: c.in}}
	withDims := func(i int, dims []int) []zdOperand {
		in := slices.Clone(c.in)
		in[i].t = ir.TensorOf(in[i].t.DType, dims...)
		return in
	}
	for i, o := range c.in {
		for j, d := range o.t.Dims {
			if d == 0 {
				continue
			}
			dims := slices.Clone(o.t.Dims)
			dims[j] = 0
			out = append(out, zdVariant{fmt.Sprintf("operand %d dim %d = 0", i, j), c.attrs, withDims(i, dims)})
		}
		if o.t.Rank() > 1 {
			out = append(out, zdVariant{fmt.Sprintf("operand %d all dims 0", i), c.attrs, withDims(i, make([]int, o.t.Rank()))})
		}
	}
	// One size replaced everywhere: the operands stay consistent, so these
	// reach the kernels with empty (or size-1) dims.
	out = append(out, zdResized(c, "")...)
	// The same at 8 times the sizes, where kernels split their work over
	// threads.
	big := zdMapSizes(c, func(d int) int {
		if d > 1 {
			return 8 * d
		}
		return d
	})
	out = append(out, zdVariant{"sizes x8", big.attrs, big.in})
	out = append(out, zdResized(big, "sizes x8, ")...)
	var emptied []zdVariant // the "every s -> 0" variants
	for _, v := range out {
		if strings.HasSuffix(v.what, "-> 0") {
			emptied = append(emptied, v)
		}
	}
	for _, a := range c.attrs {
		for _, v := range zdDegenerate(a.Value) {
			out = append(out, zdVariant{fmt.Sprintf("%s:%v", a.Name, v), c.attrs.With(a.Name, v), c.in})
			// Degenerate windows, strides, paddings, groups, axes, ... also
			// meet empty operands.
			for _, e := range emptied {
				out = append(out, zdVariant{fmt.Sprintf("%s:%v, %s", a.Name, v, e.what), e.attrs.With(a.Name, v), e.in})
			}
		}
	}
	return out
}

// zdResized lists, for each size of c's operands, the variants with that
// size replaced by 0, and by 1, in every operand and size attribute.
func zdResized(c zdCase, prefix string) []zdVariant {
	var sizes []int
	for _, o := range c.in {
		for _, d := range o.t.Dims {
			if d > 0 && !slices.Contains(sizes, d) {
				sizes = append(sizes, d)
			}
		}
	}
	slices.Sort(sizes)
	var out []zdVariant
	for _, size := range sizes {
		for _, to := range []int{0, 1} {
			if to == size {
				continue
			}
			r := zdMapSizes(c, func(d int) int {
				if d == size {
					return to
				}
				return d
			})
			out = append(out, zdVariant{fmt.Sprintf("%severy %d -> %d", prefix, size, to), r.attrs, r.in})
		}
	}
	return out
}

// zdMapSizes returns c with every operand dim and every int of its size
// attributes d replaced by f(d).
func zdMapSizes(c zdCase, f func(int) int) zdCase {
	c.in = slices.Clone(c.in)
	for i := range c.in {
		dims := slices.Clone(c.in[i].t.Dims)
		for j, d := range dims {
			dims[j] = f(d)
		}
		c.in[i].t = ir.TensorOf(c.in[i].t.DType, dims...)
	}
	for _, name := range c.sizes {
		switch a, _ := c.attrs.Get(name); a := a.(type) {
		case ir.Int:
			c.attrs = c.attrs.With(name, ir.Int(f(int(a))))
		case ir.List:
			l := slices.Clone(a)
			for i, e := range l {
				if v, ok := e.(ir.Int); ok {
					l[i] = ir.Int(f(int(v)))
				}
			}
			c.attrs = c.attrs.With(name, l)
		}
	}
	return c
}

// zdDegenerate lists degenerate values for an attribute value.
func zdDegenerate(v ir.Attr) []ir.Attr {
	var out []ir.Attr
	switch v := v.(type) {
	case ir.Int:
		for _, x := range []ir.Int{0, -1, -2, 100} {
			if x != v {
				out = append(out, x)
			}
		}
	case ir.Float:
		for _, x := range []ir.Float{0, -1, 1, 2, ir.Float(math.NaN()), ir.Float(math.Inf(1))} {
			if x != v {
				out = append(out, x)
			}
		}
	case ir.Bool:
		out = append(out, !v)
	case ir.List:
		if len(v) > 0 {
			if _, ok := v[0].(ir.Int); !ok {
				return nil
			}
		}
		out = append(out, ir.List{})
		for i := range v {
			for _, x := range []ir.Int{0, -1, 100} {
				if v[i] != x {
					l := slices.Clone(v)
					l[i] = x
					out = append(out, l)
				}
			}
		}
		if len(v) > 1 {
			out = append(out, v[:1], append(slices.Clone(v), ir.Int(1)))
		}
		// A single int where a list is expected.
		out = append(out, ir.Int(0))
	}
	return out
}

// zdOutcome is what one variant did.
type zdOutcome struct {
	verifyErr error // the builder or verifier rejected it
	runErr    error // it failed at run time
	types     []ir.Type
	results   [][]float64 // the results' elements, when it ran
	shapes    [][]int
}

// zdFeed makes the tensor for operand o on allocator a.
func zdFeed(t testing.TB, a *memory.Allocator, r *rand.Rand, o zdOperand) *tensor.Tensor {
	x := randTensor(t, a, r, tensor.DType(o.t.DType), o.t.Dims...)
	n := x.Len()
	switch {
	case o.fill == "pos":
		for i := range n {
			zdSet(x, i, 0.5+1.5*r.Float64())
		}
	case o.fill == "one":
		for i := range n {
			zdSet(x, i, 1)
		}
	case strings.HasPrefix(o.fill, "idx:"):
		var m int
		fmt.Sscanf(o.fill, "idx:%d", &m)
		for i := range n {
			zdSet(x, i, float64(i%m))
		}
	}
	return x
}

// zdRun builds the variant (with dynamic feeds when dynamic), runs it and
// checks what must hold whatever the outcome: no panic, the inferred
// result types, every byte released.
func zdRun(t *testing.T, name string, c zdCase, v zdVariant, dynamic bool) (out zdOutcome) {
	t.Helper()
	defer func() {
		if r := recover(); r != nil {
			t.Errorf("%s %s (dynamic %v): panic: %v", name, v.what, dynamic, r)
		}
	}()
	b := ir.NewBuilder(ir.NewProgram())
	vals := make([]*ir.Value, len(v.in))
	for i, o := range v.in {
		dims := o.t.Dims
		if dynamic {
			dims = make([]int, o.t.Rank())
			for j := range dims {
				dims[j] = ir.Dynamic
			}
		}
		if c.params {
			vals[i] = ops.Parameter(b, fmt.Sprintf("p%d", i), o.t.DType, o.t.Dims...)
		} else {
			vals[i] = ops.Data(b, fmt.Sprintf("x%d", i), o.t.DType, dims...)
		}
	}
	var res []*ir.Value
	if c.build != nil {
		res = c.build(b, vals, v.attrs)
	} else {
		res = b.Op(name, v.attrs, vals...).Results()
	}
	for i, r := range res {
		ops.Fetch(b, fmt.Sprintf("r%d", i), r)
	}
	prog, err := b.Finish()
	if err != nil {
		out.verifyErr = err
		return out
	}
	for _, r := range res {
		out.types = append(out.types, r.Type())
	}

	host := memory.New(memory.Options{ChunkSize: 1 << 12})
	a := memory.New(memory.Options{ChunkSize: 1 << 12})
	store := exec.NewStore()
	exe, err := exec.Compile(prog, exec.Options{Alloc: a, Store: store, Threads: 2, CheckLeaks: true, Comm: dist.Local(1)[0]})
	if err != nil {
		out.verifyErr = err
		return out
	}
	rng := rand.New(rand.NewPCG(1, 2))
	feeds := map[string]*tensor.Tensor{}
	for i, o := range v.in {
		x := zdFeed(t, host, rng, o)
		if c.params {
			store.Set(fmt.Sprintf("p%d", i), x)
		} else {
			feeds[fmt.Sprintf("x%d", i)] = x
		}
	}
	defer func() {
		for _, x := range feeds {
			x.Release()
		}
		store.Release()
		if n := host.Stats().Allocated.Current; n != 0 {
			t.Errorf("%s %s: %d bytes of feeds left", name, v.what, n)
		}
	}()
	runs := 2 // twice: the second run must find everything released
	if dynamic {
		runs = 1
	}
	for run := range runs {
		results, err := exe.Run(context.Background(), feeds)
		if got := a.Stats().Allocated.Current; err != nil && got != 0 {
			t.Errorf("%s %s (dynamic %v): %d bytes allocated after the failed run: %+v", name, v.what, dynamic, got, a.Live())
		}
		var kp *exec.KernelPanicError
		if errors.As(err, &kp) {
			t.Errorf("%s %s (dynamic %v): kernel panic: %v\n%s", name, v.what, dynamic, err, kp.Stack)
			return out
		}
		if err != nil {
			out.runErr = err
			return out
		}
		if run == 0 {
			for i, typ := range out.types {
				r := results[fmt.Sprintf("r%d", i)]
				if r.IsStack() || ir.DType(r.DType()) != typ.DType || r.Rank() != typ.Rank() {
					t.Errorf("%s %s (dynamic %v): result %d is %v, inferred %s", name, v.what, dynamic, i, r.Type(), typ)
					continue
				}
				for j, d := range typ.Dims {
					if d != ir.Dynamic && d != r.Shape()[j] {
						t.Errorf("%s %s (dynamic %v): result %d is %v, inferred %s", name, v.what, dynamic, i, r.Type(), typ)
						break
					}
				}
				vals := make([]float64, r.Len())
				for k := range vals {
					vals[k] = r.Float64At(k)
				}
				out.results = append(out.results, vals)
				out.shapes = append(out.shapes, slices.Clone(r.Shape()))
			}
		}
		results.Release()
		if got := a.Stats().Allocated.Current; got != 0 {
			t.Errorf("%s %s (dynamic %v): %d bytes allocated after releasing the results: %+v", name, v.what, dynamic, got, a.Live())
		}
	}
	return out
}

// TestZeroSizeAndDegenerateOperands is the property test over the catalog.
func TestZeroSizeAndDegenerateOperands(t *testing.T) {
	var names []string
	for _, n := range ops.Names() {
		if !strings.HasPrefix(n, "test_") {
			names = append(names, n)
		}
	}
	for _, n := range names {
		if len(zdCases[n]) == 0 {
			t.Errorf("op %q has no example in zdCases: add one, so that the zero-size property covers it", n)
		}
	}
	var stats struct{ examples, variants, rejected, ran, runErrs int }
	report := map[string][]string{}
	for _, name := range names {
		for ci, c := range zdCases[name] {
			stats.examples++
			for vi, v := range zdVariants(c) {
				stats.variants++
				st := zdRun(t, name, c, v, false)
				if vi == 0 && (st.verifyErr != nil || st.runErr != nil) {
					t.Errorf("%s example %d: the base case must run: verify %v, run %v", name, ci, st.verifyErr, st.runErr)
					continue
				}
				switch {
				case st.verifyErr != nil:
					stats.rejected++
					report[name] = append(report[name], fmt.Sprintf("  %-28s rejected: %v", v.what, st.verifyErr))
				case st.runErr != nil:
					stats.runErrs++
					report[name] = append(report[name], fmt.Sprintf("  %-28s RUN ERROR: %v", v.what, st.runErr))
					if !c.dataDep {
						t.Errorf("%s example %d, %s: verified, then failed at run time: %v (Infer should reject it)", name, ci, v.what, st.runErr)
					}
				default:
					stats.ran++
					report[name] = append(report[name], fmt.Sprintf("  %-28s ran: %v", v.what, zdDescribe(st)))
					zdCheckValues(t, name, c, v, st)
				}
				if c.params {
					continue // parameters are static
				}
				dyn := zdRun(t, name, c, v, true)
				zdCompareDynamic(t, name, ci, c, v, st, dyn)
			}
		}
	}
	t.Logf("%d ops, %d examples, %d variants, each static and dynamic: %d rejected by the verifier, %d ran, %d failed at run time (value-dependent)",
		len(names), stats.examples, stats.variants, stats.rejected, stats.ran, stats.runErrs)
	if path := os.Getenv("GOPIR_ZERODIMS_REPORT"); path != "" {
		var sb strings.Builder
		keys := make([]string, 0, len(report))
		for k := range report {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			fmt.Fprintf(&sb, "%s\n%s\n", k, strings.Join(report[k], "\n"))
		}
		os.WriteFile(path, []byte(sb.String()), 0o644)
	}
}

// zdCompareDynamic checks that the program with dynamic feeds agrees with
// the static one.
func zdCompareDynamic(t *testing.T, name string, ci int, c zdCase, v zdVariant, st, dyn zdOutcome) {
	t.Helper()
	switch {
	case dyn.verifyErr != nil:
		// Fine when the static program was rejected too, or the op
		// needs static dims.
		if st.verifyErr == nil {
			t.Logf("%s example %d, %s: static ran but dynamic rejected: %v", name, ci, v.what, dyn.verifyErr)
		}
	case st.verifyErr != nil && dyn.runErr == nil:
		t.Errorf("%s example %d, %s: the static program is rejected (%v) but the dynamic one runs", name, ci, v.what, st.verifyErr)
	case st.verifyErr == nil && st.runErr == nil && dyn.runErr != nil && c.dataDep:
		// What only values decide (here, with static dims) may fail when
		// the dims are not known.
	case st.verifyErr == nil && st.runErr == nil && dyn.runErr != nil:
		t.Errorf("%s example %d, %s: the static program runs but the dynamic one fails: %v", name, ci, v.what, dyn.runErr)
	case name == "squeeze" && zdNoAxes(v.attrs):
		// squeeze without axes removes the dims statically known to be 1:
		// its result depends on the types by design.
	case st.verifyErr == nil && st.runErr == nil:
		for i := range st.shapes {
			if i < len(dyn.shapes) && !slices.Equal(st.shapes[i], dyn.shapes[i]) {
				t.Errorf("%s example %d, %s: result %d has shape %v with static feeds, %v with dynamic ones", name, ci, v.what, i, st.shapes[i], dyn.shapes[i])
			}
		}
	}
}

func zdDescribe(st zdOutcome) string {
	var parts []string
	for i, typ := range st.types {
		s := typ.String()
		if i < len(st.results) && len(st.results[i]) > 0 && len(st.results[i]) <= 4 {
			s += fmt.Sprint(st.results[i])
		}
		parts = append(parts, s)
	}
	return strings.Join(parts, ", ")
}

// zdCheckValues checks the values of results computed from zero-size
// operands against what numpy and PyTorch give.
func zdCheckValues(t *testing.T, name string, c zdCase, v zdVariant, st zdOutcome) {
	t.Helper()
	empty := false
	for i, o := range v.in {
		reads, ok := zdReads[name]
		if o.t.NumElements() == 0 && (!ok || slices.Contains(reads, i)) {
			empty = true
		}
	}
	if !empty {
		return
	}
	want := zdExpect(name, c, v, st)
	if want == nil {
		return
	}
	for i, w := range want {
		if w == nil || i >= len(st.results) {
			continue
		}
		for k, g := range st.results[i] {
			if !(g == *w || math.Abs(g-*w) <= 1e-6*math.Abs(*w) || math.IsNaN(g) && math.IsNaN(*w)) {
				t.Errorf("%s %s: result %d element %d = %v, want %v (all: %v)", name, v.what, i, k, g, *w, st.results[i])
				break
			}
		}
	}
}

func zdVal(v float64) *float64 { return &v }

// zdReads lists, for ops with operands whose elements are never read
// (they give a shape or a size), the operands that are read.
var zdReads = map[string][]int{
	"gather_grad": {0, 1}, "scatter_add_along_axis": {0, 1}, "conv2d_grad_input": {0, 1},
	"conv2d_grad_filter": {0, 1}, "reduce_grad": {0}, "reduce_sum_to": {0}, "slice_grad": {0},
}

// zdExpect returns, per result, the value every element must have when an
// operand is empty, or nil where any value is fine.
func zdExpect(name string, c zdCase, v zdVariant, st zdOutcome) []*float64 {
	switch name {
	case "reduce_sum", "reduce_sum_to", "reduce_grad", "matmul", "conv2d", "conv2d_grad_input",
		"conv2d_grad_filter", "gather_grad", "scatter_add_along_axis", "slice_grad":
		// Sums over nothing, or gradients nothing flows into.
		return []*float64{zdVal(0)}
	case "reduce_mean":
		return []*float64{zdVal(math.NaN())}
	case "layer_norm":
		// Normalising nothing: mean 0, variance 0 (PyTorch gives an
		// inverse deviation of NaN here; gopir keeps batch_norm's rule).
		if v.in[1].t.NumElements() != 0 {
			return nil
		}
		return []*float64{nil, zdVal(0), zdVal(1 / math.Sqrt(zdFloatAttr(v.attrs, "epsilon", 1e-5)))}
	case "batch_norm", "batch_norm_silu":
		// No value per channel: the running statistics are kept, the saved
		// mean is 0 and the inverse deviation 1/√epsilon (documented).
		train, _ := v.attrs.Bool("training")
		if !v.attrs.Has("training") {
			train = true
		}
		if !train || v.in[1].t.NumElements() == 0 {
			return nil
		}
		return []*float64{nil, nil, nil, zdVal(0), zdVal(1 / math.Sqrt(zdFloatAttr(v.attrs, "epsilon", 1e-5)))}
	case "batch_norm_grad", "batch_norm_silu_grad", "layer_norm_grad":
		// dx is empty whenever an operand is; dscale and dbias sum nothing
		// unless scale is the empty one.
		if v.in[2].t.NumElements() == 0 || v.in[1].t.NumElements() != 0 && v.in[0].t.NumElements() != 0 {
			return nil
		}
		return []*float64{nil, zdVal(0), zdVal(0)}
	}
	return nil
}

// zdSet sets element i of x to v converted to x's dtype.
func zdSet(x *tensor.Tensor, i int, v float64) {
	switch x.DType() {
	case tensor.F32:
		x.F32()[i] = float32(v)
	case tensor.F64:
		x.F64()[i] = v
	case tensor.I32:
		x.I32()[i] = int32(v)
	case tensor.I64:
		x.I64()[i] = int64(v)
	case tensor.Bool:
		x.Bool()[i] = v != 0
	}
}

// zdNoAxes reports whether attrs has no axes, or an empty list.
func zdNoAxes(attrs ir.Attrs) bool {
	axes, _ := attrs.Ints("axes")
	return len(axes) == 0
}

// zdFloatAttr is the number attribute name, or def.
func zdFloatAttr(attrs ir.Attrs, name string, def float64) float64 {
	if !attrs.Has(name) {
		return def
	}
	f, _ := attrs.Float(name)
	return f
}
