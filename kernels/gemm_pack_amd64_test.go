//go:build !purego

package kernels

import (
	"fmt"
	"testing"
)

// TestPackAVX512 checks the assembly packers against the portable ones on
// full and edge panels, with and without a kb%16 tail.
func TestPackAVX512(t *testing.T) {
	if !hasAVX512F {
		t.Skip("CPU lacks AVX-512F")
	}
	for _, w := range []int{14, 32} {
		for _, kb := range []int{1, 5, 16, 37, 256} {
			for _, h := range []int{1, w / 2, w - 1, w} {
				name := fmt.Sprintf("w=%d/kb=%d/h=%d", w, kb, h)
				for _, f := range []struct {
					kind      string
					asm, port func(d, src []float32, ld, kb, h, w int)
					rows, ld  int
				}{
					{"transpose", packTransposeAVX512, packTranspose[float32], h, kb + 3},
					{"runs", packRunsAVX512, packRuns[float32], kb, w + 5},
				} {
					src := make([]float32, (f.rows-1)*f.ld+max(kb, w))
					for i := range src {
						src[i] = float32(i + 1)
					}
					want, got := make([]float32, kb*w), make([]float32, kb*w)
					for i := range got {
						want[i], got[i] = -1, -1 // the packers must overwrite padding too
					}
					f.port(want, src, f.ld, kb, h, w)
					f.asm(got, src, f.ld, kb, h, w)
					for i := range want {
						if got[i] != want[i] {
							t.Fatalf("%s %s: d[%d] = %v, want %v", f.kind, name, i, got[i], want[i])
						}
					}
				}
			}
		}
	}
}
