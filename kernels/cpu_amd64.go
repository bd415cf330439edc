//go:build !purego

package kernels

import "os"

// x86 feature bits this package needs. GOPIR_CPU=avx2 turns AVX-512 off,
// every path that takes it (GEMM, convolutions, the blocked layout's
// block of 16) then running as on an AVX2 machine: for tests and
// measurement on an AVX-512 one.
var (
	hasAVX2FMA = cpuHasAVX2FMA()
	hasAVX512F = hasAVX2FMA && cpuHasAVX512F() && os.Getenv("GOPIR_CPU") != "avx2"
)

func cpuHasAVX2FMA() bool {
	maxLeaf, _, _, _ := cpuid(0, 0)
	if maxLeaf < 7 {
		return false
	}
	_, _, ecx1, _ := cpuid(1, 0)
	const fma, osxsave, avx = 1 << 12, 1 << 27, 1 << 28
	if ecx1&(fma|osxsave|avx) != fma|osxsave|avx {
		return false
	}
	// The OS must save the XMM and YMM state on context switches.
	if xcr0, _ := xgetbv(); xcr0&0x6 != 0x6 {
		return false
	}
	_, ebx7, _, _ := cpuid(7, 0)
	return ebx7&(1<<5) != 0 // AVX2
}

func cpuHasAVX512F() bool {
	// The OS must also save the opmask and the full 32 ZMM registers.
	if xcr0, _ := xgetbv(); xcr0&0xe6 != 0xe6 {
		return false
	}
	_, ebx7, _, _ := cpuid(7, 0)
	return ebx7&(1<<16) != 0 // AVX512F
}

// missingUnless returns feature if !ok, for gemmKernel.missing.
func missingUnless(ok bool, feature string) string {
	if ok {
		return ""
	}
	return feature
}
