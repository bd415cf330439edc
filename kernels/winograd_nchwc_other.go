//go:build !amd64 || purego

package kernels

// winocInput is winocInputGo: this build has no vector kernels.
func winocInput(b int, x []float32, ld, bstride, blocks int, v []float32, vld int) {
	winocInputGo(b, x, ld, bstride, blocks, v, vld)
}

// winocOutput is winocOutputGo: this build has no vector kernels.
func winocOutput(b int, m []float32, mld, blocks int, y []float32, ld, bstride int, bias []float32) {
	winocOutputGo(b, m, mld, blocks, y, ld, bstride, bias)
}
