//go:build !mpi

package mpi_test

import (
	"errors"
	"testing"

	"github.com/gopir/gopir/mpi"
)

func TestWithoutMPI(t *testing.T) {
	if mpi.Available {
		t.Fatal("Available in a build without the mpi tag")
	}
	if _, err := mpi.Init(); !errors.Is(err, mpi.ErrNotBuilt) {
		t.Fatalf("Init: %v", err)
	}
}

// TestBinding stands for the tests of the binding, which run under
// mpirun with the mpi tag.
func TestBinding(t *testing.T) {
	t.Skip("the binding's tests need Open MPI (apt-get install openmpi-bin libopenmpi-dev) and the mpi build tag: go test -c -tags mpi ./mpi/ && mpirun -np 2 ./mpi.test (.ci/run does)")
}
