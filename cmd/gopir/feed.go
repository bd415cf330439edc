package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"strings"

	"github.com/gopir/gopir/exec"
	"github.com/gopir/gopir/ir"
	"github.com/gopir/gopir/memory"
	"github.com/gopir/gopir/tensor"
)

// parseFeeds turns --feed NAME=VALUE flags into tensors, checked against
// the program's inputs: feeds of "data" ops on alloc, and values of
// "parameter" ops on the run's own allocator, placed in its store (they are
// persistable, so the run's statistics count them). VALUE is a JSON number
// or nested array, or @file.npy.
func parseFeeds(flags []string, x *exec.Executable, alloc *memory.Allocator) (map[string]*tensor.Tensor, error) {
	specs, params := x.Feeds(), x.Params()
	var paramFlags []string
	var dataFlags []string
	for _, f := range flags {
		name, _, _ := strings.Cut(f, "=")
		if _, isParam := findSpec(params, name); isParam {
			paramFlags = append(paramFlags, f)
		} else {
			dataFlags = append(dataFlags, f)
		}
	}
	values, err := parseValues(paramFlags, params, x.Allocator(), false)
	if err != nil {
		return nil, err
	}
	for name, t := range values {
		if _, ok := findSpec(params, name); ok {
			x.Store().Set(name, t)
		}
	}
	return parseValues(dataFlags, specs, alloc, true)
}

// parseValues parses NAME=VALUE flags for the inputs in specs; with all
// set, every spec must get a value.
func parseValues(flags []string, specs []exec.FeedSpec, alloc *memory.Allocator, all bool) (map[string]*tensor.Tensor, error) {
	feeds := map[string]*tensor.Tensor{}
	fail := func(err error) (map[string]*tensor.Tensor, error) {
		for _, t := range feeds {
			t.Release()
		}
		return nil, badInput(err)
	}
	for _, f := range flags {
		name, value, ok := strings.Cut(f, "=")
		if !ok || name == "" {
			return fail(fmt.Errorf("--feed %q: want NAME=VALUE", f))
		}
		if _, dup := feeds[name]; dup {
			return fail(fmt.Errorf("--feed %s: given twice", name))
		}
		spec, ok := findSpec(specs, name)
		if !ok {
			return fail(fmt.Errorf("--feed %s: the program has no input %q (inputs: %s)", name, name, specNames(specs)))
		}
		var t *tensor.Tensor
		var err error
		if path, isFile := strings.CutPrefix(value, "@"); isFile {
			t, err = readNpyFile(path, spec.Type, alloc)
		} else {
			t, err = parseJSONTensor(value, spec.Type.DType, alloc)
			if err == nil {
				if err = checkFeedType(t.DType(), t.Shape(), spec.Type); err != nil {
					t.Release()
				}
			}
		}
		if err != nil {
			return fail(fmt.Errorf("--feed %s: %w", name, err))
		}
		feeds[name] = t
	}
	for _, s := range specs {
		if _, ok := feeds[s.Name]; !ok && all {
			return fail(fmt.Errorf("missing --feed %s=VALUE: the program expects %s", s.Name, s.Type))
		}
	}
	return feeds, nil
}

func findSpec(specs []exec.FeedSpec, name string) (exec.FeedSpec, bool) {
	for _, s := range specs {
		if s.Name == name {
			return s, true
		}
	}
	return exec.FeedSpec{}, false
}

func specNames(specs []exec.FeedSpec) string {
	if len(specs) == 0 {
		return "none"
	}
	names := make([]string, len(specs))
	for i, s := range specs {
		names[i] = s.Name
	}
	return strings.Join(names, ", ")
}

// readNpyFile reads a .npy file for an input of type want. The header is
// checked against want, and against the size of the file, before the data
// is allocated: a 128-byte file that claims to hold 160 GB is bad input,
// not an allocation.
func readNpyFile(path string, want ir.Type, alloc *memory.Allocator) (*tensor.Tensor, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	h, err := tensor.ReadNpyHeader(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if err := checkFeedType(h.DType, h.Shape, want); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	t, err := h.ReadData(f, alloc)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return t, nil
}

// checkFeedType reports a value of dtype dt and shape that an input of
// type want cannot take.
func checkFeedType(dt tensor.DType, shape []int, want ir.Type) error {
	if got := ir.TensorOf(ir.DType(dt), shape...); !got.Refines(want) {
		return fmt.Errorf("the program expects %s, got %s", want, got)
	}
	return nil
}

// parseJSONTensor reads a JSON number, bool or rectangular nested array as a
// tensor of dtype dt.
func parseJSONTensor(s string, dt ir.DType, alloc *memory.Allocator) (*tensor.Tensor, error) {
	dec := json.NewDecoder(bytes.NewReader([]byte(s)))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, fmt.Errorf("value %q is not a JSON number or array: %v", s, err)
	}
	if dec.More() {
		return nil, fmt.Errorf("value %q has trailing data after the JSON value", s)
	}
	var shape []int
	for x := v; ; {
		arr, ok := x.([]any)
		if !ok {
			break
		}
		shape = append(shape, len(arr))
		if len(arr) == 0 {
			break
		}
		x = arr[0]
	}
	var flat []any
	if err := flatten(v, shape, 0, &flat); err != nil {
		return nil, err
	}
	t, err := tensor.New(alloc, tensor.DType(dt), shape...)
	if err != nil {
		return nil, err
	}
	for i, x := range flat {
		if err := setElement(t, i, x); err != nil {
			t.Release()
			return nil, fmt.Errorf("element %d: %w", i, err)
		}
	}
	return t, nil
}

func flatten(v any, shape []int, depth int, out *[]any) error {
	if depth == len(shape) {
		if _, isArr := v.([]any); isArr {
			return fmt.Errorf("array is not rectangular: too deep at depth %d", depth)
		}
		*out = append(*out, v)
		return nil
	}
	arr, ok := v.([]any)
	if !ok || len(arr) != shape[depth] {
		return fmt.Errorf("array is not rectangular: expected %d elements at depth %d", shape[depth], depth)
	}
	for _, e := range arr {
		if err := flatten(e, shape, depth+1, out); err != nil {
			return err
		}
	}
	return nil
}

func setElement(t *tensor.Tensor, i int, x any) error {
	if b, ok := x.(bool); ok {
		if t.DType() != tensor.Bool {
			return fmt.Errorf("got a bool for a %s input", ir.DType(t.DType()))
		}
		t.Bool()[i] = b
		return nil
	}
	n, ok := x.(json.Number)
	if !ok {
		return fmt.Errorf("got %v, want a number", x)
	}
	switch t.DType() {
	case tensor.F32, tensor.F64:
		f, err := n.Float64()
		if err != nil {
			return err
		}
		if t.DType() == tensor.F32 {
			if math.IsInf(float64(float32(f)), 0) {
				return fmt.Errorf("%s overflows f32", n)
			}
			t.F32()[i] = float32(f)
		} else {
			t.F64()[i] = f
		}
	case tensor.I32, tensor.I64:
		k, err := n.Int64()
		if err != nil {
			return fmt.Errorf("%s is not an integer", n)
		}
		if t.DType() == tensor.I32 {
			if k < math.MinInt32 || k > math.MaxInt32 {
				return fmt.Errorf("%s overflows i32", n)
			}
			t.I32()[i] = int32(k)
		} else {
			t.I64()[i] = k
		}
	case tensor.Bool:
		switch n.String() {
		case "0":
			t.Bool()[i] = false
		case "1":
			t.Bool()[i] = true
		default:
			return fmt.Errorf("%s is not a bool (want true, false, 0 or 1)", n)
		}
	}
	return nil
}
