//go:build !amd64 || purego

package kernels

const hasEpiPlanesVec = false

func epiPlanesF32Vec(out, bias, res []float32, relu bool, hw int) bool { return false }
