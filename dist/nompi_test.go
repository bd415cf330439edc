//go:build !mpi

package dist_test

import "testing"

// TestMPI stands for the tests that run under mpirun (mpi_test.go), which
// need the mpi build tag and Open MPI: .ci/run installs openmpi-bin and
// libopenmpi-dev and runs them.
func TestMPI(t *testing.T) {
	t.Skip("the MPI tests need Open MPI (apt-get install openmpi-bin libopenmpi-dev) and the mpi build tag: go test -c -tags mpi ./dist/ && mpirun -np 2 ./dist.test -test.run MPI (.ci/run does)")
}
