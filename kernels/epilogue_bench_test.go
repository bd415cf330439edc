package kernels

import (
	"fmt"
	"math/rand/v2"
	"syscall"
	"testing"
	"time"
)

// BenchmarkConvEpilogue times a ResNet-shaped 3×3 convolution (batch 8,
// one thread) alone, with the epilogue bias + residual + ReLU fused, and
// followed by the three separate passes the unfused ops make: the
// epilogue's cost, and what fusing saves, per layer shape. cpu-ms/op is
// the process CPU time per convolution, steadier than the wall time on a
// shared machine.
func BenchmarkConvEpilogue(b *testing.B) {
	for _, s := range []struct{ c, hw int }{{64, 16}, {256, 4}, {512, 2}} {
		p := Conv2DParams{N: 8, C: s.c, H: s.hw, W: s.hw, O: s.c, KH: 3, KW: 3, SH: 1, SW: 1, PH: 1, PW: 1, DH: 1, DW: 1, Groups: 1}
		r := rand.New(rand.NewPCG(1, 2))
		x, w := epiRand[float32](r, p.N*p.C*p.H*p.W), epiRand[float32](r, p.O*p.C*9)
		bias, res := epiRand[float32](r, p.O), epiRand[float32](r, p.N*p.O*p.H*p.W)
		out := make([]float32, len(res))
		ws := make([]float32, Conv2DWorkspace(p, 1))
		for _, mode := range []string{"conv", "fused", "separate"} {
			b.Run(fmt.Sprintf("c=%d/hw=%d/%s", s.c, s.hw, mode), func(b *testing.B) {
				fp := p
				if mode == "fused" {
					fp.Epilogue = Epilogue{Act: ActRelu, Bias32: bias, Residual32: res}
				}
				hw := s.hw * s.hw
				c0 := epiCPUTime()
				for b.Loop() {
					Conv2D(fp, x, w, out, ws, 1)
					if mode == "separate" {
						for q := range p.N * p.O {
							ewAddVSF32(out[q*hw:(q+1)*hw], out[q*hw:(q+1)*hw], bias[q%p.O])
						}
						ewAddVVF32(out, out, res)
						ReluF32(out, out, 1)
					}
				}
				b.ReportMetric(float64(epiCPUTime()-c0)/1e6/float64(b.N), "cpu-ms/op")
			})
		}
	}
}

// epiCPUTime is the process's CPU time so far.
func epiCPUTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
