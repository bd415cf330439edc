//go:build !amd64 || purego

package kernels

// winoVec reports whether the Winograd path's vector transforms run: not
// on this build, whose transforms are the portable loops.
func winoVec(int) bool { return false }

func winoInputF32AVX512(v, p *float32, desc *int64, groups, wp, vs, pstep int) {
	panic("kernels: no AVX-512 Winograd transforms on this build")
}

func winoOutputF32AVX512(s, m *float32, groups, ms, sn int) {
	panic("kernels: no AVX-512 Winograd transforms on this build")
}

func winoOutputPoolF32AVX512(dst, m, bias *float32, groups, last, ms, relu int) {
	panic("kernels: no AVX-512 Winograd transforms on this build")
}
