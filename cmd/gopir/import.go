package main

import (
	"github.com/spf13/cobra"

	"github.com/gopir/gopir/memory"
)

func newImportCmd() *cobra.Command {
	var outDir string
	cmd := &cobra.Command{
		Use:   "import MODEL.onnx -o DIR",
		Short: "Import an ONNX model as a gopir program and its parameters",
		Long: `Import converts MODEL.onnx to gopir's IR and writes DIR/program.pir (the
program in the text format; initializers are "parameter" ops) and
DIR/params.safetensors (their values). gopir run DIR, gopir print DIR and
gopir grad DIR read them back. An ONNX op, attribute or type gopir does not
support is an error naming the node (exit 2).`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if outDir == "" {
				return badInputf("give the output directory with -o DIR")
			}
			l, err := load(args[0], "", memory.New(memory.Options{}))
			if err != nil {
				return err
			}
			defer l.release()
			return writeImported(outDir, l)
		},
	}
	cmd.Flags().StringVarP(&outDir, "out", "o", "", "write program.pir and params.safetensors to `DIR`")
	return cmd
}
