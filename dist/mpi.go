package dist

import (
	"fmt"
	"os"
	"strconv"

	"github.com/gopir/gopir/mpi"
	"github.com/gopir/gopir/ops"
)

// Environment reads the rank and size that an MPI launcher gives each
// process: OMPI_COMM_WORLD_RANK and OMPI_COMM_WORLD_SIZE (Open MPI's
// mpirun), or PMI_RANK and PMI_SIZE (MPICH's Hydra). ok is false when
// neither is set, or they do not make sense.
func Environment() (rank, size int, ok bool) {
	for _, v := range [][2]string{{"OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE"}, {"PMI_RANK", "PMI_SIZE"}} {
		r, err1 := strconv.Atoi(os.Getenv(v[0]))
		s, err2 := strconv.Atoi(os.Getenv(v[1]))
		if err1 == nil && err2 == nil && s >= 1 && r >= 0 && r < s {
			return r, s, true
		}
	}
	return 0, 1, false
}

// FromEnvironment returns the communicator of the MPI job that started
// this process, or nil (and no error) when no launcher started it or the
// job has one rank, which then trains alone as without mpirun. In a
// build without the mpi tag, a job of several ranks is an error that
// says how to build gopir with MPI.
func FromEnvironment() (Comm, error) {
	rank, size, ok := Environment()
	if !ok || size == 1 {
		return nil, nil
	}
	if !mpi.Available {
		return nil, fmt.Errorf("started by mpirun as rank %d of %d, but %w", rank, size, mpi.ErrNotBuilt)
	}
	c, err := mpi.Init()
	if err != nil {
		return nil, fmt.Errorf("rank %d of %d: %w", rank, size, err)
	}
	if c.Rank() != rank || c.Size() != size {
		return nil, fmt.Errorf("MPI says rank %d of %d, the environment rank %d of %d", c.Rank(), c.Size(), rank, size)
	}
	return &mpiComm{c: c}, nil
}

// mpiComm is Comm over MPI_COMM_WORLD.
type mpiComm struct{ c *mpi.Comm }

func (m *mpiComm) Rank() int { return m.c.Rank() }
func (m *mpiComm) Size() int { return m.c.Size() }

// mpiRequest is a non-blocking sum; it is an ops.Tester, so that the
// executor moves it forward between instructions (Open MPI progresses a
// non-blocking collective only inside MPI calls).
type mpiRequest struct{ r *mpi.Request }

func (q mpiRequest) Wait() error         { return q.r.Wait() }
func (q mpiRequest) Test() (bool, error) { return q.r.Test() }

func (m *mpiComm) StartAllReduceF32(buf []float32) (ops.Request, error) {
	r, err := m.c.IallreduceF32(buf)
	if err != nil {
		return nil, err
	}
	return mpiRequest{r}, nil
}

func (m *mpiComm) StartAllReduceF64(buf []float64) (ops.Request, error) {
	r, err := m.c.IallreduceF64(buf)
	if err != nil {
		return nil, err
	}
	return mpiRequest{r}, nil
}

func (m *mpiComm) AllReduceF64(buf []float64) error { return m.c.AllreduceF64(buf) }

func (m *mpiComm) Broadcast(buf []byte, root int) error { return m.c.Bcast(buf, root) }

func (m *mpiComm) Abort(code int, _ error) { m.c.Abort(code) }

func (m *mpiComm) Close() error { return m.c.Finalize() }
