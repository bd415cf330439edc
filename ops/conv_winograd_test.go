package ops

import (
	"strings"
	"testing"

	"github.com/gopir/gopir/ir"
)

func TestWinogradAttr(t *testing.T) {
	w3 := ir.TensorOf(ir.F32, 8, 4, 3, 3)
	for _, tc := range []struct {
		attrs ir.Attrs
		dt    ir.DType
		w     ir.Type
		want  bool
		err   string
	}{
		{ir.A(), ir.F32, w3, false, ""},
		{ir.A("winograd", false), ir.F32, w3, false, ""},
		{ir.A("winograd", true, "paddings", 1), ir.F32, w3, true, ""},
		{ir.A("winograd", true), ir.F64, w3, false, "takes f32"},
		{ir.A("winograd", true), ir.F32, ir.TensorOf(ir.F32, 8, 4, 5, 5), false, "3×3 filter"},
		{ir.A("winograd", true, "strides", 2), ir.F32, w3, false, "strides 1"},
		{ir.A("winograd", true, "dilations", 2), ir.F32, w3, false, "dilations 1"},
		{ir.A("winograd", true, "groups", 2), ir.F32, w3, false, "groups 1"},
		{ir.A("winograd", 1), ir.F32, w3, false, "winograd"},
	} {
		got, err := winogradAttr(tc.attrs, tc.dt, tc.w)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%v %s %s: err %v, want one saying %q", tc.attrs, tc.dt, tc.w, err, tc.err)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("%v %s %s: %v, %v; want %v", tc.attrs, tc.dt, tc.w, got, err, tc.want)
		}
	}
}
