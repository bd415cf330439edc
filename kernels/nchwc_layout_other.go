//go:build !amd64 || purego

package kernels

func reorderTilesVec(plain, blocked []float32, ld, tiles int, to bool) int { return 0 }
