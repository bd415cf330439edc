package main

import (
	"fmt"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/gopir/gopir/autodiff"
	"github.com/gopir/gopir/ir"
	"github.com/gopir/gopir/memory"
	"github.com/gopir/gopir/ops"
)

func newGradCmd() *cobra.Command {
	var loss, wrt, outDir, params string
	cmd := &cobra.Command{
		Use:   "grad (FILE.pir | MODEL.onnx | DIR) --loss NAME --wrt A[,B...] [-o DIR]",
		Short: "Print a program with its backward appended",
		Long: `Grad appends to the program the ops that compute the gradient of the
scalar fetch NAME with respect to each named "data" or "parameter" value,
fetched as A@GRAD, and prints the result. The loss may also be sum(NAME)
or mean(NAME) of a fetch of any shape. MODEL.onnx is imported first (its
initializers are parameters); with -o DIR the program and the parameters'
values are written to DIR as gopir import does, for gopir run DIR.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			l, err := load(args[0], params, memory.New(memory.Options{}))
			if err != nil {
				return err
			}
			defer l.release()
			if err := appendGradients(l.prog, loss, wrt); err != nil {
				return badInput(fmt.Errorf("%s: %w", args[0], err))
			}
			if outDir != "" {
				return writeImported(outDir, l)
			}
			return ir.Print(cmd.OutOrStdout(), l.prog)
		},
	}
	cmd.Flags().StringVar(&loss, "loss", "", "the scalar fetch to differentiate (`NAME`), or sum(NAME) or mean(NAME)")
	cmd.Flags().StringVar(&wrt, "wrt", "", "comma-separated data or parameter `NAMES` to differentiate with respect to")
	cmd.Flags().StringVarP(&outDir, "out", "o", "", "write program.pir and params.safetensors to `DIR` instead of printing")
	cmd.Flags().StringVar(&params, "params", "", "read parameter values from `FILE.safetensors` (for -o)")
	cmd.MarkFlagRequired("loss")
	cmd.MarkFlagRequired("wrt")
	return cmd
}

// appendGradients appends the backward of fetch lossName with respect to
// the named inputs, and a fetch NAME@GRAD for each.
func appendGradients(prog *ir.Program, lossName, wrtList string) error {
	reduce, name := "", lossName
	for _, r := range []string{"sum", "mean"} {
		if inner, ok := strings.CutPrefix(lossName, r+"("); ok && strings.HasSuffix(inner, ")") {
			reduce, name = r, strings.TrimSuffix(inner, ")")
		}
	}
	fetch := prog.Lookup("fetch", name)
	if fetch == nil {
		return fmt.Errorf("--loss %s: the program has no fetch named %q (fetches: %s)", lossName, name, names(prog, "fetch"))
	}
	lossValue := fetch.Operand(0)
	var wrt []*ir.Value
	var wrtNames []string
	for _, n := range strings.Split(wrtList, ",") {
		n = strings.TrimSpace(n)
		if n == "" {
			return fmt.Errorf("--wrt %q: empty name", wrtList)
		}
		if slices.Contains(wrtNames, n) {
			return fmt.Errorf("--wrt %s: given twice", n)
		}
		op := prog.Lookup("data", n)
		if op == nil {
			op = prog.Lookup("parameter", n)
		}
		if op == nil {
			return fmt.Errorf("--wrt %s: no data or parameter named %q (inputs: %s)", n, n, names(prog, "data", "parameter"))
		}
		if prog.Lookup("fetch", n+"@GRAD") != nil {
			return fmt.Errorf("--wrt %s: the program already fetches %s@GRAD", n, n)
		}
		wrt = append(wrt, op.Result(0))
		wrtNames = append(wrtNames, n)
	}
	b := ir.NewBuilder(prog)
	switch reduce {
	case "sum":
		lossValue = ops.ReduceSum(b, lossValue, nil, false)
	case "mean":
		lossValue = ops.ReduceMean(b, lossValue, nil, false)
	}
	grads, err := autodiff.Backward(b, lossValue, wrt)
	if err != nil {
		return err
	}
	for i, g := range grads {
		ops.Fetch(b, wrtNames[i]+"@GRAD", g)
	}
	if err := b.Err(); err != nil {
		return err
	}
	return ir.Verify(prog)
}

// names lists the "name" attributes of the top-level ops of the given
// kinds.
func names(prog *ir.Program, kinds ...string) string {
	var out []string
	for _, op := range prog.Body().Ops() {
		for _, k := range kinds {
			if op.Name() == k {
				n, _ := op.Attrs.Str("name")
				out = append(out, n)
			}
		}
	}
	if len(out) == 0 {
		return "none"
	}
	return strings.Join(out, ", ")
}
