//go:build !amd64 || purego

package kernels

func reorderPixelsVec(plain, blocked []float32, ld, px, b int, to bool) int { return 0 }
