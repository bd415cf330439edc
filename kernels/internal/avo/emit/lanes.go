package emit

import (
	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
)

// evenOdd holds the tables EvenOddLanes emitted, by prefix.
var evenOdd = map[string][2]Mem{}

// EvenOddLanes returns the VPERMT2PS index tables 0, 2, …, 30 and
// 1, 3, …, 31, which split a pair of registers (32 float32 columns) into
// their even and their odd columns. It emits them, as read-only data
// named prefix+"EvenLanes" and prefix+"OddLanes", on first use; the
// prefix keeps the symbols of two generators' files apart, since they
// end up in one package.
func EvenOddLanes(prefix string) (even, odd Mem) {
	if t, ok := evenOdd[prefix]; ok {
		return t[0], t[1]
	}
	var t [2]Mem
	for i, name := range []string{"EvenLanes", "OddLanes"} {
		t[i] = GLOBL(prefix+name, RODATA|NOPTR)
		for j := range 16 {
			DATA(4*j, U32(2*j+i))
		}
	}
	evenOdd[prefix] = t
	return t[0], t[1]
}
