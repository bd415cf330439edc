package main

import (
	"fmt"
	"io"
	"os"

	"github.com/spf13/cobra"

	"github.com/gopir/gopir/exec"
	"github.com/gopir/gopir/ir"
	"github.com/gopir/gopir/memory"
	_ "github.com/gopir/gopir/ops" // registers the op catalog
	"github.com/gopir/gopir/optimize"
	"github.com/gopir/gopir/tensor"
	"github.com/gopir/gopir/train"
)

func newPrintCmd() *cobra.Command {
	var model, memLimit string
	var opt optimizeFlags
	var backward, syncBN, deploy bool
	var ranks, imageSize int
	cmd := &cobra.Command{
		Use:   "print (--model NAME [--backward [--ranks N [--sync-bn]] | --deploy] [--image-size S] | FILE.pir | MODEL.onnx | DIR)",
		Short: "Print a program in canonical form: a file, an ONNX model, or a model of the zoo",
		Long: `Print parses, verifies and prints FILE.pir in canonical form; MODEL.onnx
is imported and printed as gopir's program (its initializers are
"parameter" ops); DIR is a directory written by gopir import. With --model
it prints the zoo model's forward (evaluation) program instead, and with
--backward its whole training program: forward, loss, backward and the
optimizer's in-place updates; with --ranks N, that of one rank of a
data-parallel job of N ranks, with its gradient all-reduces
(docs/distributed.md); with --mem-limit SIZE too, the program gopir
train --mem-limit SIZE would run, rematerialized to fit, each inserted op
noted with what it recomputes. With --deploy it prints the forward
program's inference form, for models that have one (ppyoloe_s: every
RepVGG block and batch norm folded into a convolution). With --optimize it
prints the program gopir run --optimize runs: rewritten for inference by
the passes (all, or those --passes names), after a comment line saying what
each pass did; folding needs parameter values, which MODEL.onnx and DIR
carry.`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			var prog *ir.Program
			var params map[string]*tensor.Tensor
			var err error
			if opt.passes != "" && !opt.on {
				return badInputf("--passes needs --optimize")
			}
			switch {
			case opt.on && memLimit != "":
				return badInputf("--optimize prints an inference program; --mem-limit a training program")
			case model != "" && len(args) == 1:
				return badInputf("give either --model or FILE.pir, not both")
			case model == "" && (backward || deploy || imageSize != 0):
				return badInputf("%s needs --model", map[bool]string{true: "--backward", false: "--deploy or --image-size"}[backward])
			case backward && deploy:
				return badInputf("give --backward or --deploy, not both")
			case imageSize < 0:
				return badInputf("--image-size %d: want a positive size", imageSize)
			case ranks < 1 || (ranks > 1 || syncBN) && !backward:
				return badInputf("--ranks and --sync-bn go with --backward; --ranks must be at least 1")
			case memLimit != "" && (model == "" || !backward):
				return badInputf("--mem-limit prints a training program: give --model NAME --backward")
			case memLimit != "":
				return printRematerialized(cmd.OutOrStdout(), train.Config{Model: model, Ranks: ranks, SyncBN: syncBN, ImageSize: imageSize}, memLimit)
			case backward:
				prog, err = train.BuildTraining(train.Config{Model: model, Ranks: ranks, SyncBN: syncBN, ImageSize: imageSize})
			case model != "":
				prog, err = train.BuildInference(train.Config{Model: model, ImageSize: imageSize}, deploy)
			case len(args) == 1:
				var l *loaded
				if l, err = load(args[0], "", memory.New(memory.Options{})); err != nil {
					return err
				}
				defer l.release()
				prog = l.prog
				params = l.params
			default:
				return badInputf("give --model NAME or FILE.pir")
			}
			if err != nil {
				return badInput(err)
			}
			if opt.on {
				return printOptimized(cmd.OutOrStdout(), prog, params, &opt)
			}
			return ir.Print(cmd.OutOrStdout(), prog)
		},
	}
	cmd.Flags().StringVar(&model, "model", "", "print the program of model `NAME`")
	cmd.Flags().BoolVar(&backward, "backward", false, "with --model: the training program, backward and updates included")
	cmd.Flags().StringVar(&memLimit, "mem-limit", "", "with --model --backward: the training program rematerialized to fit a memory limit of `SIZE`")
	opt.register(cmd, false, "print the program rewritten for inference, as gopir run --optimize runs it")
	cmd.Flags().IntVar(&ranks, "ranks", 1, "with --backward: the program of one rank of a data-parallel job of `N` ranks")
	cmd.Flags().BoolVar(&syncBN, "sync-bn", false, "with --ranks: synchronized batch norm")
	cmd.Flags().BoolVar(&deploy, "deploy", false, "with --model: the inference form of the forward program")
	cmd.Flags().IntVar(&imageSize, "image-size", 0, "with --model: image side `S`, for models that take several")
	return cmd
}

// printRematerialized prints the training program gopir train would run
// under the memory limit, noting the ops that recompute values.
func printRematerialized(out io.Writer, cfg train.Config, memLimit string) error {
	limit, err := parseSize(memLimit)
	if err != nil || limit < 1 {
		return badInputf("--mem-limit %q: want a positive size like 16MiB", memLimit)
	}
	cfg.MemLimit = limit
	res, _, err := train.Rematerialize(cfg)
	if err != nil {
		return planError(err)
	}
	if res == nil {
		cfg.MemLimit = 0
		prog, err := train.BuildTraining(cfg)
		if err != nil {
			return badInput(err)
		}
		fmt.Fprintf(out, "// a step fits in %s as it is: nothing is recomputed\n", human(limit))
		return ir.Print(out, prog)
	}
	fmt.Fprintf(out, "// rematerialized for --mem-limit %s: planned peak %s instead of %s; the ops noted \"recomputes\" run again in the backward pass\n",
		memLimit, human(res.Peak), human(res.Natural))
	return ir.PrintNoted(out, res.Program, res.Recomputes)
}

// printOptimized prints prog rewritten by the passes, with params' values
// (none for a text program without --params), after a comment line
// saying what each pass did.
func printOptimized(out io.Writer, prog *ir.Program, params map[string]*tensor.Tensor, opt *optimizeFlags) error {
	store := exec.NewStore()
	for n, t := range params {
		store.Set(n, t.Retain())
	}
	defer store.Release()
	p := optimize.NewParams(store, nil)
	defer p.Release()
	res, err := optimize.Inference(prog, p, opt.only()...)
	if err != nil {
		return optimizeError(err)
	}
	fmt.Fprintf(out, "// optimized for inference: %s\n", res.Summary())
	return ir.Print(out, res.Program)
}

// loadProgram reads, parses and verifies a program file. Every error is bad
// input and starts with FILE:LINE:COL when it has a position.
func loadProgram(path string) (*ir.Program, error) {
	src, err := os.ReadFile(path)
	if err != nil {
		return nil, badInput(err)
	}
	prog, err := ir.Parse(path, src)
	if err != nil {
		return nil, badInput(err)
	}
	if err := ir.Verify(prog); err != nil {
		return nil, badInput(err)
	}
	return prog, nil
}
