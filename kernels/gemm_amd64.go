//go:build !purego

package kernels

//go:generate sh -c "cd internal/asmgen && go run . -out ../../gemm_amd64.s -stubs ../../gemm_stub_amd64.go -table ../../gemm_table_amd64.go -pkg kernels"

// x86 feature bits this package needs.
var (
	hasAVX2FMA = cpuHasAVX2FMA()
	hasAVX512F = hasAVX2FMA && cpuHasAVX512F()
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

func archSgemmKernels() []*gemmKernel[float32] {
	return []*gemmKernel[float32]{
		{name: "avx512", missing: missingUnless(hasAVX512F, "AVX-512F"),
			mr: 14, nr: 32, mc: 14 * 12, kc: 512, nc: 4096,
			fn: sgemmAVX512Kernels[13][1], edge: sgemmAVX512Kernels, lanes: 16,
			pack: panelPackers[float32]{transpose: packTransposeAVX512, runs: packRunsAVX512}},
		{name: "avx2", missing: missingUnless(hasAVX2FMA, "AVX2+FMA"),
			mr: 6, nr: 16, mc: 6 * 48, kc: 256, nc: 4096,
			fn: sgemmAVX2Kernels[5][1], edge: sgemmAVX2Kernels, lanes: 8},
	}
}

func archDgemmKernels() []*gemmKernel[float64] {
	return []*gemmKernel[float64]{
		{name: "avx512", missing: missingUnless(hasAVX512F, "AVX-512F"),
			mr: 14, nr: 16, mc: 14 * 12, kc: 256, nc: 2048,
			fn: dgemmAVX512Kernels[13][1], edge: dgemmAVX512Kernels, lanes: 8},
		{name: "avx2", missing: missingUnless(hasAVX2FMA, "AVX2+FMA"),
			mr: 6, nr: 8, mc: 6 * 24, kc: 256, nc: 2048,
			fn: dgemmAVX2Kernels[5][1], edge: dgemmAVX2Kernels, lanes: 4},
	}
}

// packTransposeAVX512 is packTranspose using the assembly 16×16 block
// transposes for the full panels of the AVX-512 kernel (14 rows of A, 32
// columns of B); edge panels and the last kb%16 columns go through Go.
func packTransposeAVX512(d, src []float32, ld, kb, h, w int) {
	k16 := kb &^ 15
	if h != w || k16 == 0 || (w != 14 && w != 32) {
		packTranspose(d, src, ld, kb, h, w)
		return
	}
	_ = d[kb*w-1]
	_ = src[(h-1)*ld+kb-1]
	if w == 14 {
		packTransposeAVX512_14(&d[0], &src[0], ld, k16)
	} else {
		packTransposeAVX512_32(&d[0], &src[0], ld, k16)
	}
	if k16 < kb {
		packTranspose(d[k16*w:], src[k16:], ld, kb-k16, h, w)
	}
}

// packRunsAVX512 is packRuns using assembly for the full panels of the
// AVX-512 kernel.
func packRunsAVX512(d, src []float32, ld, kb, h, w int) {
	if h != w || kb == 0 || (w != 14 && w != 32) {
		packRuns(d, src, ld, kb, h, w)
		return
	}
	_ = d[kb*w-1]
	_ = src[(kb-1)*ld+h-1]
	if w == 14 {
		packCopyAVX512_14(&d[0], &src[0], ld, kb)
	} else {
		packCopyAVX512_32(&d[0], &src[0], ld, kb)
	}
}
