package bench

import (
	"fmt"
	"os"
	"runtime"
	"testing"
	"time"
)

// BenchmarkONNXInference times one inference of each exported model
// (InferenceModels) at batch 1 and 64 (ctrlflow, without a batch
// dimension: at its fixed batch 2): exec's Run and the release of its
// results, on a batch made by repeating the golden input rows (as
// bench/peers/ort's ortbench makes ONNX Runtime's). Before timing, every
// golden case runs once at its own batch and must match PyTorch's outputs
// (to 1e-4·max(1, max |want|)), or the benchmark fails.
//
// Metrics: ms/inference is the median wall time of the timed runs (as
// ortbench reports ONNX Runtime's; sec/op is the mean), cpu-ms/inference
// the process CPU time (all threads) per run, over all the timed runs (a
// getrusage per run would cost more than a small model's run: mlp at batch
// 1 takes about 17 µs), max-abs-err-nano the largest
// |gopir − PyTorch| over the golden cases in units of 1e-9 (the testing
// package prints metrics with 7 decimals). Kernels use GOMAXPROCS threads:
// run with one -cpu value per process (docs/benchmarks.md says why).
// resnet18ish is skipped when its .onnx file, which is git-ignored, is
// absent: `/usr/bin/python3 tools/onnx_export.py --models resnet18ish`.
func BenchmarkONNXInference(b *testing.B) {
	models, err := ModelsDir()
	if err != nil {
		b.Fatal(err)
	}
	for _, model := range InferenceModels {
		b.Run("model="+model, func(b *testing.B) {
			man, err := ReadManifest(models, model)
			if err != nil {
				b.Fatal(err)
			}
			if _, err := os.Stat(man.ModelPath()); modelMissing(err) {
				b.Skipf("%s is absent (git-ignored): /usr/bin/python3 tools/onnx_export.py --models %s writes it", man.ModelPath(), model)
			}
			cache := map[int]*Inference{}
			defer func() {
				for _, in := range cache {
					in.Close()
				}
			}()
			var maxErr float64
			for _, batch := range man.Batches() {
				b.Run(fmt.Sprintf("batch=%d", batch), func(b *testing.B) {
					// Read here, not above: -cpu sets GOMAXPROCS per leaf.
					threads := runtime.GOMAXPROCS(0)
					in := cache[threads]
					if in == nil {
						if in, err = NewInference(models, model, threads); err != nil {
							b.Fatal(err)
						}
						if maxErr, err = in.Check(); err != nil {
							in.Close()
							b.Fatal(err)
						}
						cache[threads] = in
					}
					feeds, err := in.Feeds(batch)
					if err != nil {
						b.Fatal(err)
					}
					defer ReleaseFeeds(feeds)
					// Warm-up: the allocator's cache filled for this batch.
					for start, k := time.Now(), 0; k < 2 || time.Since(start) < 50*time.Millisecond; k++ {
						if err := in.Run(feeds); err != nil {
							b.Fatal(err)
						}
					}
					var wall []time.Duration
					c0 := cpuTime()
					for b.Loop() {
						t0 := time.Now()
						if err := in.Run(feeds); err != nil {
							b.Fatal(err)
						}
						wall = append(wall, time.Since(t0))
					}
					cpu := cpuTime() - c0
					b.ReportMetric(float64(median(wall).Nanoseconds())/1e6, "ms/inference")
					b.ReportMetric(float64(cpu.Nanoseconds())/1e6/float64(len(wall)), "cpu-ms/inference")
					b.ReportMetric(maxErr*1e9, "max-abs-err-nano")
				})
			}
		})
	}
}
