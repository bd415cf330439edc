package emit

import (
	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	"github.com/mmcloughlin/avo/reg"
)

// Transpose16 transposes the 16×16 float32 block in r (r[i] row i) in
// place, r[j] then column j, through the 16 registers t: the transpose
// of asmgen's packing and strided scatter and of layoutgen's reorders.
func Transpose16(r, t []reg.VecPhysical) {
	interleave(r, t)
	// Two rounds of 128-bit lane shuffles gather the four row groups.
	for c := 0; c < 4; c++ {
		VSHUFF32X4(U8(0x44), r[4+c], r[c], t[c])
		VSHUFF32X4(U8(0xee), r[4+c], r[c], t[4+c])
		VSHUFF32X4(U8(0x44), r[12+c], r[8+c], t[8+c])
		VSHUFF32X4(U8(0xee), r[12+c], r[8+c], t[12+c])
	}
	for c := 0; c < 4; c++ {
		VSHUFF32X4(U8(0x88), t[8+c], t[c], r[c])
		VSHUFF32X4(U8(0xdd), t[8+c], t[c], r[4+c])
		VSHUFF32X4(U8(0x88), t[12+c], t[4+c], r[8+c])
		VSHUFF32X4(U8(0xdd), t[12+c], t[4+c], r[12+c])
	}
}

// Transpose8 transposes the 8×8 float32 block in the ymm registers r
// (r[i] row i) into t, t[j] column j, r then scratch, and returns t: the
// transpose of layoutgen's reorders in blocks of 8.
func Transpose8(r, t []reg.VecPhysical) []reg.VecPhysical {
	interleave(r, t)
	// Column c: lane 0 of both row groups; column 4+c: lane 1.
	for c := 0; c < 4; c++ {
		VPERM2F128(U8(0x20), r[4+c], r[c], t[c])
		VPERM2F128(U8(0x31), r[4+c], r[c], t[4+c])
	}
	return t
}

// interleave interleaves the rows r (through as many registers t) by
// 32-bit then 64-bit elements within 128-bit lanes: lane L of r[4g+c]
// then holds rows 4g..4g+3 of column 4L+c.
func interleave(r, t []reg.VecPhysical) {
	for i := 0; i < len(r); i += 2 {
		VUNPCKLPS(r[i+1], r[i], t[i])
		VUNPCKHPS(r[i+1], r[i], t[i+1])
	}
	for g := 0; g < len(r)/4; g++ {
		a, b, c, e := t[4*g], t[4*g+1], t[4*g+2], t[4*g+3]
		VUNPCKLPD(c, a, r[4*g])
		VUNPCKHPD(c, a, r[4*g+1])
		VUNPCKLPD(e, b, r[4*g+2])
		VUNPCKHPD(e, b, r[4*g+3])
	}
}
