package ops

import (
	"fmt"

	"github.com/gopir/gopir/ir"
)

// The winograd attribute of the fused and blocked convolutions
// (conv2d_fused, conv2d_nchwc): winograd:true computes the 3×3 sums by
// Winograd's F(2×2, 3×3) (kernels/winograd.go), within float32 rounding
// of the direct sums. The optimize pass "winograd" sets it where the op's
// Def.Winograd says the kernel has that path and gains by it.

// winogradAttr decodes attrs' winograd (false when absent) and, when it
// is true, checks that the convolution is one F(2×2, 3×3) computes:
// float32 elements, a 3×3 filter w, strides 1, dilations 1, groups 1.
func winogradAttr(attrs ir.Attrs, dt ir.DType, w ir.Type) (bool, error) {
	if !attrs.Has("winograd") {
		return false, nil
	}
	on, err := attrs.Bool("winograd")
	if err != nil || !on {
		return false, err
	}
	a, err := nnConvDecode(attrs)
	switch {
	case err != nil:
		return false, err
	case dt != ir.F32:
		return false, fmt.Errorf("winograd:true takes f32, not %s", dt)
	case w.Rank() != 4 || w.Dims[2] != 3 || w.Dims[3] != 3:
		return false, fmt.Errorf("winograd:true takes a 3×3 filter, not w %s", w)
	case a.strides != [2]int{1, 1} || a.dilations != [2]int{1, 1}:
		return false, fmt.Errorf("winograd:true takes strides 1 and dilations 1, not strides %v dilations %v", a.strides, a.dilations)
	case a.groups != 1:
		return false, fmt.Errorf("winograd:true takes groups 1, not %d", a.groups)
	}
	return true, nil
}
