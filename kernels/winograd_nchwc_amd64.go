//go:build !purego

package kernels

//go:generate sh -c "cd internal/avo && go run ./winocgen -out ../../winograd_nchwc_amd64.s -stubs ../../winograd_nchwc_stub_amd64.go -pkg kernels"

// winocInput is winocInputGo through the vector kernels of
// winograd_nchwc_amd64.s where they run for blocks of b.
func winocInput(b int, x []float32, ld, bstride, blocks int, v []float32, vld int) {
	if blocks <= 0 {
		return
	}
	_ = x[(blocks-1)*bstride+3*ld+4*b-1]
	_ = v[15*vld+blocks*b-1]
	switch {
	case b == zmmBlock && hasPerfAVX512:
		winocInput16AVX512(&x[0], ld, bstride, blocks, &v[0], vld)
	case b == ymmBlock && hasAVX2FMA:
		winocInput8AVX2(&x[0], ld, bstride, blocks, &v[0], vld)
	default:
		winocInputGo(b, x, ld, bstride, blocks, v, vld)
	}
}

// winocOutput is winocOutputGo through the vector kernels of
// winograd_nchwc_amd64.s where they run for blocks of b.
func winocOutput(b int, m []float32, mld, blocks int, y []float32, ld, bstride int, bias []float32) {
	if blocks <= 0 {
		return
	}
	_ = m[15*mld+blocks*b-1]
	_ = y[(blocks-1)*bstride+ld+2*b-1]
	var bp *float32
	if bias != nil {
		_ = bias[blocks*b-1]
		bp = &bias[0]
	}
	switch {
	case b == zmmBlock && hasPerfAVX512:
		winocOutput16AVX512(&m[0], mld, blocks, &y[0], ld, bstride, bp)
	case b == ymmBlock && hasAVX2FMA:
		winocOutput8AVX2(&m[0], mld, blocks, &y[0], ld, bstride, bp)
	default:
		winocOutputGo(b, m, mld, blocks, y, ld, bstride, bias)
	}
}
