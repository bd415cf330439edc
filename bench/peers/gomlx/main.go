// Command gomlx-step times one training step (forward, backward and Adam) of
// the benchmark models mlp and lenet with GoMLX's pure-Go backend
// ("simplego", registered as "go"), for gopir's bench/run.
//
//	go run . [-models mlp,lenet] [-seconds 1] [-warmup 5] [-threads 2]
//
// It prints one line per model, "gomlx MODEL MS_PER_STEP STEPS", where
// MS_PER_STEP is the median over as many steps as fit in -seconds (at least
// -min-steps) after -warmup untimed steps (the first of which compiles the
// graph), or "gomlx MODEL FAIL REASON" when GoMLX cannot run the step.
//
// The models have the shapes of gopir's: mlp is 784-512-256-10 with ReLU
// on a batch of 128; lenet is conv 1→6 5×5 (pad 2, "same"), ReLU, max-pool
// 2, conv 6→16 5×5 (no pad), ReLU, max-pool 2, 400-120-84-10 with ReLU, on
// a batch of 64. Both end in softmax cross-entropy (mean over the batch)
// and train with Adam (lr 1e-3, betas 0.9/0.999, epsilon 1e-8). Images are
// laid out channels-last ([B,28,28,1]), GoMLX's default; the arithmetic is
// the same as gopir's and PyTorch's channels-first layout. The data is a
// fixed random batch.
package main

import (
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"regexp"
	"runtime"
	"runtime/pprof"
	"slices"
	"strings"
	"time"

	"github.com/gomlx/gomlx/backends"
	"github.com/gomlx/gomlx/backends/simplego"
	. "github.com/gomlx/gomlx/pkg/core/graph"
	"github.com/gomlx/gomlx/pkg/core/tensors"
	"github.com/gomlx/gomlx/pkg/ml/context"
	"github.com/gomlx/gomlx/pkg/ml/layers"
	"github.com/gomlx/gomlx/pkg/ml/layers/activations"
	"github.com/gomlx/gomlx/pkg/ml/train"
	"github.com/gomlx/gomlx/pkg/ml/train/losses"
	"github.com/gomlx/gomlx/pkg/ml/train/optimizers"
)

func mlp(ctx *context.Context, _ any, inputs []*Node) []*Node {
	x := inputs[0] // [B,784]
	h := activations.Relu(layers.DenseWithBias(ctx.In("fc1"), x, 512))
	h = activations.Relu(layers.DenseWithBias(ctx.In("fc2"), h, 256))
	return []*Node{layers.DenseWithBias(ctx.In("fc3"), h, 10)}
}

// poolReshape selects how lenet max-pools: GoMLX's MaxPool op (the
// default), whose gradient (SelectAndScatterMax) SimpleGo v0.26 does not
// implement, or the same 2×2/stride-2 max as a reshape and ReduceMax, which
// it does (the gradient of the convolution then fails instead: it needs
// Reverse, also missing from SimpleGo v0.26).
var poolReshape = flag.Bool("pool-reshape", false, "max-pool as reshape+ReduceMax instead of GoMLX's MaxPool op")

// pool2 is a 2×2 max-pool with stride 2 on [B,H,W,C] (H and W even).
func pool2(x *Node) *Node {
	if !*poolReshape {
		return MaxPool(x).Window(2).Done()
	}
	d := x.Shape().Dimensions
	b, h, w, c := d[0], d[1], d[2], d[3]
	return ReduceMax(Reshape(x, b, h/2, 2, w/2, 2, c), 2, 4)
}

func lenet(ctx *context.Context, _ any, inputs []*Node) []*Node {
	x := inputs[0] // [B,28,28,1]
	b := x.Shape().Dimensions[0]
	h := layers.Convolution(ctx.In("conv1"), x).Channels(6).KernelSize(5).PadSame().Done()
	h = pool2(activations.Relu(h)) // [B,14,14,6]
	h = layers.Convolution(ctx.In("conv2"), h).Channels(16).KernelSize(5).NoPadding().Done()
	h = pool2(activations.Relu(h)) // [B,5,5,16]
	h = Reshape(h, b, 400)
	h = activations.Relu(layers.DenseWithBias(ctx.In("fc1"), h, 120))
	h = activations.Relu(layers.DenseWithBias(ctx.In("fc2"), h, 84))
	return []*Node{layers.DenseWithBias(ctx.In("fc3"), h, 10)}
}

func randomBatch(model string) (x, y *tensors.Tensor) {
	r := rand.New(rand.NewPCG(1, 2))
	var batch int
	var dims []int
	switch model {
	case "mlp":
		batch, dims = 128, []int{128, 784}
	default:
		batch, dims = 64, []int{64, 28, 28, 1}
	}
	n := 1
	for _, d := range dims {
		n *= d
	}
	xs := make([]float32, n)
	for i := range xs {
		xs[i] = float32(r.NormFloat64())
	}
	ys := make([]int32, batch)
	for i := range ys {
		ys[i] = int32(r.IntN(10))
	}
	return tensors.FromFlatDataAndDimensions(xs, dims...), tensors.FromFlatDataAndDimensions(ys, batch, 1)
}

func run(backend backends.Backend, model string, seconds float64, warmup, minSteps int) (float64, int, error) {
	ctx := context.New()
	fn := mlp
	if model == "lenet" {
		fn = lenet
	}
	opt := optimizers.Adam().LearningRate(1e-3).Betas(0.9, 0.999).Epsilon(1e-8).Done()
	tr := train.NewTrainer(backend, ctx, fn, losses.SparseCategoricalCrossEntropyLogits, opt, nil, nil)
	x, y := randomBatch(model)
	step := func() error {
		ms, err := tr.TrainStep(nil, []*tensors.Tensor{x}, []*tensors.Tensor{y})
		for _, m := range ms {
			m.FinalizeAll()
		}
		return err
	}
	for range max(1, warmup) {
		if err := step(); err != nil {
			return 0, 0, err
		}
	}
	var times []float64
	t0 := time.Now()
	for len(times) < minSteps || time.Since(t0).Seconds() < seconds {
		t := time.Now()
		if err := step(); err != nil {
			return 0, 0, err
		}
		times = append(times, float64(time.Since(t).Nanoseconds())/1e6)
	}
	slices.Sort(times)
	return times[len(times)/2], len(times), nil
}

// notImplemented finds the op SimpleGo reports as missing.
var notImplemented = regexp.MustCompile(`op "(\w+)" not implemented in SimpleGo`)

// short says which op is missing, or returns the error's text.
func short(err error) string {
	if err == nil {
		return "runs"
	}
	if m := notImplemented.FindStringSubmatch(err.Error()); m != nil {
		return fmt.Sprintf("op %s is not implemented in SimpleGo v0.26", m[1])
	}
	return err.Error()
}

func main() {
	models := flag.String("models", "mlp,lenet", "comma-separated models")
	seconds := flag.Float64("seconds", 1, "timed seconds per model")
	warmup := flag.Int("warmup", 3, "untimed steps first (the first compiles)")
	minSteps := flag.Int("min-steps", 3, "timed steps at least")
	threads := flag.Int("threads", 2, "GOMAXPROCS and the backend's parallelism")
	cpuprofile := flag.String("cpuprofile", "", "write a CPU profile of the timed steps to this file")
	flag.Parse()
	if *cpuprofile != "" {
		f, err := os.Create(*cpuprofile)
		if err != nil {
			fmt.Fprintln(os.Stderr, "gomlx:", err)
			os.Exit(1)
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			fmt.Fprintln(os.Stderr, "gomlx:", err)
			os.Exit(1)
		}
		defer pprof.StopCPUProfile()
	}
	runtime.GOMAXPROCS(*threads)
	backend, err := simplego.New(fmt.Sprintf("parallelism=%d", *threads)) // prints a line about it
	if err != nil {
		fmt.Fprintln(os.Stderr, "gomlx:", err)
		os.Exit(1)
	}
	defer backend.Finalize()
	for _, m := range strings.Split(*models, ",") {
		ms, n, err := run(backend, m, *seconds, *warmup, *minSteps)
		if err != nil && m == "lenet" && !*poolReshape {
			// Say what else stands in the way once max-pool no longer
			// does.
			*poolReshape = true
			ms, n, err2 := run(backend, m, *seconds, *warmup, *minSteps)
			*poolReshape = false
			if err2 == nil {
				fmt.Printf("gomlx lenet-reshapepool %.4f %d\n", ms, n)
			}
			err = fmt.Errorf("%s; with max-pool as reshape+ReduceMax instead: %s", short(err), short(err2))
		}
		if err != nil {
			// One line, so that bench/run can put the reason in its table.
			fmt.Printf("gomlx %s FAIL %s\n", m, strings.Join(strings.Fields(err.Error()), " "))
			continue
		}
		fmt.Printf("gomlx %s %.4f %d\n", m, ms, n)
	}
}
