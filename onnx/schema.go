package onnx

import (
	_ "embed"
	"fmt"
	"strconv"
	"strings"

	"github.com/gopir/gopir/onnx/onnxpb"
)

// schemas.txt records the arity of every ONNX operator version, read from
// ONNX's own schemas by tools/onnx_schemas.py. The importer checks each
// node against it before converting, so that converters may count on the
// inputs and outputs ONNX requires.
//
//go:embed schemas.txt
var schemasText string

// schema is the arity of one version of an operator: each formal input
// and output is 'S' (required), 'O' (optional) or 'V' (variadic, with a
// minimum count).
type schema struct {
	since     int64
	in, out   string
	inV, outV int // minimum count of a trailing variadic parameter
}

// schemas maps "domain.Op" (just "Op" for the default domain) to its
// versions, oldest first.
var schemas = func() map[string][]schema {
	m := map[string][]schema{}
	for _, line := range strings.Split(schemasText, "\n") {
		f := strings.Fields(line)
		if len(f) != 5 || strings.HasPrefix(line, "#") {
			continue
		}
		key := f[1]
		if f[0] != "-" {
			key = f[0] + "." + f[1]
		}
		since, err := strconv.ParseInt(f[2], 10, 64)
		if err != nil {
			panic("onnx: schemas.txt: " + line)
		}
		s := schema{since: since}
		s.in, s.inV = parseArity(f[3])
		s.out, s.outV = parseArity(f[4])
		m[key] = append(m[key], s)
	}
	return m
}()

func parseArity(f string) (string, int) {
	if f == "-" {
		return "", 0
	}
	if i := strings.IndexByte(f, 'V'); i >= 0 {
		n, _ := strconv.Atoi(f[i+1:])
		return f[:i+1], n
	}
	return f, 0
}

// newestOpset is, per domain ("" for the default one), the newest opset
// the recorded schemas know: arities of newer opsets are not checked.
var newestOpset = func() map[string]int64 {
	m := map[string]int64{}
	for key, versions := range schemas {
		domain := ""
		if i := strings.LastIndexByte(key, '.'); i >= 0 {
			domain = key[:i]
		}
		for _, v := range versions {
			m[domain] = max(m[domain], v.since)
		}
	}
	return m
}()

// checkArity checks a node of type opType (domain-qualified outside the
// default domain) against the operator's version for the model's opset
// of its domain. Opsets newer than the recorded schemas are not checked
// (their operators may take more inputs); converters check what they use.
func checkArity(np *onnxpb.NodeProto, opType string, opset int64) error {
	versions, ok := schemas[opType]
	if !ok {
		return nil // not an ONNX operator: the converter lookup says so
	}
	domain := ""
	if i := strings.LastIndexByte(opType, '.'); i >= 0 {
		domain = opType[:i]
	}
	if opset > newestOpset[domain] {
		return nil
	}
	var s *schema
	for i := range versions {
		if versions[i].since <= opset {
			s = &versions[i]
		}
	}
	if s == nil {
		return fmt.Errorf("%s does not exist at opset %d (it came in opset %d)", opType, opset, versions[0].since)
	}
	if err := arity("input", np.GetInput(), s.in, s.inV); err != nil {
		return err
	}
	return arity("output", np.GetOutput(), s.out, s.outV)
}

// arity checks names (empty for an absent optional) against formal
// parameters spelled like "SOO" or "SV1".
func arity(what string, names []string, formal string, minVariadic int) error {
	variadic := strings.HasSuffix(formal, "V")
	fixed := len(formal)
	if variadic {
		fixed--
	}
	switch {
	case !variadic && len(names) > fixed:
		return fmt.Errorf("has %d %ss, the operator takes at most %d", len(names), what, fixed)
	case variadic && len(names) < fixed+minVariadic:
		return fmt.Errorf("has %d %ss, the operator takes at least %d", len(names), what, fixed+minVariadic)
	}
	for i := range fixed {
		if formal[i] != 'S' {
			continue
		}
		if i >= len(names) || names[i] == "" {
			return fmt.Errorf("%s %d is required", what, i)
		}
	}
	if variadic {
		for i := fixed; i < len(names); i++ {
			if names[i] == "" && what == "input" {
				return fmt.Errorf("%s %d (of a variadic list) is empty", what, i)
			}
		}
	}
	return nil
}
