package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"sort"

	"github.com/spf13/cobra"

	"github.com/gopir/gopir/exec"
	"github.com/gopir/gopir/memory"
	"github.com/gopir/gopir/timeline"
)

type runFlags struct {
	params     string
	feeds      []string
	repeat     int
	memLimit   string
	checkLeaks bool
	json       bool
	view       viewFlags
	optimize   optimizeFlags
}

func newRunCmd() *cobra.Command {
	var f runFlags
	cmd := &cobra.Command{
		Use:   "run (FILE.pir | MODEL.onnx | DIR)",
		Short: "Run a program or an ONNX model and print its fetches and memory statistics",
		Long: `Run parses, verifies and compiles FILE.pir, then runs it --repeat times.
MODEL.onnx is imported first (its initializers are the parameters); DIR is
a directory written by gopir import (program.pir and params.safetensors).
--params FILE.safetensors gives the parameters of a text program.

Each --feed NAME=VALUE gives the input of the "data" op named NAME, or the
value of the "parameter" named NAME: a JSON number or nested array (shaped by
its nesting, typed by the op), or @file.npy. Parameters are persistable: they
count in mem_allocated. Without --json, run prints one memory line per run and the
fetches of the last run. With --json it prints one JSON object per run:
{"run","mem_allocated","mem_reserved","peak_allocated","fetch":{NAME:{"dtype","shape","data"}}}
where mem_allocated is measured after the run's fetches are released and
peak_allocated is the peak during that run.

--optimize (on by default for programs without a backward) runs the program
rewritten for inference: batch_norm and scale/shift chains folded into the
weights of the conv2d or matmul before them, bias, residual add and
activation fused into the convolution or product, identities removed,
max pooling without the indices nothing reads (docs/optimize.md); --optimize=false runs it as written, --passes LIST only
the passes named. The parameters the optimized program no longer reads are
freed, and folded ones are new persistable tensors.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runProgram(cmd, args[0], f)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.params, "params", "", "read parameter values from `FILE.safetensors`")
	fl.StringArrayVar(&f.feeds, "feed", nil, "input `NAME=VALUE` (JSON number/array or @file.npy); repeat for each input")
	fl.IntVar(&f.repeat, "repeat", 1, "run the program `N` times")
	fl.StringVar(&f.memLimit, "mem-limit", "", "cap the allocator at `SIZE` (e.g. 512MiB; at most and by default physical memory); running out exits 1")
	fl.BoolVar(&f.checkLeaks, "check-leaks", false, "fail if a run leaves any buffer behind besides its fetches")
	f.view.register(cmd)
	fl.BoolVar(&f.json, "json", false, "print one JSON object per run")
	f.optimize.register(cmd, true, "run the program rewritten for inference (folded batch_norm, fused epilogues); programs with a backward always run as written")
	return cmd
}

// runPackCache bounds the packed copies of parameters that run (and plan,
// which predicts it) keeps from one repeat to the next
// (exec.Options.PackCache): the GEMM panels of a matmul's or
// convolution's weights, made on the first run instead of on every call.
// They count in mem_allocated; more than any model's weights, so that
// every weight is packed once.
const runPackCache = 1 << 30

type runRecord struct {
	Run           int                   `json:"run"`
	MemAllocated  int64                 `json:"mem_allocated"`
	MemReserved   int64                 `json:"mem_reserved"`
	PeakAllocated int64                 `json:"peak_allocated"`
	Fetch         map[string]jsonTensor `json:"fetch"`
}

func runProgram(cmd *cobra.Command, path string, f runFlags) (err error) {
	if f.repeat < 1 {
		return badInputf("--repeat %d: want at least 1", f.repeat)
	}
	limit, err := memLimit(f.memLimit)
	if err != nil {
		return err
	}
	alloc := memory.New(memory.Options{Limit: limit})
	l, err := load(path, f.params, alloc)
	if err != nil {
		return err
	}
	defer l.release()
	view, err := f.view.open(filepath.Base(path), "run")
	if err != nil {
		return err
	}
	opts := exec.Options{Alloc: alloc, CheckLeaks: f.checkLeaks, PackCache: runPackCache}
	started := false
	if view != nil {
		opts.MemoryLog = view.rec.Instr
		defer func() {
			if !started {
				view.discard()
			} else if ferr := view.finish(); err == nil {
				err = ferr
			}
		}()
	}
	optimized, err := f.optimize.use(l.prog)
	if err != nil {
		return err
	}
	x, err := exec.Compile(l.prog, opts)
	if err != nil {
		return badInput(err)
	}
	l.setParams(x.Store())
	l.release() // the store holds them now
	defer func() { x.Store().Release() }()
	// Feeds live on their own allocator: they are the caller's, so the
	// run's statistics show only what the program itself allocates.
	feeds, err := parseFeeds(f.feeds, x, memory.New(memory.Options{Limit: limit}))
	if err != nil {
		return err
	}
	defer func() {
		for _, t := range feeds {
			t.Release()
		}
	}()
	if optimized {
		// The passes read the parameters' values, feeds of parameters
		// included; the program as written lets go of them, so that those
		// the optimized one no longer reads are freed.
		ox, err := compileOptimized(l.prog, x.Store(), opts, &f.optimize)
		if err != nil {
			return err
		}
		x.Store().Release()
		x = ox
	}
	out := cmd.OutOrStdout()
	started = true
	for i := range f.repeat {
		alloc.ResetPeak()
		if view != nil {
			view.begin(alloc, fmt.Sprintf("run %d", i))
		}
		res, err := x.Run(context.Background(), feeds)
		if err != nil {
			if view != nil {
				view.fail()
			}
			return runError(err)
		}
		peak := alloc.Stats().Allocated.Peak
		rec := runRecord{Run: i, PeakAllocated: peak, Fetch: map[string]jsonTensor{}}
		var text []string
		for _, name := range x.Fetches() {
			t := res[name]
			if f.json {
				rec.Fetch[name] = toJSONTensor(t)
			} else if i == f.repeat-1 {
				text = append(text, fmt.Sprintf("%s: %s", name, formatTensor(t)))
			}
		}
		res.Release()
		st := alloc.Stats()
		rec.MemAllocated, rec.MemReserved = st.Allocated.Current, st.Reserved.Current
		if view != nil {
			view.end(timeline.StepStat{Step: i, Allocated: rec.MemAllocated, Reserved: rec.MemReserved, Peak: peak})
		}
		if f.json {
			line, err := json.Marshal(rec)
			if err != nil {
				return err
			}
			fmt.Fprintln(out, string(line))
			continue
		}
		fmt.Fprintf(out, "run %d: mem_allocated: %s mem_reserved: %s peak_allocated: %s\n",
			i, human(rec.MemAllocated), human(rec.MemReserved), human(rec.PeakAllocated))
		sort.Strings(text)
		for _, line := range text {
			fmt.Fprintln(out, line)
		}
	}
	return nil
}

// runError classifies a failed run: a feed or parameter problem is bad
// input (exit 2); out of memory and everything else exit 1.
func runError(err error) error {
	var fe *exec.FeedError
	var pe *exec.MissingParameterError
	if errors.As(err, &fe) || errors.As(err, &pe) {
		return badInput(err)
	}
	return err
}
