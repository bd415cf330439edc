//go:build !amd64 || purego

package kernels

func reorderPixelsVec(plain, blocked []float32, ld, px int, to bool) bool { return false }
