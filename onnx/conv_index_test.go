package onnx_test

import (
	"strings"
	"testing"

	"github.com/gopir/gopir/onnx"
)

// TestIndexCases runs the edge cases of the indexing and loss converters
// that tools/onnx_index_cases.py writes (expected values from numpy): a
// case must pass, or be refused when its name starts with "unsupported_"
// (at import, or by its values at run time), or fail at run time when it starts with "runerror_" (an input the op
// cannot take, which must never give an answer), or fail to import when
// it starts with "malformed_" (never a panic). Unique and
// NonMaxSuppression cases come from the same tool.
func TestIndexCases(t *testing.T) {
	tests, err := onnx.ListTests("testdata/indexcases")
	if err != nil {
		t.Fatal(err)
	}
	if len(tests) < 80 {
		t.Fatalf("%d cases, want the 80-odd of tools/onnx_index_cases.py", len(tests))
	}
	for _, tc := range tests {
		o := onnx.RunTest(tc)
		want := onnx.Pass
		switch {
		case strings.HasPrefix(tc.Name, "unsupported_"):
			want = onnx.Unsupported
		case strings.HasPrefix(tc.Name, "runerror_"), strings.HasPrefix(tc.Name, "malformed_"):
			want = onnx.Error
		}
		if o.Status != want {
			t.Errorf("%s: %s, want %s: %s", tc.Name, o.Status, want, o.Detail)
			continue
		}
		if strings.HasPrefix(tc.Name, "runerror_") && !containsAny(o.Detail, "out of range", "at least 1") {
			t.Errorf("%s: failed for another reason than a bad input: %s", tc.Name, o.Detail)
		}
		t.Logf("%s: %s %s", tc.Name, o.Status, o.Detail)
	}
}

// containsAny reports whether s holds one of subs.
func containsAny(s string, subs ...string) bool {
	for _, sub := range subs {
		if strings.Contains(s, sub) {
			return true
		}
	}
	return false
}
