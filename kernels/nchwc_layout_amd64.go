//go:build !purego

package kernels

//go:generate sh -c "cd internal/avo && go run ./layoutgen -out ../../nchwc_layout_amd64.s -stubs ../../nchwc_layout_stub_amd64.go -pkg kernels"

// reorderTilesVec moves tiles of 16 pixels of one block of 16 channels
// between plain (rows ld apart) and blocked with the AVX-512 transposes,
// into blocked when to is set, and returns how many pixels it moved (0
// without AVX-512).
func reorderTilesVec(plain, blocked []float32, ld, tiles int, to bool) int {
	if !hasPerfAVX512 || tiles == 0 {
		return 0
	}
	_, _ = plain[(NCHWcBlock-1)*ld+NCHWcBlock*tiles-1], blocked[NCHWcBlock*NCHWcBlock*tiles-1]
	if to {
		nchwcToBlockF32AVX512(&plain[0], &blocked[0], ld, tiles)
	} else {
		nchwcFromBlockF32AVX512(&blocked[0], &plain[0], ld, tiles)
	}
	return NCHWcBlock * tiles
}
