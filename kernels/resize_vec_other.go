//go:build !amd64 || purego

package kernels

func resizeDup2F32Vec(dst []float32, ld int, src []float32, rows int) int { return 0 }
