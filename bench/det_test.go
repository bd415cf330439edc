package bench

import (
	"context"
	"fmt"
	"math"
	"runtime"
	"testing"
	"time"

	"github.com/gopir/gopir/ir"
	"github.com/gopir/gopir/tensor"
	"github.com/gopir/gopir/train"
)

// detWarmup is the warm-up of the detector's benchmarks: its steps take
// seconds, and two fill the allocator's cache and the kernels' scratch.
const detWarmup = 2

// BenchmarkDetStep times one training step of ppyoloe_s (batch 8,
// 320×320; forward, loss with its ifs, backward, clipping, AdamW) on the
// fixed batch Stepper uses, after detWarmup steps; ms/step is the median
// step, cpu-ms/step the median process CPU time per step, as in
// BenchmarkStep. Run with -benchtime Nx (a step takes seconds) and one
// -cpu value per process (docs/benchmarks.md).
func BenchmarkDetStep(b *testing.B) {
	threads := runtime.GOMAXPROCS(0)
	key := fmt.Sprint(DetModel, threads)
	steppers.Lock()
	s, ok := steppers.m[key]
	steppers.Unlock()
	if !ok {
		var err error
		if s, err = NewStepper(DetModel, threads); err != nil {
			b.Fatal(err)
		}
		for range detWarmup {
			if err := s.Step(); err != nil {
				b.Fatal(err)
			}
		}
		steppers.Lock()
		steppers.m[key] = s
		steppers.Unlock()
	}
	wall := make([]time.Duration, 0, b.N)
	cpu := make([]time.Duration, 0, b.N)
	var peak int64
	b.ResetTimer()
	for range b.N {
		t0, c0 := time.Now(), cpuTime()
		p, err := s.StepPeak()
		if err != nil {
			b.Fatal(err)
		}
		wall = append(wall, time.Since(t0))
		cpu = append(cpu, cpuTime()-c0)
		peak = max(peak, p)
	}
	b.StopTimer()
	b.ReportMetric(float64(median(wall).Nanoseconds())/1e6, "ms/step")
	b.ReportMetric(float64(median(cpu).Nanoseconds())/1e6, "cpu-ms/step")
	b.ReportMetric(float64(peak), "peak-B")
}

// detBatches are the batch sizes of the inference rows.
var detBatches = []int{1, 8}

// BenchmarkDetInference times the deployed evaluation program of
// ppyoloe_s (NewDetInference) at batch 1 and 8, compiled plainly and
// optimized as gopir run compiles inference programs: ms/inference is the
// median run, cpu-ms/inference its median process CPU time. Each form is
// prepared inside its own sub-benchmark, so that -bench
// 'DetInference/compile=optimized' does not prepare the other.
func BenchmarkDetInference(b *testing.B) {
	threads := runtime.GOMAXPROCS(0)
	for _, c := range []struct {
		name      string
		optimized bool
	}{{"plain", false}, {"optimized", true}} {
		b.Run("compile="+c.name, func(b *testing.B) {
			d, err := NewDetInference(threads, detBatches, c.optimized)
			if err != nil {
				b.Fatal(err)
			}
			defer d.Close()
			for _, batch := range detBatches {
				b.Run(fmt.Sprintf("b=%d", batch), func(b *testing.B) { benchDetRuns(b, d, batch) })
			}
		})
	}
}

// benchDetRuns times d's runs at batch size batch after one warm-up run.
func benchDetRuns(b *testing.B, d *DetInference, batch int) {
	if err := d.Run(batch); err != nil { // warm-up
		b.Fatal(err)
	}
	wall := make([]time.Duration, 0, b.N)
	cpu := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for range b.N {
		t0, c0 := time.Now(), cpuTime()
		if err := d.Run(batch); err != nil {
			b.Fatal(err)
		}
		wall = append(wall, time.Since(t0))
		cpu = append(cpu, cpuTime()-c0)
	}
	b.StopTimer()
	b.ReportMetric(float64(median(wall).Nanoseconds())/1e6, "ms/inference")
	b.ReportMetric(float64(median(cpu).Nanoseconds())/1e6, "cpu-ms/inference")
}

// TestDetInferenceOptimized: the program BenchmarkDetInference times (the
// deployed form, optimized) gives the deployed form's outputs as compiled
// plainly to 1e-5 of each output's largest magnitude at 320×320, batch 1,
// and to the bit with only the passes that keep the arithmetic (its
// anchors folded into constants, its convolutions fused with their bias
// and SiLU); softmax_f32, sigmoid_f32, nchwc and winograd are the passes
// that move bits. Repeated runs leave the allocator where the first left
// it.
func TestDetInferenceOptimized(t *testing.T) {
	opt, err := NewDetInference(2, []int{1}, true)
	if err != nil {
		t.Fatal(err)
	}
	defer opt.Close()
	cfg := train.Config{Model: DetModel, Batch: DetBatch}
	exact, err := newDetInference(cfg, 2, []int{1}, true, "fold_constants", "identities", "fuse_epilogue", "drop_pool_indices", "fuse_pool")
	if err != nil {
		t.Fatal(err)
	}
	defer exact.Close()
	plain, err := NewDetInference(2, []int{1}, false)
	if err != nil {
		t.Fatal(err)
	}
	defer plain.Close()
	for _, c := range []struct {
		d      *DetInference
		op     string
		passes string
	}{{opt, "conv2d_fused", "all passes"}, {opt, "softmax_f32", "all passes"}, {opt, "sigmoid_f32", "all passes"}, {exact, "conv2d_fused", "exact passes"}} {
		n := 0
		c.d.exe.Program().Walk(func(op *ir.Op) bool {
			if op.Name() == c.op {
				n++
			}
			return true
		})
		if n == 0 {
			t.Fatalf("the program optimized by the %s has no %s", c.passes, c.op)
		}
	}
	want, err := plain.exe.Run(context.Background(), map[string]*tensor.Tensor{"image": plain.images[1]})
	if err != nil {
		t.Fatal(err)
	}
	defer want.Release()
	for _, c := range []struct {
		d     *DetInference
		exact bool
	}{{opt, false}, {exact, true}} {
		got, err := c.d.exe.Run(context.Background(), map[string]*tensor.Tensor{"image": c.d.images[1]})
		if err != nil {
			t.Fatal(err)
		}
		for _, name := range []string{"scores", "boxes"} {
			w, g := want[name].F32(), got[name].F32()
			if len(g) != len(w) {
				t.Fatalf("%s: %d values, want %d", name, len(g), len(w))
			}
			var big float64
			for _, v := range w {
				big = max(big, math.Abs(float64(v)))
			}
			for i := range w {
				if c.exact && math.Float32bits(g[i]) != math.Float32bits(w[i]) {
					t.Fatalf("%s[%d]: optimized by the exact passes %v, plain %v", name, i, g[i], w[i])
				}
				if d := math.Abs(float64(g[i] - w[i])); d > 1e-5*big {
					t.Fatalf("%s[%d]: optimized %v, plain %v: %.3g apart, more than 1e-5 of %.3g", name, i, g[i], w[i], d, big)
				}
			}
		}
		got.Release()
	}
	for _, d := range []*DetInference{opt, exact} {
		base := d.alloc.Stats().Allocated.Current
		for range 3 {
			if err := d.Run(1); err != nil {
				t.Fatal(err)
			}
			if now := d.alloc.Stats().Allocated.Current; now != base {
				t.Fatalf("after a run: %d bytes allocated, %d before", now, base)
			}
		}
	}
}
