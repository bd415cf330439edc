package bench

import (
	"flag"
	"fmt"
	"os"
	"runtime"
	"slices"
	"testing"
	"time"
)

// noOptimize makes BenchmarkONNXInference run the programs as imported,
// for before/after comparisons of the inference passes.
var noOptimize = flag.Bool("no-optimize", false, "BenchmarkONNXInference: run the imported programs without the inference passes")

// BenchmarkONNXInference times one inference of each exported model
// (InferenceModels) at batch 1, 8 and 64 (ctrlflow, without a batch
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
// The programs are optimized for inference (package optimize) unless the
// test binary gets -no-optimize.
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
						if in, err = NewInference(models, model, threads, !*noOptimize); err != nil {
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
					// Warm-up: the allocator's cache filled for this batch (one run
					// does it; resnet18ish takes about 0.3–0.6 s at batch 64).
					for start, k := time.Now(), 0; k < 1 || time.Since(start) < 50*time.Millisecond; k++ {
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

// TestInference checks what BenchmarkONNXInference relies on: each model
// imports, matches its goldens, and Feeds makes batches of the golden rows
// in order. resnet18ish runs when its .onnx file is there and not in
// -short mode.
func TestInference(t *testing.T) {
	models, err := ModelsDir()
	if err != nil {
		t.Fatal(err)
	}
	for _, model := range InferenceModels {
		t.Run(model, func(t *testing.T) {
			man, err := ReadManifest(models, model)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := os.Stat(man.ModelPath()); modelMissing(err) || (model == "resnet18ish" && testing.Short()) {
				t.Skipf("%s absent or -short", man.ModelPath())
			}
			for _, optimized := range []bool{false, true} {
				in, err := NewInference(models, model, 2, optimized)
				if err != nil {
					t.Fatal(err)
				}
				worst, err := in.Check()
				in.Close()
				if err != nil {
					t.Fatalf("optimized %v: %v", optimized, err)
				}
				t.Logf("optimized %v: max abs err %.3g, batches %v", optimized, worst, man.Batches())
			}
			in, err := NewInference(models, model, 2, true)
			if err != nil {
				t.Fatal(err)
			}
			defer in.Close()
			golden, err := in.caseInputs(0)
			if err != nil {
				t.Fatal(err)
			}
			defer ReleaseFeeds(golden)
			if want := map[string][]int{"mlp": {1, 8, 64}, "cnn": {1, 8, 64}, "resnet18ish": {1, 8, 64}, "ctrlflow": {2}}[model]; !slices.Equal(man.Batches(), want) {
				t.Errorf("batches %v, want %v", man.Batches(), want)
			}
			feeds, err := in.Feeds(5)
			if err != nil {
				t.Fatal(err)
			}
			defer ReleaseFeeds(feeds)
			for i, v := range man.Inputs {
				g, f := golden[v.Name], feeds[v.Name]
				if man.batchAxis(i) < 0 {
					if !slices.Equal(f.Shape(), g.Shape()) {
						t.Errorf("%s: shape %v, want %v as it is", v.Name, f.Shape(), g.Shape())
					}
					continue
				}
				// Batch axis 0 in every model: row r of the batch is golden row r mod rows.
				rows, row := g.Shape()[0], g.Len()/g.Shape()[0]
				if f.Shape()[0] != 5 || !slices.Equal(f.Shape()[1:], g.Shape()[1:]) {
					t.Fatalf("%s: shape %v from %v", v.Name, f.Shape(), g.Shape())
				}
				for r := range 5 {
					if !slices.Equal(f.F32()[r*row:(r+1)*row], g.F32()[r%rows*row:(r%rows+1)*row]) {
						t.Errorf("%s: row %d is not golden row %d", v.Name, r, r%rows)
					}
				}
			}
			if err := in.Run(feeds); err != nil {
				t.Fatal(err)
			}
		})
	}
}
