//go:build !purego

package kernels

//go:generate sh -c "cd internal/avo && go run ./normgen -out ../../norm_amd64.s -stubs ../../norm_stub_amd64.go -pkg kernels"

// The AVX-512 loops of float32 batch norm (norm_amd64.s). Each runs on
// the longest prefix it handles and returns its length (0 without
// AVX-512); the portable loops finish the row, continuing the same lanes.

func bnSumF32Vec(l *bnLanes, x []float32) int {
	n := len(x) &^ 31
	if !hasPerfAVX512 || n == 0 {
		return 0
	}
	bnSumF32AVX512(&x[0], n, (*[32]float64)(l))
	return n
}

func bnSqDevF32Vec(l *bnLanes, x []float32, m float64) int {
	n := len(x) &^ 31
	if !hasPerfAVX512 || n == 0 {
		return 0
	}
	bnSqDevF32AVX512(&x[0], n, &m, (*[32]float64)(l))
	return n
}

func bnGradSumsF32Vec(sdy, sdyx *bnLanes, dy, x []float32, m float64) int {
	n := len(dy) &^ 31
	if !hasPerfAVX512 || n == 0 {
		return 0
	}
	_ = x[n-1]
	bnGradSumsF32AVX512(&dy[0], &x[0], n, &m, (*[32]float64)(sdy), (*[32]float64)(sdyx))
	return n
}

func bnApplyF32Vec(x, y []float32, a, b float64) int {
	n := len(x) &^ 7
	if !hasPerfAVX512 || n == 0 {
		return 0
	}
	_ = y[n-1]
	c := [2]float64{a, b}
	bnApplyF32AVX512(&x[0], &y[0], n, &c)
	return n
}

func bnGradXF32Vec(dy, x, dx []float32, k, m, is, a, b float64) int {
	n := len(dy) &^ 7
	if !hasPerfAVX512 || n == 0 {
		return 0
	}
	_, _ = x[n-1], dx[n-1]
	c := [5]float64{k, m, is, a, b}
	bnGradXF32AVX512(&dy[0], &x[0], &dx[0], n, &c)
	return n
}
