// Command asmgen generates the amd64 assembly of package kernels: the GEMM
// micro-kernels, their float32 variants that read B in place (convolution
// panels that need no packing) and variants that read a column-strided
// convolution's A in place, the float32 row and slice kernels of
// matrix–vector products, the packing transposes and the CPUID/XGETBV
// probes used to pick a kernel at run time. Besides avo's -out and -stubs files it writes,
// with -table, the Go file that lists each family's edge kernels and the
// in-place variants.
//
// It lives in kernels/internal/avo, the one module of the avo generators,
// so that package kernels never depends on avo.
// Run it through `go generate ./kernels/` from the main module.
package main

import (
	"flag"
	"log"

	. "github.com/mmcloughlin/avo/build"
)

func main() {
	table := flag.String("table", "", "Go file listing the micro-kernels of each family")
	flag.Parse()

	ConstraintExpr("!purego")
	cpuProbes()
	for _, f := range families {
		f.generate()
	}
	for h := 1; h <= families[0].mr; h++ {
		families[0].indirectKernel(h)
	}
	for h := 1; h <= families[0].mr; h++ {
		for v := 1; v <= families[0].nv; v++ {
			families[0].directAKernel(h, v)
		}
	}
	for h := 1; h <= families[0].mr; h++ {
		for v := 1; v <= families[0].nv; v++ {
			families[0].stridedAKernel(h, v)
		}
	}
	for h := 1; h <= stridedA3Max; h++ {
		families[0].stridedA3Kernel(h)
	}
	for p := 1; p <= rowKernelMax; p++ {
		families[0].rowKernel(p)
	}
	for s := 1; s <= rowSlicesMax; s++ {
		for v := 1; v <= families[0].nv; v++ {
			families[0].rowSlicesKernel(s, v)
		}
	}
	for _, rows := range []int{14, 32} {
		packTransposeF32(rows)
		packCopyF32(rows)
	}
	stridedScatterF32()
	if *table != "" {
		if err := writeTable(*table, families); err != nil {
			log.Fatal(err)
		}
	}
	Generate()
}
