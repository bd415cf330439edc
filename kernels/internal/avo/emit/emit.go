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
