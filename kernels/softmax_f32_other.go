//go:build !amd64 || purego

package kernels

func softmaxMaxSubF32Vec(x, d []float32, n int) int  { return 0 }
func softmaxNormalizeF32Vec(e []float32, n int) bool { return false }
