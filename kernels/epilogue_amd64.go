//go:build !purego

package kernels

// hasEpiPlanesVec says whether epiPlanesF32Vec runs.
var hasEpiPlanesVec = hasPerfAVX512

// epiPlanesF32Kernels[res][relu] is epiPlanesF32AVX512 with a residual
// (res 1) and ReLU (relu 1) or without.
var epiPlanesF32Kernels = [2][2]func(out, bias, res *float32, planes, hw int){
	{epiPlanesF32AVX512, epiPlanesF32AVX512Relu},
	{epiPlanesF32AVX512Res, epiPlanesF32AVX512ResRelu},
}

// epiPlanesF32Vec applies bias (one value per plane), the residual res
// (shaped like out, or nil) and ReLU (when relu) to the planes of hw
// elements that out holds, in one AVX-512 pass, and reports whether it
// did (not without AVX-512).
func epiPlanesF32Vec(out, bias, res []float32, relu bool, hw int) bool {
	planes := len(bias)
	if !hasPerfAVX512 || planes == 0 || hw == 0 {
		return false
	}
	if len(out) != planes*hw || (res != nil && len(res) != len(out)) {
		panic("kernels: epilogue planes out of range")
	}
	var r *float32
	ri, ai := 0, 0
	if res != nil {
		r, ri = &res[0], 1
	}
	if relu {
		ai = 1
	}
	epiPlanesF32Kernels[ri][ai](&out[0], &bias[0], r, planes, hw)
	return true
}
