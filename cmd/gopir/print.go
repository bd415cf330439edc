package main

import (
	"os"

	"github.com/spf13/cobra"

	"github.com/gopir/gopir/ir"
	_ "github.com/gopir/gopir/ops" // registers the op catalog
)

func newPrintCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "print FILE.pir",
		Short: "Parse, verify and print a program in canonical form",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			prog, err := loadProgram(args[0])
			if err != nil {
				return err
			}
			return ir.Print(cmd.OutOrStdout(), prog)
		},
	}
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
