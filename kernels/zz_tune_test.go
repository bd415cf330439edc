package kernels

import (
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"
)

func BenchmarkMicroKernel(b *testing.B) {
	for _, kern := range sgemmKernels {
		if kern.missing != "" {
			continue
		}
		b.Run(kern.name, func(b *testing.B) {
			const kc = 256
			ap := make([]float32, kc*kern.mr)
			bp := make([]float32, kc*kern.nr)
			c := make([]float32, kern.mr*kern.nr)
			for b.Loop() {
				kern.fn(kc, &ap[0], &bp[0], &c[0], kern.nr, 1, 1)
			}
			b.ReportMetric(2*float64(kc*kern.mr*kern.nr)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
		})
	}
}

// TUNE="mc kc nc threads n ipt; ..." prints best-of GFLOP/s per config over
// ROUNDS interleaved rounds.
func TestTune(t *testing.T) {
	env := os.Getenv("TUNE")
	if env == "" {
		t.Skip()
	}
	k := sgemmActive.Load()
	save := *k
	defer func() { *k = save }()
	cfgs := strings.Split(env, ";")
	best := make([]float64, len(cfgs))
	rounds := 3
	fmt.Sscan(os.Getenv("ROUNDS"), &rounds)
	for range rounds {
		for ci, cfg := range cfgs {
			var mc, kc, nc, th, n, ipt int
			fmt.Sscan(cfg, &mc, &kc, &nc, &th, &n, &ipt)
			if ipt > 0 {
				gemmItemsPerThread = ipt
			}
			k.mc, k.kc, k.nc = mc, kc, nc
			gemmIROuter = os.Getenv("IROUTER") != ""
			fmt.Sscan(os.Getenv("ITEMS"), &gemmItemsOverride[0], &gemmItemsOverride[1])
			a := make([]float32, n*n)
			bm := make([]float32, n*n)
			c := make([]float32, n*n)
			reps := max(1, int(2e8/float64(2*n*n*n)))
			d := bestOf(700*time.Millisecond, func() {
				for range reps {
					Sgemm(false, false, n, n, n, 1, a, n, bm, n, 0, c, n, th)
				}
			})
			best[ci] = max(best[ci], 2*float64(n*n*n)*float64(reps)/d.Seconds()/1e9)
		}
	}
	for ci, cfg := range cfgs {
		fmt.Printf("%-28s %7.1f GFLOP/s\n", cfg, best[ci])
	}
}

// MACRO="mc kc nb; ..." times macroKernel alone on packed buffers.
func TestMacro(t *testing.T) {
	env := os.Getenv("MACRO")
	if env == "" {
		t.Skip()
	}
	k := sgemmActive.Load()
	for _, cfg := range strings.Split(env, ";") {
		var mc, kc, nb int
		fmt.Sscan(cfg, &mc, &kc, &nb)
		ap := make([]float32, mc*kc)
		bp := make([]float32, kc*nb)
		tmp := make([]float32, k.mr*k.nr)
		ldc := 1024
		c := make([]float32, mc*ldc)
		reps := max(1, int(2e8/float64(2*mc*nb*kc)))
		var best time.Duration = 1 << 62
		deadline := time.Now().Add(2 * time.Second)
		for time.Now().Before(deadline) {
			t0 := time.Now()
			for range reps {
				macroKernel(k, ap, bp, tmp, mc, nb, kc, 1, 1, c, ldc)
			}
			best = min(best, time.Since(t0))
		}
		fmt.Printf("%-28s %7.1f GFLOP/s\n", cfg, 2*float64(mc*nb*kc)*float64(reps)/best.Seconds()/1e9)
	}
}

func BenchmarkPack(b *testing.B) {
	const ld, kb = 1024, 256
	src := make([]float32, kb*ld)
	for _, w := range []int{14, 32, 6, 16} {
		d := make([]float32, kb*w)
		b.Run(fmt.Sprintf("transpose/w=%d", w), func(b *testing.B) {
			for b.Loop() {
				packTranspose(d, src, ld, kb, w, w)
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*kb*w), "ns/elem")
		})
		b.Run(fmt.Sprintf("runs/w=%d", w), func(b *testing.B) {
			for b.Loop() {
				packRuns(d, src, ld, kb, w, w)
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*kb*w), "ns/elem")
		})
	}
}

func BenchmarkPackAsm(b *testing.B) {
	const ld, kb = 1024, 256
	src := make([]float32, kb*ld)
	for _, w := range []int{14, 32} {
		d := make([]float32, kb*w)
		b.Run(fmt.Sprintf("transpose/w=%d", w), func(b *testing.B) {
			for b.Loop() {
				packTransposeAVX512(d, src, ld, kb, w, w)
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*kb*w), "ns/elem")
		})
	}
}

func TestPackAsm(t *testing.T) {
	for _, w := range []int{14, 32} {
		for _, kb := range []int{16, 37, 256, 5} {
			ld := kb + 3
			src := make([]float32, w*ld)
			for i := range src {
				src[i] = float32(i)
			}
			d1 := make([]float32, kb*w)
			d2 := make([]float32, kb*w)
			packTranspose(d1, src, ld, kb, w, w)
			packTransposeAVX512(d2, src, ld, kb, w, w)
			for i := range d1 {
				if d1[i] != d2[i] {
					t.Fatalf("w=%d kb=%d: d[%d] = %v want %v", w, kb, i, d2[i], d1[i])
				}
			}
		}
	}
}

func bestOf(d time.Duration, f func()) time.Duration {
	var best time.Duration = 1 << 62
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		t0 := time.Now()
		f()
		best = min(best, time.Since(t0))
	}
	return best
}


func BenchmarkSmall(b *testing.B) {
	for _, th := range []int{1, 2} {
		for _, n := range []int{64, 96, 128, 192, 256} {
			b.Run(fmt.Sprintf("t%d/n=%d", th, n), func(b *testing.B) {
				a := make([]float32, n*n)
				bm := make([]float32, n*n)
				c := make([]float32, n*n)
				for b.Loop() {
					Sgemm(false, false, n, n, n, 1, a, n, bm, n, 0, c, n, th)
				}
				b.ReportMetric(2*float64(n*n*n)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
			})
		}
	}
}

func TestPackRunsAsm(t *testing.T) {
	for _, w := range []int{14, 32} {
		for _, kb := range []int{1, 16, 37, 256} {
			ld := w + 5
			src := make([]float32, kb*ld)
			for i := range src {
				src[i] = float32(i)
			}
			d1 := make([]float32, kb*w)
			d2 := make([]float32, kb*w)
			packRuns(d1, src, ld, kb, w, w)
			packRunsAVX512(d2, src, ld, kb, w, w)
			for i := range d1 {
				if d1[i] != d2[i] {
					t.Fatalf("w=%d kb=%d: d[%d] = %v want %v", w, kb, i, d2[i], d1[i])
				}
			}
		}
	}
}

func BenchmarkPackRunsAsm(b *testing.B) {
	const ld, kb = 1024, 256
	src := make([]float32, kb*ld)
	for _, w := range []int{14, 32} {
		d := make([]float32, kb*w)
		b.Run(fmt.Sprintf("w=%d", w), func(b *testing.B) {
			for b.Loop() {
				packRunsAVX512(d, src, ld, kb, w, w)
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*kb*w), "ns/elem")
		})
	}
}

func TestForkCost(t *testing.T) {
	if os.Getenv("FORK") == "" {
		t.Skip()
	}
	var sink [2]int
	for _, spin := range []int{0, 1000, 10000, 100000, 300000} {
		d := bestOf(time.Second, func() {
			ParallelFor(2, 2, 1, func(lo, hi int) {
				x := 0
				for i := range spin {
					x += i ^ lo
				}
				sink[lo] = x
			})
		})
		d1 := bestOf(time.Second, func() {
			x := 0
			for i := range spin {
				x += i
			}
			sink[0] = x
		})
		var ds []time.Duration
		for range 3000 {
			t0 := time.Now()
			ParallelFor(2, 2, 1, func(lo, hi int) {
				x := 0
				for i := range spin {
					x += i ^ lo
				}
				sink[lo] = x
			})
			ds = append(ds, time.Since(t0))
		}
		slices.Sort(ds)
		fmt.Println("spin", spin, "serial", d1, "best", d, "median", ds[len(ds)/2], "p90", ds[len(ds)*9/10])
	}
	// median
	var ds []time.Duration
	for range 2000 {
		t0 := time.Now()
		ParallelFor(2, 2, 1, func(lo, hi int) { sink[lo]++ })
		ds = append(ds, time.Since(t0))
		time.Sleep(20 * time.Microsecond)
	}
	slices.Sort(ds)
	fmt.Println("median", ds[len(ds)/2], "p90", ds[len(ds)*9/10])
}

func TestPeak2(t *testing.T) {
	if os.Getenv("PEAK") == "" {
		t.Skip()
	}
	kern := sgemmActive.Load()
	for _, th := range []int{1, 2} {
		const kc = 256
		res := make([]time.Duration, th)
		ParallelFor(th, th, 1, func(lo, hi int) {
			ap := make([]float32, kc*kern.mr)
			bp := make([]float32, kc*kern.nr)
			c := make([]float32, kern.mr*kern.nr)
			res[lo] = bestOf(time.Second, func() {
				for range 50 {
					kern.fn(kc, &ap[0], &bp[0], &c[0], kern.nr, 1, 1)
				}
			})
		})
		for _, d := range res {
			fmt.Printf("threads=%d %6.1f GFLOP/s\n", th, 2*float64(kc*kern.mr*kern.nr)*50/d.Seconds()/1e9)
		}
	}
}

func TestItems(t *testing.T) {
	for _, c := range [][3]int{{1024, 1024, 2}, {512, 512, 2}, {256, 256, 2}, {128, 512, 2}, {16, 3200, 2}, {12800, 16, 2}, {784, 512, 2}, {128, 784, 2}, {1024, 1024, 4}, {200, 200, 3}} {
		r, cc := gemmItems(c[0], c[1], 14, 32, 168, c[2], 1)
		fmt.Println(c, "->", r, cc)
	}
}
