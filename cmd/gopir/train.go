package main

import (
	"errors"

	"github.com/spf13/cobra"
)

// newTrainCmd is the entry point of the main job. Training needs automatic
// differentiation and the model zoo, which are not built yet; until then
// the command says so instead of pretending.
func newTrainCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "train",
		Short: "Train a model (not implemented yet)",
		RunE: func(cmd *cobra.Command, args []string) error {
			return errors.New("gopir train: training is not implemented yet (it needs autodiff, optimizers and the model zoo); gopir print and gopir run work today")
		},
	}
}
