package tensor_test

import (
	"testing"

	"github.com/gopir/gopir/tensor"
)

func TestDType(t *testing.T) {
	for _, tc := range []struct {
		dt   tensor.DType
		name string
		size int
	}{
		{tensor.F32, "f32", 4}, {tensor.F64, "f64", 8}, {tensor.I32, "i32", 4},
		{tensor.I64, "i64", 8}, {tensor.Bool, "i1", 1},
	} {
		if tc.dt.String() != tc.name || tc.dt.Size() != tc.size {
			t.Errorf("%d: String %q Size %d, want %q %d", tc.dt, tc.dt.String(), tc.dt.Size(), tc.name, tc.size)
		}
		if got, err := tensor.ParseDType(tc.name); err != nil || got != tc.dt {
			t.Errorf("ParseDType(%q) = %v, %v", tc.name, got, err)
		}
	}
	for _, bad := range []string{"", "bool", "f16", "invalid", "F32"} {
		if _, err := tensor.ParseDType(bad); err == nil {
			t.Errorf("ParseDType(%q) succeeded", bad)
		}
	}
	if tensor.Invalid.Size() != 0 || tensor.DType(42).String() != "dtype(42)" {
		t.Error("invalid dtypes")
	}
}
