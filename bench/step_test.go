package bench

import (
	"fmt"
	"runtime"
	"slices"
	"sync"
	"syscall"
	"testing"
	"time"
)

// steppers caches one Stepper per model across the calls the testing
// package makes to a benchmark function (b.N = 1, then larger).
var steppers = struct {
	sync.Mutex
	m map[string]*Stepper
}{m: map[string]*Stepper{}}

func stepper(b *testing.B, model string, threads int) *Stepper {
	steppers.Lock()
	defer steppers.Unlock()
	key := fmt.Sprint(model, threads)
	if s, ok := steppers.m[key]; ok {
		return s
	}
	s, err := NewStepper(model, threads)
	if err != nil {
		b.Fatal(err)
	}
	for range 5 { // warm-up: caches filled, allocator chunks reserved
		if err := s.Step(); err != nil {
			b.Fatal(err)
		}
	}
	steppers.m[key] = s
	return s
}

// BenchmarkStep times one training step (forward, backward, Adam) of mlp
// (batch 128) and lenet (batch 64) on a fixed batch, warm-up excluded.
// ms/step is the median wall time of the b.N steps (as bench/torch_step.py
// reports PyTorch's: a median shrugs off the odd step another process
// delays on a shared machine; sec/op is the mean), cpu-ms/step the median
// of the process's CPU time per step (all threads; with one thread it is
// steadier than wall time on a shared machine). Kernels use GOMAXPROCS
// threads: run with -cpu 2 (the setting; the default on 2 cores),
// then with -cpu 1 in another process (docs/benchmarks.md says why).
func BenchmarkStep(b *testing.B) {
	for _, model := range []string{"mlp", "lenet"} {
		b.Run(model, func(b *testing.B) {
			// Read here, not above: -cpu sets GOMAXPROCS per leaf benchmark,
			// after the parent function has run.
			threads := runtime.GOMAXPROCS(0)
			s := stepper(b, model, threads)
			wall := make([]time.Duration, 0, b.N)
			cpu := make([]time.Duration, 0, b.N)
			b.ResetTimer()
			for range b.N {
				t0, c0 := time.Now(), cpuTime()
				if err := s.Step(); err != nil {
					b.Fatal(err)
				}
				wall = append(wall, time.Since(t0))
				cpu = append(cpu, cpuTime()-c0)
			}
			b.StopTimer()
			b.ReportMetric(float64(median(wall).Nanoseconds())/1e6, "ms/step")
			b.ReportMetric(float64(median(cpu).Nanoseconds())/1e6, "cpu-ms/step")
		})
	}
}

func median(d []time.Duration) time.Duration {
	d = slices.Clone(d)
	slices.Sort(d)
	return d[len(d)/2]
}

// cpuTime is the CPU time the process has used.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
