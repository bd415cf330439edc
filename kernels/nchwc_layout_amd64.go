//go:build !purego

package kernels

//go:generate sh -c "cd internal/avo && go run ./layoutgen -out ../../nchwc_layout_amd64.s -stubs ../../nchwc_layout_stub_amd64.go -pkg kernels"

// reorderPixelsVec moves the first px pixels of one block of b channels
// between plain (rows ld apart) and blocked with the AVX-512 transposes
// (blocks of 16) or the AVX2 ones (8), into blocked when to is set, and
// returns how many it moved: all with AVX-512, whole tiles of 8 with
// AVX2, none without.
func reorderPixelsVec(plain, blocked []float32, ld, px, b int, to bool) int {
	if b == ymmBlock && hasAVX2FMA && px >= b {
		tiles := px / b
		_, _ = plain[(b-1)*ld+tiles*b-1], blocked[tiles*b*b-1]
		if to {
			nchwcToBlock8F32AVX2(&plain[0], &blocked[0], ld, tiles)
		} else {
			nchwcFromBlock8F32AVX2(&blocked[0], &plain[0], ld, tiles)
		}
		return tiles * b
	}
	if !hasPerfAVX512 || b != zmmBlock || px == 0 {
		return 0
	}
	_, _ = plain[(b-1)*ld+px-1], blocked[b*px-1]
	tiles, rem := px/b, px%b
	switch {
	case to:
		nchwcToBlockF32AVX512(&plain[0], &blocked[0], ld, tiles, rem)
	case ld%1024 == 0:
		// Rows a multiple of 4 KB apart: a tile's sixteen row stores
		// share their low address bits and hold each other up (twice
		// the time of rows 16 floats further apart); eight at a time,
		// each half of the block reading the tiles again, do not.
		nchwcFromBlockLoF32AVX512(&blocked[0], &plain[0], ld, tiles, rem)
		nchwcFromBlockHiF32AVX512(&blocked[0], &plain[0], ld, tiles, rem)
	default:
		nchwcFromBlockF32AVX512(&blocked[0], &plain[0], ld, tiles, rem)
	}
	return px
}
