// Package emit holds what the avo generators share.
package emit

import (
	"fmt"
	"strings"

	. "github.com/mmcloughlin/avo/build"
	"github.com/mmcloughlin/avo/reg"
)

// Func starts the assembly function name, of Go signature sig, documented
// by the lines of doc, without a stack-split check and with its pointer
// arguments not escaping: how the generators' kernels all begin.
func Func(name, sig string, doc ...string) {
	TEXT(name, NOSPLIT, sig)
	Pragma("noescape")
	Doc(doc...)
}

// Params loads the current function's parameters named in names
// (separated by spaces) into regs, one register each, in order.
func Params(names string, regs ...reg.Register) {
	ns := strings.Fields(names)
	if len(ns) != len(regs) {
		panic(fmt.Sprintf("emit.Params: %d names (%q) for %d registers", len(ns), names, len(regs)))
	}
	for i, n := range ns {
		Load(Param(n), regs[i])
	}
}

// Z returns the 32 AVX-512 vector registers in order, Z0 to Z31.
func Z() []reg.VecPhysical {
	return []reg.VecPhysical{reg.Z0, reg.Z1, reg.Z2, reg.Z3, reg.Z4, reg.Z5, reg.Z6, reg.Z7,
		reg.Z8, reg.Z9, reg.Z10, reg.Z11, reg.Z12, reg.Z13, reg.Z14, reg.Z15,
		reg.Z16, reg.Z17, reg.Z18, reg.Z19, reg.Z20, reg.Z21, reg.Z22, reg.Z23,
		reg.Z24, reg.Z25, reg.Z26, reg.Z27, reg.Z28, reg.Z29, reg.Z30, reg.Z31}
}

// Y returns the 16 AVX2 vector registers in order, Y0 to Y15.
func Y() []reg.VecPhysical {
	return []reg.VecPhysical{reg.Y0, reg.Y1, reg.Y2, reg.Y3, reg.Y4, reg.Y5, reg.Y6, reg.Y7,
		reg.Y8, reg.Y9, reg.Y10, reg.Y11, reg.Y12, reg.Y13, reg.Y14, reg.Y15}
}
