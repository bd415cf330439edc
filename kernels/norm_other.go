//go:build !amd64 || purego

package kernels

func bnSumF32Vec(l *bnLanes, x []float32) int                             { return 0 }
func bnSqDevF32Vec(l *bnLanes, x []float32, m float64) int                { return 0 }
func bnGradSumsF32Vec(sdy, sdyx *bnLanes, dy, x []float32, m float64) int { return 0 }
func bnApplyF32Vec(x, y []float32, a, b float64) int                      { return 0 }
func bnGradXF32Vec(dy, x, dx []float32, k, m, is, a, b float64) int       { return 0 }
