package bench

import (
	"fmt"
	"runtime"
	"testing"
	"time"
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
// ppyoloe_s (NewDetInference) at batch 1 and 8: ms/inference is the median
// run, cpu-ms/inference its median process CPU time.
func BenchmarkDetInference(b *testing.B) {
	threads := runtime.GOMAXPROCS(0)
	d, err := NewDetInference(threads, detBatches)
	if err != nil {
		b.Fatal(err)
	}
	defer d.Close()
	for _, batch := range detBatches {
		b.Run(fmt.Sprintf("b=%d", batch), func(b *testing.B) {
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
		})
	}
}
