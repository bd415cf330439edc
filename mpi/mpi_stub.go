//go:build !mpi

package mpi

// Available reports whether this build has the MPI binding (the mpi
// build tag).
const Available = false

// Comm is MPI_COMM_WORLD. A build without the mpi tag never makes one;
// its methods return ErrNotBuilt.
type Comm struct{}

// Request is a non-blocking operation in flight.
type Request struct{}

// Init returns ErrNotBuilt: this build has no MPI.
func Init() (*Comm, error) { return nil, ErrNotBuilt }

// Rank is this process's rank in MPI_COMM_WORLD.
func (*Comm) Rank() int { return 0 }

// Size is the number of processes in MPI_COMM_WORLD.
func (*Comm) Size() int { return 1 }

// AllreduceF64 sums buf over the ranks, in place.
func (*Comm) AllreduceF64(buf []float64) error { return ErrNotBuilt }

// IallreduceF32 starts the sum of buf over the ranks, in place.
func (*Comm) IallreduceF32(buf []float32) (*Request, error) { return nil, ErrNotBuilt }

// IallreduceF64 is IallreduceF32 for float64s.
func (*Comm) IallreduceF64(buf []float64) (*Request, error) { return nil, ErrNotBuilt }

// Bcast copies root's buf into every other rank's buf.
func (*Comm) Bcast(buf []byte, root int) error { return ErrNotBuilt }

// Barrier blocks until every rank has called it.
func (*Comm) Barrier() error { return ErrNotBuilt }

// Abort ends every process of the job.
func (*Comm) Abort(code int) {}

// Finalize ends this process's use of MPI.
func (*Comm) Finalize() error { return ErrNotBuilt }

// Wait blocks until the request is complete.
func (*Request) Wait() error { return ErrNotBuilt }

// Test reports whether the request is complete.
func (*Request) Test() (bool, error) { return false, ErrNotBuilt }
