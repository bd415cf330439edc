//go:build !purego

package kernels

//go:generate sh -c "cd internal/avo && go run ./asmgen -out ../../gemm_amd64.s -stubs ../../gemm_stub_amd64.go -table ../../gemm_table_amd64.go -pkg kernels"

// Blocking measured on Zen 5 (48 KiB L1d, 1 MiB L2 per core): kc = 512
// halves the passes over C compared with 256, while a 64 KiB B panel still
// streams well from L2; mc = 168 keeps an A block (336 KiB) in L2.
func archSgemmKernels() []*gemmKernel[float32] {
	return []*gemmKernel[float32]{
		{name: "avx512", missing: missingUnless(hasAVX512F, "AVX-512F"),
			mr: 14, nr: 32, mc: 14 * 12, kc: 512, nc: 4096,
			fn: sgemmAVX512Kernels[13][1], edge: sgemmAVX512Kernels, lanes: 16,
			pack: panelPackers[float32]{transpose: packTransposeAVX512, runs: packRunsAVX512},
			row:  []rowKernel[float32]{sgemmAVX512_row32, sgemmAVX512_row64, sgemmAVX512_row96, sgemmAVX512_row128},
			rowSlices: [][]rowSlicesKernel[float32]{
				{sgemmAVX512_slices1x16, sgemmAVX512_slices1x32},
				{sgemmAVX512_slices2x16, sgemmAVX512_slices2x32},
				{sgemmAVX512_slices3x16, sgemmAVX512_slices3x32},
				{sgemmAVX512_slices4x16, sgemmAVX512_slices4x32},
				{sgemmAVX512_slices5x16, sgemmAVX512_slices5x32},
				{sgemmAVX512_slices6x16, sgemmAVX512_slices6x32},
				{sgemmAVX512_slices7x16, sgemmAVX512_slices7x32},
				{sgemmAVX512_slices8x16, sgemmAVX512_slices8x32}},
			directA:  sgemmAVX512dKernels,
			indirect: sgemmAVX512iKernels},
		{name: "avx2", missing: missingUnless(hasAVX2FMA, "AVX2+FMA"),
			mr: 6, nr: 16, mc: 6 * 16, kc: 384, nc: 4096,
			fn: sgemmAVX2Kernels[5][1], edge: sgemmAVX2Kernels, lanes: 8},
	}
}

func archDgemmKernels() []*gemmKernel[float64] {
	return []*gemmKernel[float64]{
		{name: "avx512", missing: missingUnless(hasAVX512F, "AVX-512F"),
			mr: 14, nr: 16, mc: 14 * 8, kc: 256, nc: 2048,
			fn: dgemmAVX512Kernels[13][1], edge: dgemmAVX512Kernels, lanes: 8},
		{name: "avx2", missing: missingUnless(hasAVX2FMA, "AVX2+FMA"),
			mr: 6, nr: 8, mc: 6 * 24, kc: 256, nc: 2048,
			fn: dgemmAVX2Kernels[5][1], edge: dgemmAVX2Kernels, lanes: 4},
	}
}
