package main

import (
	"github.com/gopir/gopir/kernels/internal/avo/emit"
	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/reg"
)

// cpuProbes emits the two instructions the run-time kernel choice needs, so
// that package kernels does not have to import golang.org/x/sys/cpu.
func cpuProbes() {
	TEXT("cpuid", NOSPLIT, "func(eaxArg, ecxArg uint32) (eax, ebx, ecx, edx uint32)")
	Doc("cpuid executes CPUID with the given leaf and sub-leaf.")
	emit.Params("eaxArg ecxArg", EAX, ECX)
	CPUID()
	Store(EAX, Return("eax"))
	Store(EBX, Return("ebx"))
	Store(ECX, Return("ecx"))
	Store(EDX, Return("edx"))
	RET()

	TEXT("xgetbv", NOSPLIT, "func() (eax, edx uint32)")
	Doc("xgetbv reads XCR0, which says which register states the OS saves.")
	XORL(ECX, ECX)
	XGETBV()
	Store(EAX, Return("eax"))
	Store(EDX, Return("edx"))
	RET()
}
