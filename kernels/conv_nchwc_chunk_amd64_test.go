//go:build !purego

package kernels

import (
	"fmt"
	"testing"
)

// TestConvNCHWcChunks holds ConvNCHWc to convNCHWcRef bit for bit when
// its sums run over small chunks of input blocks, each pass resumed from
// the outputs of the last: one block (or channel) at a time, and two
// blocks of a 1×1 kernel.
func TestConvNCHWcChunks(t *testing.T) {
	if NCHWcBlock() == 0 {
		t.Skip("no vector kernels here")
	}
	defer func(v [2]int) { nchwcChunkBytes = v }(nchwcChunkBytes)
	for _, bytes := range []int{1, 40 << 10} {
		t.Run(fmt.Sprintf("bytes=%d", bytes), func(t *testing.T) {
			nchwcChunkBytes = [2]int{bytes, bytes}
			checkConvNCHWcVec(t)
		})
	}
}
