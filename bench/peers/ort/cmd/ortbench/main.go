// Command ortbench runs an ONNX model with ONNX Runtime (CPU), checks its
// outputs against golden .npy files and times inference.
//
//	go run ./cmd/ortbench -golden ../../../onnx/testdata/models/cnn -batch 1,8,64 -threads 1,2
//	go run ./cmd/ortbench -model m.onnx -in x=x.npy -want y=y.npy -batch 8 -threads 2
//
// (run from bench/peers/ort, its module). With -golden DIR it reads
// DIR/manifest.json (tools/onnx_export.py): the model is the manifest's
// first .onnx file unless -model says otherwise, every case is checked, and
// case 0's inputs are the timing inputs. Otherwise -in NAME=FILE gives each
// graph input and -want NAME=FILE the expected outputs (optional).
//
// Checks run with -threads' first value. Each prints
//
//	ort MODEL/check/CASE ok|FAIL OUTPUT: max abs err E, max rel err R, max |want| W ...
//
// "ok" means every element is within 1e-4·|want| + 1e-5·max(1, max|want|).
// When every check passes, a last line gives the largest absolute error:
//
//	ort MODEL/max-abs-err E (over N outputs of K cases)
//
// Timing makes a batch of each size in -batch by repeating the timing
// inputs' rows along their "batch" dimension (the manifest's dim_param; axis
// 0 without a manifest), opens a session per thread count (N intra-op
// threads, 1 inter-op thread, sequential execution, ORT's default graph
// optimizations) and prints
//
//	ort MODEL/bB/tT MS ms/inference (median of R rounds, range LO–HI, N runs; CPU C ms/inference)
//
// (MODEL/bB/tT/no-spin with -no-spin), where each round runs for -round (at least 5 runs) after -warmup, the
// round's figure is its median run, and MS is the median of the rounds; C
// is the process CPU time (all threads) per run, median over the rounds.
// -batch 0 times the inputs as they are (models without a batch dimension).
// The library comes from $GOPIR_ORT_LIB or install.sh's place; -version
// prints "ort version VERSION LIBRARY" and exits, or fails when the
// library is missing.
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/gopir/gopir/bench/peers/ort"
)

type pairs []string

func (p *pairs) String() string     { return strings.Join(*p, ",") }
func (p *pairs) Set(s string) error { *p = append(*p, s); return nil }

var (
	model   = flag.String("model", "", ".onnx file (default: the -golden manifest's)")
	golden  = flag.String("golden", "", "directory with manifest.json and the golden .npy files (tools/onnx_export.py)")
	batches = flag.String("batch", "0", "comma-separated batch sizes to time; 0: the inputs as they are")
	threads = flag.String("threads", "1", "comma-separated intra-op thread counts")
	rounds  = flag.Int("rounds", 5, "timing rounds")
	round   = flag.Duration("round", 500*time.Millisecond, "length of a timing round")
	warmup  = flag.Duration("warmup", 300*time.Millisecond, "untimed runs before the rounds")
	noSpin  = flag.Bool("no-spin", false, "intra-op threads sleep instead of spinning")
	opt     = flag.String("opt", "all", "ORT graph optimization level: all, extended, basic or none")
	noCheck = flag.Bool("no-check", false, "skip the golden checks")
	profile = flag.String("profile", "", "write ORT's per-node profile of each timing session to PREFIX_tT_*.json (a Chrome trace)")
	version = flag.Bool("version", false, "print ORT's version and library path, and exit (an error if the library is missing)")
	ins     pairs
	wants   pairs
)

func main() {
	flag.Var(&ins, "in", "NAME=FILE.npy: a graph input (repeat)")
	flag.Var(&wants, "want", "NAME=FILE.npy: an expected output (repeat)")
	flag.Parse()
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "ortbench:", err)
		os.Exit(1)
	}
}

func ints(s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 0 {
			return nil, fmt.Errorf("bad number %q", f)
		}
		out = append(out, n)
	}
	return out, nil
}

type check struct {
	name    string
	inputs  []*ort.Array
	outputs []*ort.Array // nil entries: not checked
}

func run() error {
	bs, err := ints(*batches)
	if err != nil {
		return err
	}
	ts, err := ints(*threads)
	if err != nil {
		return err
	}
	v, err := ort.Init()
	if err != nil {
		return err
	}
	lib, _ := ort.Library()
	if *version {
		fmt.Printf("ort version %s %s\n", v, lib)
		return nil
	}
	fmt.Printf("# ONNX Runtime %s (%s), onnxruntime_go v1.27.0 (C API version 24)\n", v, lib)

	var man *ort.Manifest
	path := *model
	if *golden != "" {
		if man, err = ort.ReadManifest(*golden); err != nil {
			return err
		}
		if path == "" {
			path = man.ModelPath()
		}
	}
	if path == "" {
		return fmt.Errorf("give -model or -golden")
	}
	name := strings.TrimSuffix(filepath.Base(path), ".onnx")

	sess, err := ort.Open(path, ort.Options{IntraOpThreads: ts[0], NoSpin: *noSpin, Optimization: *opt})
	if err != nil {
		return err
	}
	var checks []check
	batchAxis := make([]int, len(sess.Inputs))
	if man != nil {
		for i := range man.Cases {
			c, err := man.Case(i)
			if err != nil {
				return err
			}
			checks = append(checks, check{c.Name, c.Inputs, c.Outputs})
		}
		for i, in := range sess.Inputs {
			batchAxis[i] = -1
			for _, v := range man.Inputs {
				if v.Name == in.Name {
					batchAxis[i] = v.BatchAxis()
				}
			}
		}
	} else {
		c := check{name: "given", inputs: make([]*ort.Array, len(sess.Inputs)), outputs: make([]*ort.Array, len(sess.Outputs))}
		var inNames, outNames []string
		for _, v := range sess.Inputs {
			inNames = append(inNames, v.Name)
		}
		for _, v := range sess.Outputs {
			outNames = append(outNames, v.Name)
		}
		if err := readPairs(ins, inNames, c.inputs, true); err != nil {
			return err
		}
		if err := readPairs(wants, outNames, c.outputs, false); err != nil {
			return err
		}
		checks = append(checks, c)
		for i, in := range sess.Inputs {
			batchAxis[i] = -1
			if len(in.Dimensions) > 0 && in.Dimensions[0] < 0 {
				batchAxis[i] = 0
			}
		}
	}

	failed := false
	if !*noCheck {
		worst, compared := 0.0, 0
		for _, c := range checks {
			got, err := sess.Run(c.inputs)
			if err != nil {
				fmt.Printf("ort %s/check/%s FAIL %v\n", name, c.name, err)
				failed = true
				continue
			}
			for i, want := range c.outputs {
				if want == nil {
					continue
				}
				d := ort.Compare(got[i], want)
				worst, compared = max(worst, d.MaxAbs), compared+1
				status := "ok"
				if !d.OK(got[i], want) {
					status, failed = "FAIL", true
				}
				if d.ShapeError != "" {
					fmt.Printf("ort %s/check/%s %s %s: %s\n", name, c.name, status, sess.Outputs[i].Name, d.ShapeError)
					continue
				}
				fmt.Printf("ort %s/check/%s %s %s: max abs err %.3g, max rel err %.3g, max |want| %.3g, shape %v\n",
					name, c.name, status, sess.Outputs[i].Name, d.MaxAbs, d.MaxRel, d.MaxWant, want.Shape)
			}
		}
		if !failed && compared > 0 {
			fmt.Printf("ort %s/max-abs-err %.3g (over %d outputs of %d cases)\n", name, worst, compared, len(checks))
		}
	}
	sess.Close()

	timing := checks[0].inputs
	tag := ""
	if *noSpin {
		tag = "/no-spin"
	}
	for _, t := range ts {
		o := ort.Options{IntraOpThreads: t, NoSpin: *noSpin, Optimization: *opt}
		if *profile != "" {
			o.Profile = fmt.Sprintf("%s_t%d", *profile, t)
		}
		s, err := ort.Open(path, o)
		if err != nil {
			return err
		}
		for _, b := range bs {
			inputs := timing
			if b > 0 {
				inputs = make([]*ort.Array, len(timing))
				for i, a := range timing {
					inputs[i] = a
					if batchAxis[i] >= 0 {
						if inputs[i], err = a.BatchAxis(batchAxis[i], b); err != nil {
							return fmt.Errorf("input %s: %w", s.Inputs[i].Name, err)
						}
					}
				}
			}
			ms, lo, hi, cpu, n, err := bench(s, inputs)
			if err != nil {
				fmt.Printf("ort %s/b%d/t%d%s FAIL %v\n", name, b, t, tag, err)
				failed = true
				continue
			}
			fmt.Printf("ort %s/b%d/t%d%s %.4g ms/inference (median of %d rounds, range %.4g–%.4g, %d runs; CPU %.4g ms/inference)\n", name, b, t, tag, ms, *rounds, lo, hi, n, cpu)
		}
		s.Close()
	}
	if failed {
		return fmt.Errorf("some checks or runs failed")
	}
	return nil
}

// readPairs fills dst (in the order of names) from NAME=FILE pairs; every
// entry is required when all is set.
func readPairs(ps pairs, names []string, dst []*ort.Array, all bool) error {
	for _, p := range ps {
		k, f, ok := strings.Cut(p, "=")
		if !ok {
			return fmt.Errorf("want NAME=FILE.npy, got %q", p)
		}
		i := slices.Index(names, k)
		if i < 0 {
			return fmt.Errorf("the model has no input or output %q", k)
		}
		a, err := ort.ReadNPY(f)
		if err != nil {
			return err
		}
		dst[i] = a
	}
	if all {
		for i, a := range dst {
			if a == nil {
				return fmt.Errorf("no -in for input %s", names[i])
			}
		}
	}
	return nil
}

// bench times s on inputs: the median over rounds of each round's median
// run, with the range of the rounds' figures, the median over rounds of the
// process CPU time per run (all of ORT's threads) and the number of timed
// runs.
func bench(s *ort.Session, inputs []*ort.Array) (ms, lo, hi, cpu float64, runs int, err error) {
	p, err := s.Prepare(inputs)
	if err != nil {
		return
	}
	defer p.Close()
	for start, k := time.Now(), 0; k < 3 || time.Since(start) < *warmup; k++ {
		if err = s.RunPrepared(p); err != nil {
			return
		}
	}
	var figs, cpus []float64
	for range *rounds {
		var ts []float64
		c0 := cpuTime()
		for start := time.Now(); len(ts) < 5 || time.Since(start) < *round; {
			t0 := time.Now()
			if err = s.RunPrepared(p); err != nil {
				return
			}
			ts = append(ts, float64(time.Since(t0).Nanoseconds())/1e6)
		}
		cpus = append(cpus, float64((cpuTime()-c0).Nanoseconds())/1e6/float64(len(ts)))
		runs += len(ts)
		figs = append(figs, median(ts))
	}
	return median(figs), slices.Min(figs), slices.Max(figs), median(cpus), runs, nil
}

// cpuTime is the process's user and system CPU time so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func median(v []float64) float64 {
	v = slices.Clone(v)
	slices.Sort(v)
	if len(v)%2 == 1 {
		return v[len(v)/2]
	}
	return (v[len(v)/2-1] + v[len(v)/2]) / 2
}
