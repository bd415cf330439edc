package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"os/signal"

	"github.com/spf13/cobra"

	"github.com/gopir/gopir/ir"
	"github.com/gopir/gopir/memory"
	_ "github.com/gopir/gopir/models" // registers the model zoo
	"github.com/gopir/gopir/train"
)

// floatDType parses --dtype.
func floatDType(s string) (ir.DType, error) {
	if dt, ok := ir.ParseDType(s); ok && dt.IsFloat() {
		return dt, nil
	}
	return ir.InvalidDType, badInputf("--dtype %q: want f32 or f64", s)
}

// exitInterrupted is the exit code after Ctrl-C, as shells report SIGINT.
const exitInterrupted = 130

type trainFlags struct {
	model, memLimit, save, resume, dataDir  string
	remat, dtype                            string
	steps, epochs, batch, logEvery, threads int
	imageSize                               int
	lr                                      float64
	seed                                    int64
	json, checkLeaks                        bool
	view                                    viewFlags
	syncBN, checkReplicas                   bool
}

func (f *trainFlags) config(cmd *cobra.Command) (train.Config, error) {
	cfg := train.Config{
		Model: f.model, Steps: f.steps, Epochs: f.epochs, Batch: f.batch, LR: f.lr, Seed: f.seed,
		LogEvery: f.logEvery, JSON: f.json, Save: f.save, Resume: f.resume, CheckLeaks: f.checkLeaks,
		DataDir: f.dataDir, Threads: f.threads, SyncBN: f.syncBN, CheckReplicas: f.checkReplicas, ImageSize: f.imageSize,
	}
	for name, v := range map[string]int{"--steps": f.steps, "--epochs": f.epochs, "--batch": f.batch, "--threads": f.threads, "--image-size": f.imageSize} {
		if v < 0 {
			return cfg, badInputf("%s %d: must not be negative", name, v)
		}
	}
	if cmd.Flags().Changed("batch") && f.batch == 0 {
		return cfg, badInputf("--batch 0: want at least 1")
	}
	if cmd.Flags().Changed("image-size") && f.imageSize == 0 {
		return cfg, badInputf("--image-size 0: want a positive size")
	}
	if cmd.Flags().Changed("log-every") && f.logEvery < 1 {
		return cfg, badInputf("--log-every %d: want at least 1", f.logEvery)
	}
	// 0 in Config means the model's default, so an explicit 0 must not
	// reach it: it would train with the default behind the user's back.
	if cmd.Flags().Changed("lr") && !(f.lr > 0 && !math.IsInf(f.lr, 0)) {
		return cfg, badInputf("--lr %g: want a positive, finite learning rate (omit --lr for the model's default)", f.lr)
	}
	switch f.remat {
	case "on":
	case "off":
		cfg.NoRemat = true
	default:
		return cfg, badInputf("--remat %q: want on or off", f.remat)
	}
	var err error
	if cfg.DType, err = floatDType(f.dtype); err != nil {
		return cfg, err
	}
	cfg.MemLimit, err = memLimit(f.memLimit)
	return cfg, err
}

func (f *trainFlags) register(cmd *cobra.Command, all bool) {
	fl := cmd.Flags()
	fl.StringVar(&f.model, "model", "tinydet", "model to train: `NAME` (mlp, lenet, tinydet, rnn, gate, ppyoloe_s)")
	fl.IntVar(&f.steps, "steps", 0, "train `N` steps (default: the model's)")
	fl.IntVar(&f.batch, "batch", 0, "batch size `B` (default: the model's)")
	fl.Int64Var(&f.seed, "seed", 0, "random seed `S` for initialization, data order and dropout")
	fl.BoolVar(&f.json, "json", false, "print one JSON object per logged step")
	fl.StringVar(&f.dataDir, "data-dir", "", "directory with the MNIST files (default: found in the Go module cache)")
	fl.IntVar(&f.threads, "threads", 0, "goroutines per kernel (default: all cores; under mpirun, the cores shared among the ranks on the machine)")
	fl.BoolVar(&f.syncBN, "sync-bn", false, "under mpirun: batch norm uses the statistics of the global batch over every rank")
	fl.BoolVar(&f.checkReplicas, "check-replicas", false, "under mpirun: after every step, compare a CRC-32C of every rank's parameters and fail if they differ")
	fl.IntVar(&f.imageSize, "image-size", 0, "image side `S` in pixels, for models that take several (ppyoloe_s; default: the model's)")
	fl.StringVar(&f.dtype, "dtype", "f32", "float type `T` of the parameters and arithmetic: f32, or f64 (all models but ppyoloe_s)")
	if !all {
		f.remat = "on"
		return
	}
	fl.IntVar(&f.epochs, "epochs", 0, "train `E` epochs")
	fl.Float64Var(&f.lr, "lr", 0, "learning rate `LR` (default: the model's)")
	fl.StringVar(&f.memLimit, "mem-limit", "", "cap the allocator at `SIZE` (e.g. 512MiB; at most and by default physical memory); a step whose plan exceeds it is rematerialized to fit, or refused (exit 1) when nothing fits")
	fl.StringVar(&f.remat, "remat", "on", "`on`: recompute values to fit --mem-limit; off: refuse a step over it")
	fl.IntVar(&f.logEvery, "log-every", 10, "log every `K` steps")
	fl.StringVar(&f.save, "save", "", "write a checkpoint to `DIR` at the end and on Ctrl-C")
	fl.StringVar(&f.resume, "resume", "", "continue from the checkpoint in `DIR`")
	fl.BoolVar(&f.checkLeaks, "check-leaks", false, "fail a step that leaves any buffer behind")
	f.view.register(cmd)
	cmd.MarkFlagsMutuallyExclusive("steps", "epochs")
}

func newTrainCmd() *cobra.Command {
	var f trainFlags
	cmd := &cobra.Command{
		Use:   "train",
		Short: "Train a model and print its loss and memory per step",
		Long: `Train trains a model of the zoo on data that needs no download and prints
one line per logged step:

  Epoch: [0] [  10/128] loss: 0.4312 mem_allocated: 1 MB mem_reserved: 32 MB

(MB = 2^20 bytes), then an evaluation summary. --json prints one object per
logged step with exact byte counts instead. The default model is tinydet,
a detector whose loss has an if on the number of objects in the batch.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			cfg, err := f.config(cmd)
			if err != nil {
				return err
			}
			j, err := joinJob(cmd, &cfg)
			if err != nil {
				return err
			}
			view := f.view
			if j != nil {
				view = view.forRank(j.rank)
			}
			if !f.json && isTerminal(os.Stderr) && (j == nil || j.rank == 0) {
				cfg.Progress = os.Stderr
			}
			err = runTraining(cmd.Context(), cfg, cmd.OutOrStdout(), view)
			if j != nil {
				return j.finish(err)
			}
			return err
		},
	}
	f.register(cmd, true)
	return cmd
}

func runTraining(ctx context.Context, cfg train.Config, out io.Writer, view viewFlags) error {
	m, err := view.open(cfg.Model+" training", "step")
	if err != nil {
		return err
	}
	if m != nil {
		cfg.MemoryLog, cfg.Observer = m.rec.Instr, trainView{m}
	}
	t, err := train.New(cfg)
	if err != nil {
		if m != nil {
			m.discard()
		}
		return classify(err)
	}
	defer t.Close()
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt)
	defer stop()
	_, err = t.Run(ctx, out)
	if m != nil {
		// Also after an interrupt or a failed step: the steps so far.
		if ferr := m.finish(); err == nil {
			err = ferr
		}
	}
	return classify(err)
}

// classify turns training errors into exit codes: out of memory and
// failures exit 1, an interrupt 130, everything the user could fix 2.
func classify(err error) error {
	var oom *memory.ResourceExhausted
	switch {
	case err == nil:
		return nil
	case errors.Is(err, train.ErrInterrupted):
		return exitError{code: exitInterrupted, err: err}
	case errors.As(err, &oom):
		return err
	case isSetupError(err):
		return badInput(err)
	}
	return err
}

// isSetupError recognizes errors from train.New about the configuration,
// the checkpoint or the data, as opposed to failures while running.
func isSetupError(err error) bool {
	var se *train.SetupError
	return errors.As(err, &se)
}

// exitError carries a specific exit code.
type exitError struct {
	code int
	err  error
}

func (e exitError) Error() string { return e.err.Error() }
func (e exitError) Unwrap() error { return e.err }

func newMemcheckCmd() *cobra.Command {
	var f trainFlags
	cmd := &cobra.Command{
		Use:   "memcheck",
		Short: "Train a few steps and fail if allocated memory ever moves between steps",
		Long: `Memcheck trains --steps steps with the leak check on and compares the
allocated bytes after every step (its feeds and fetches released) with the
first step's. It exits 1 if they ever differ, naming the buffers that
survived with the op, value and position that made them.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			cfg, err := f.config(cmd)
			if err != nil {
				return err
			}
			steps := f.steps
			if steps == 0 {
				steps = 20
			}
			j, err := joinJob(cmd, &cfg)
			if err != nil {
				return err
			}
			err = memcheck(cmd, cfg, steps, f.json, j == nil || j.rank == 0)
			if j != nil {
				return j.finish(err)
			}
			return err
		},
	}
	f.register(cmd, false)
	return cmd
}

// memcheck runs the memory check and prints its report (on rank 0 only,
// unless it fails).
func memcheck(cmd *cobra.Command, cfg train.Config, steps int, asJSON, print bool) error {
	var progress io.Writer
	if !asJSON && print {
		progress = cmd.OutOrStdout()
	}
	rep, err := train.Memcheck(cmd.Context(), cfg, steps, progress)
	if err != nil {
		return classify(err)
	}
	if asJSON && print {
		line, _ := json.Marshal(map[string]any{"memcheck": map[string]any{
			"model": rep.Model, "steps": rep.Steps, "ok": rep.OK(), "baseline": rep.Baseline,
			"allocated": rep.Allocated, "fail_at": rep.FailAt, "leaked": rep.Leaked, "message": rep.Message,
		}})
		fmt.Fprintln(cmd.OutOrStdout(), string(line))
	} else if rep.OK() && print {
		fmt.Fprintln(cmd.OutOrStdout(), rep.Message)
	}
	if !rep.OK() {
		return rep
	}
	return nil
}

// isTerminal reports whether f is a character device (a terminal), so that
// progress bars stay out of pipes and files.
func isTerminal(f *os.File) bool {
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}
