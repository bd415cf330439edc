package main

import (
	"errors"
	"strings"

	"github.com/spf13/cobra"

	"github.com/gopir/gopir/exec"
	"github.com/gopir/gopir/ir"
	"github.com/gopir/gopir/optimize"
)

// optimizeFlags are --optimize and --passes of run and print.
type optimizeFlags struct {
	on     bool
	passes string
	cmd    *cobra.Command
}

func (f *optimizeFlags) register(cmd *cobra.Command, def bool, what string) {
	f.cmd = cmd
	cmd.Flags().BoolVar(&f.on, "optimize", def, what)
	cmd.Flags().StringVar(&f.passes, "passes", "", "with --optimize, only the passes `LIST` (comma-separated: "+strings.Join(optimize.PassNames(), ",")+")")
}

// only is the list --passes gives, nil for all.
func (f *optimizeFlags) only() []string {
	if f.passes == "" {
		return nil
	}
	return strings.Split(f.passes, ",")
}

// use reports whether prog is to be optimized: --optimize is on, and prog
// is an inference program. A program with a backward runs as it is when
// --optimize is only the default, and is bad input when it was asked for.
func (f *optimizeFlags) use(prog *ir.Program) (bool, error) {
	if f.passes != "" && !f.on {
		return false, badInputf("--passes needs --optimize")
	}
	if !f.on {
		return false, nil
	}
	if err := optimize.CheckInference(prog); err != nil {
		if f.cmd.Flags().Changed("optimize") {
			return false, badInput(err)
		}
		return false, nil
	}
	return true, nil
}

// optimizeError classifies an error of optimize.Inference or Compile: an
// unknown pass or a refused program is bad input.
func optimizeError(err error) error {
	var be *optimize.BackwardError
	if errors.As(err, &be) || strings.Contains(err.Error(), "optimize: no pass") {
		return badInput(err)
	}
	return err
}

// compileOptimized optimizes prog with the parameter values in store
// and compiles it with opts.
func compileOptimized(prog *ir.Program, store *exec.Store, opts exec.Options, f *optimizeFlags) (*exec.Executable, error) {
	x, _, err := optimize.Compile(prog, store, opts, f.only()...)
	if err != nil {
		return nil, optimizeError(err)
	}
	return x, nil
}
