package main

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/gopir/gopir/memory"
	"github.com/gopir/gopir/tensor"
	"github.com/gopir/gopir/train"
)

func newFeedsCmd() *cobra.Command {
	var model, out, steps, weights string
	var batch, imageSize int
	var seed int64
	cmd := &cobra.Command{
		Use:   "feeds --model NAME --out DIR [--steps N,M,...] [--batch B] [--seed S] [--image-size S] [--weights FILE]",
		Short: "Write a model's training batches as .npy files",
		Long: `Feeds writes the feeds of the given training steps (0-based, counted over
epochs as gopir train counts them; default 0) of a model's run with these
settings to DIR/stepN/NAME.npy, one file per feed, so that another
framework can train on exactly the same data (bench/peers/ppyoloe reads
them). --weights FILE also writes the parameters the run starts from
(batch norm statistics included) to FILE in the safetensors format.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if batch < 0 || imageSize < 0 {
				return badInputf("--batch and --image-size must not be negative")
			}
			if out == "" {
				return badInputf("--out DIR is required")
			}
			list, err := parseSteps(steps)
			if err != nil {
				return err
			}
			cfg := train.Config{Model: model, Batch: batch, Seed: seed, ImageSize: imageSize}
			if err := writeFeeds(cfg, out, list); err != nil {
				return err
			}
			if weights == "" {
				return nil
			}
			return writeWeights(cfg, weights)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&model, "model", "tinydet", "the model `NAME`")
	fl.IntVar(&batch, "batch", 0, "batch size `B` (default: the model's)")
	fl.Int64Var(&seed, "seed", 0, "random seed `S` of the run (data order)")
	fl.IntVar(&imageSize, "image-size", 0, "image side `S`, for models that take several")
	fl.StringVar(&weights, "weights", "", "also write the initial parameters to `FILE` (safetensors)")
	cmd.Flags().StringVar(&out, "out", "", "write the files under `DIR`")
	cmd.Flags().StringVar(&steps, "steps", "0", "training steps `N,M,...` whose feeds to write")
	return cmd
}

// parseSteps reads a comma-separated list of step numbers.
func parseSteps(s string) ([]int, error) {
	var out []int
	for _, p := range strings.Split(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(p))
		if err != nil || n < 0 {
			return nil, badInputf("--steps %q: want step numbers like 0,7", s)
		}
		out = append(out, n)
	}
	return out, nil
}

func writeFeeds(cfg train.Config, dir string, steps []int) error {
	task, err := train.LoadTask(cfg)
	if err != nil {
		return badInput(err)
	}
	a := memory.New(memory.Options{})
	spe := task.StepsPerEpoch()
	for _, step := range steps {
		feeds, err := task.TrainFeeds(a, step/spe, step%spe)
		if err != nil {
			return err
		}
		err = writeNpys(filepath.Join(dir, fmt.Sprintf("step%d", step)), feeds.Tensors)
		feeds.Release()
		if err != nil {
			return err
		}
	}
	return nil
}

// writeNpys writes each tensor to dir/NAME.npy.
func writeNpys(dir string, ts map[string]*tensor.Tensor) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	names := make([]string, 0, len(ts))
	for n := range ts {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		f, err := os.Create(filepath.Join(dir, n+".npy"))
		if err != nil {
			return err
		}
		err = tensor.WriteNpy(f, ts[n])
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return fmt.Errorf("%s: %w", n, err)
		}
	}
	return nil
}

// writeWeights writes the parameters cfg's run starts from to path.
func writeWeights(cfg train.Config, path string) error {
	params, err := train.InitialParameters(cfg, memory.New(memory.Options{}))
	if err != nil {
		return badInput(err)
	}
	defer func() {
		for _, t := range params {
			t.Release()
		}
	}()
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	err = tensor.WriteSafetensors(f, params, map[string]string{"model": cfg.Model, "seed": strconv.FormatInt(cfg.Seed, 10)})
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}
