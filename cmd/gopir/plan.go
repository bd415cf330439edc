package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/gopir/gopir/exec"
	"github.com/gopir/gopir/ir"
	"github.com/gopir/gopir/memory"
	"github.com/gopir/gopir/train"
)

type planFlags struct {
	model      string
	backward   bool
	feedShapes []string
	batch      int
	imageSize  int
	json       bool
	fit        string
	memLimit   string
	ranks      int
	syncBN     bool
	threads    int
	dtype      string
	optimize   optimizeFlags
}

func newPlanCmd() *cobra.Command {
	var f planFlags
	cmd := &cobra.Command{
		Use:   "plan (FILE.pir | MODEL.onnx | DIR | --model NAME [--backward [--ranks N [--sync-bn]]] [--image-size S]) [--feed-shape NAME=DxD...]... [--batch B] [--fit SIZE] [--json]",
		Short: "Predict the memory of a run, to the byte, without running it",
		Long: `Plan predicts the allocated bytes of one run of a program — its peak, what
it holds when it returns, and the buffers alive at the peak — from shapes
alone, following the program as the executor runs it (docs/memory.md).

A feed's shape comes from --feed-shape NAME=128x784, or from its type
with every dynamic dim set to --batch. With --model it plans one step of
the zoo model (the evaluation program, or with --backward the training
step with its batch and optimizer state, as gopir train runs it;
--image-size S for models that take several). Where a
run depends on values, the plan says what it assumed: an "if" takes the
branch that peaks higher, a "while" runs once (a model's plan uses its
longest sequences).

--fit SIZE prints the largest batch whose planned peak fits in SIZE.

--mem-limit SIZE, with --model and --backward, plans the step gopir train
--mem-limit SIZE would run: when it does not fit, the rematerialized step
(which values are recomputed, before which op, at what cost) and its plan;
when nothing fits, the smallest limit that does (exit 1).

--ranks N, with --model and --backward, plans the step one rank of a
data-parallel job of N ranks runs (mpirun -np N gopir train): its shard
of the global --batch, its gradient buckets and all-reduces
(docs/distributed.md); --sync-bn with synchronized batch norm.

A program or model file is planned as gopir run runs it: rewritten for
inference when it has no backward (--optimize, on by default; --passes
LIST), with the packed copies of weights run keeps counted: when the
runs after the first, which hold those from their start, peak higher,
the plan is theirs (it says so).`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runPlan(cmd.OutOrStdout(), args, f, cmd.Flags().Changed("batch"))
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.model, "model", "", "plan a step of the zoo model `NAME`")
	fl.BoolVar(&f.backward, "backward", false, "with --model: the training step (forward, backward, optimizer)")
	fl.StringArrayVar(&f.feedShapes, "feed-shape", nil, "the shape of feed `NAME=DxD...`; repeat for each")
	fl.IntVar(&f.batch, "batch", 0, "batch size `B`: dynamic dims of the feeds, or the model's batch")
	fl.IntVar(&f.imageSize, "image-size", 0, "with --model: image side `S`, for models that take several")
	fl.BoolVar(&f.json, "json", false, "print the plan as JSON")
	fl.StringVar(&f.fit, "fit", "", "print the largest batch whose planned peak fits in `SIZE`")
	fl.StringVar(&f.memLimit, "mem-limit", "", "with --model --backward: the step gopir train would run under a memory limit of `SIZE`, rematerialized to fit")
	fl.IntVar(&f.ranks, "ranks", 1, "with --model --backward: the step of one rank of a data-parallel job of `N` ranks (--batch is the global batch)")
	fl.BoolVar(&f.syncBN, "sync-bn", false, "with --ranks: synchronized batch norm")
	fl.StringVar(&f.dtype, "dtype", "f32", "with --model: the float type `T` of the step, f32 or f64 (gopir train --dtype)")
	fl.IntVar(&f.threads, "threads", 0, "with --model: the kernel threads of the step `T` (default: all cores, as gopir train; under mpirun each rank has cores/ranks): the convolutions' scratch grows with them")
	f.optimize.register(cmd, true, "plan the program rewritten for inference, as run runs it; programs with a backward are planned as written")
	return cmd
}

// planner plans a run at a batch size.
type planFunc func(batch int) (*exec.Plan, error)

func runPlan(out io.Writer, args []string, f planFlags, batchGiven bool) error {
	var plan planFunc
	dt, err := floatDType(f.dtype)
	if err != nil {
		return err
	}
	switch {
	case dt != ir.F32 && f.model == "":
		return badInputf("--dtype needs --model")
	case f.model != "" && len(args) == 1:
		return badInputf("give either --model or a program, not both")
	case f.ranks < 1 || (f.ranks > 1 || f.syncBN) && (f.model == "" || !f.backward):
		return badInputf("--ranks and --sync-bn plan a training step: give --model NAME --backward, and --ranks at least 1")
	case f.threads < 0 || f.threads > 0 && f.model == "":
		return badInputf("--threads %d: give --model NAME and a count of at least 1", f.threads)
	case f.ranks > 1 && f.fit != "":
		return badInputf("--fit searches the batch of one process; with --ranks, plan a --batch")
	case f.imageSize != 0 && f.model == "":
		return badInputf("--image-size needs --model")
	case f.imageSize < 0:
		return badInputf("--image-size %d: want a positive size", f.imageSize)
	case f.model != "":
		plan = func(batch int) (*exec.Plan, error) {
			return train.Plan(train.Config{Model: f.model, Batch: batch, ImageSize: f.imageSize, DType: dt, Ranks: f.ranks, SyncBN: f.syncBN, Threads: f.threads}, f.backward)
		}
	case f.backward:
		return badInputf("--backward needs --model")
	case len(args) == 1:
		l, err := load(args[0], "", memory.New(memory.Options{}))
		if err != nil {
			return err
		}
		defer l.release()
		optimized, err := f.optimize.use(l.prog)
		if err != nil {
			return err
		}
		opts := exec.Options{PackCache: runPackCache}
		x, err := exec.Compile(l.prog, opts)
		if err != nil {
			return badInput(err)
		}
		l.setParams(x.Store())
		if optimized {
			ox, err := compileOptimized(l.prog, x.Store(), opts, &f.optimize)
			x.Store().Release()
			if err != nil {
				return err
			}
			x = ox
		}
		defer x.Store().Release()
		shapes, err := parseFeedShapes(f.feedShapes)
		if err != nil {
			return err
		}
		plan = func(batch int) (*exec.Plan, error) { return planProgram(x, shapes, batch) }
	default:
		return badInputf("give --model NAME or a program")
	}
	if f.memLimit != "" {
		if f.model == "" || !f.backward || f.fit != "" {
			return badInputf("--mem-limit plans a training step: give --model NAME --backward, without --fit")
		}
		limit, err := parseSize(f.memLimit)
		if err != nil || limit < 1 {
			return badInputf("--mem-limit %q: want a positive size like 16MiB", f.memLimit)
		}
		res, p, err := train.Rematerialize(train.Config{Model: f.model, Batch: f.batch, ImageSize: f.imageSize, DType: dt, MemLimit: limit, Ranks: f.ranks, SyncBN: f.syncBN, Threads: f.threads})
		if err != nil {
			return planError(err)
		}
		return printRemat(out, res, p, limit, f.json)
	}
	if f.fit != "" {
		limit, err := parseSize(f.fit)
		if err != nil || limit < 1 {
			return badInputf("--fit %q: want a positive size like 16MiB", f.fit)
		}
		return fitBatch(out, plan, limit, f.json)
	}
	if batchGiven && f.batch < 1 {
		return badInputf("--batch %d: want at least 1", f.batch)
	}
	p, err := plan(f.batch)
	if err != nil {
		return planError(err)
	}
	return printPlan(out, p, f.json)
}

// planProgram plans x with the given feed shapes; a dynamic dim of
// another feed is batch.
func planProgram(x *exec.Executable, shapes map[string][]int, batch int) (*exec.Plan, error) {
	types := map[string]ir.Type{}
	for _, s := range x.Feeds() {
		if dims, ok := shapes[s.Name]; ok {
			t := ir.TensorOf(s.Type.DType, dims...)
			if !t.Refines(s.Type) {
				return nil, badInputf("--feed-shape %s=%s: the program's input %q has type %s", s.Name, shapeText(dims), s.Name, s.Type)
			}
			types[s.Name] = t
			continue
		}
		t := ir.TensorOf(s.Type.DType, s.Type.Dims...)
		for i, d := range t.Dims {
			if d == ir.Dynamic {
				if batch < 1 {
					return nil, badInputf("feed %q has type %s: give --feed-shape %s=... or --batch", s.Name, s.Type, s.Name)
				}
				t.Dims[i] = batch
			}
		}
		types[s.Name] = t
	}
	for name := range shapes {
		if !hasFeed(x, name) {
			return nil, badInputf("--feed-shape %s: the program has no input %q", name, name)
		}
	}
	first, err := x.Plan(exec.PlanOptions{Feeds: types})
	if err != nil {
		return nil, err
	}
	// Runs after the first find the packed copies of weights the first
	// made (runPackCache) and hold them from their start.
	later, err := x.Plan(exec.PlanOptions{Feeds: types, Warm: true})
	if err != nil || later.Peak <= first.Peak {
		return first, err
	}
	later.Assumed = append(later.Assumed, fmt.Sprintf("a run after the first, which holds the packed copies of weights (%d bytes) from its start; the first run peaks at %d bytes", later.Packed, first.Peak))
	return later, nil
}

func hasFeed(x *exec.Executable, name string) bool {
	for _, s := range x.Feeds() {
		if s.Name == name {
			return true
		}
	}
	return false
}

// parseFeedShapes reads NAME=DxD... flags ("NAME=" for a scalar).
func parseFeedShapes(flags []string) (map[string][]int, error) {
	shapes := map[string][]int{}
	for _, fl := range flags {
		name, spec, ok := strings.Cut(fl, "=")
		if !ok || name == "" {
			return nil, badInputf("--feed-shape %q: want NAME=DxD...", fl)
		}
		if _, dup := shapes[name]; dup {
			return nil, badInputf("--feed-shape %s: given twice", name)
		}
		dims := []int{}
		if spec != "" {
			for _, part := range strings.Split(spec, "x") {
				d, err := strconv.Atoi(part)
				if err != nil || d < 0 {
					return nil, badInputf("--feed-shape %s: %q is not a size", name, part)
				}
				dims = append(dims, d)
			}
		}
		shapes[name] = dims
	}
	return shapes, nil
}

// planError: what the planner cannot size is bad input (exit 2).
func planError(err error) error {
	var u *exec.UnplannableError
	var ue usageError
	if errors.As(err, &u) || errors.As(err, &ue) || isSetupError(err) {
		return badInput(err)
	}
	return err
}

// fitBatch finds the largest batch whose planned peak fits in limit.
func fitBatch(out io.Writer, plan planFunc, limit int64, asJSON bool) error {
	fits := func(b int) (bool, error) {
		p, err := plan(b)
		if err != nil {
			return false, planError(err)
		}
		return p.Peak <= limit, nil
	}
	ok, err := fits(1)
	if err != nil {
		return err
	}
	if !ok {
		return fmt.Errorf("ResourceExhaustedError: not even batch 1 fits in %s", human(limit))
	}
	lo, hi := 1, 2
	for {
		ok, err := fits(hi)
		if err != nil {
			return err
		}
		if !ok {
			break
		}
		lo, hi = hi, hi*2
		if hi > 1<<20 {
			return fmt.Errorf("--fit: every batch up to %d fits in %s: the program's memory does not grow with the batch", lo, human(limit))
		}
	}
	for hi-lo > 1 {
		mid := (lo + hi) / 2
		ok, err := fits(mid)
		if err != nil {
			return err
		}
		if ok {
			lo = mid
		} else {
			hi = mid
		}
	}
	p, _ := plan(lo)
	if asJSON {
		line, _ := json.Marshal(map[string]any{"fit": map[string]any{"batch": lo, "limit": limit, "peak": p.Peak}})
		fmt.Fprintln(out, string(line))
		return nil
	}
	fmt.Fprintf(out, "batch %d fits in %s (planned peak %s); batch %d does not\n", lo, human(limit), human(p.Peak), lo+1)
	return nil
}

func printPlan(out io.Writer, p *exec.Plan, asJSON bool) error {
	if asJSON {
		type buf struct {
			Op        string `json:"op"`
			Value     string `json:"value"`
			Pos       string `json:"pos"`
			Bytes     int64  `json:"bytes"`
			Workspace bool   `json:"workspace,omitempty"`
		}
		rec := struct {
			Peak    int64    `json:"peak"`
			Base    int64    `json:"steady_state"`
			End     int64    `json:"end"`
			AtPeak  []buf    `json:"at_peak"`
			Assumed []string `json:"assumed"`
			PerTrip int64    `json:"per_trip,omitempty"`
		}{Peak: p.Peak, Base: p.Base, End: p.End, Assumed: p.Assumed, PerTrip: p.PerTrip}
		for _, b := range p.AtPeak {
			rec.AtPeak = append(rec.AtPeak, buf{b.Op, b.Value, shortPos(b.Pos), b.Bytes, b.Workspace})
		}
		line, err := json.Marshal(rec)
		if err != nil {
			return err
		}
		_, err = fmt.Fprintln(out, string(line))
		return err
	}
	fmt.Fprintf(out, "peak:         %s (%d bytes)\n", human(p.Peak), p.Peak)
	fmt.Fprintf(out, "steady state: %s (%d bytes: parameters, optimizer state and feeds held before the run)\n", human(p.Base), p.Base)
	fmt.Fprintf(out, "at the end:   %s (%d bytes, fetches held)\n", human(p.End), p.End)
	if len(p.AtPeak) > 0 {
		fmt.Fprintln(out, "alive at the peak, largest first:")
		for i, b := range p.AtPeak {
			if i == 10 {
				fmt.Fprintf(out, "  ... and %d more\n", len(p.AtPeak)-10)
				break
			}
			what := b.Value
			if b.Workspace {
				what = "workspace"
			}
			fmt.Fprintf(out, "  %10s  %-20s %-6s %s\n", human(b.Bytes), b.Op, what, shortPos(b.Pos))
		}
	}
	wd, _ := os.Getwd()
	for _, a := range p.Assumed {
		if wd != "" {
			a = strings.ReplaceAll(a, wd+string(filepath.Separator), "")
		}
		fmt.Fprintln(out, "assumed:", a)
	}
	return nil
}

// shortPos writes p with its file relative to the working directory when
// it lies below it: Go-built programs record absolute source paths.
func shortPos(p ir.Pos) string {
	if wd, err := os.Getwd(); err == nil && filepath.IsAbs(p.File) {
		if rel, err := filepath.Rel(wd, p.File); err == nil && !strings.HasPrefix(rel, "..") {
			p.File = rel
		}
	}
	return p.String()
}

func shapeText(dims []int) string {
	parts := make([]string, len(dims))
	for i, d := range dims {
		parts[i] = strconv.Itoa(d)
	}
	return strings.Join(parts, "x")
}
