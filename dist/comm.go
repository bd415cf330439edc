package dist

import (
	"github.com/gopir/gopir/ops"
)

// Comm connects the ranks of a data-parallel job: what the collective ops
// of a program use (ops.Communicator), and what the training loop does
// between programs.
type Comm interface {
	ops.Communicator
	// AllReduceF64 replaces buf on every rank by the element-wise sum of
	// every rank's buf, and returns when it is done.
	AllReduceF64(buf []float64) error
	// Broadcast copies root's buf into every other rank's buf, which
	// must have the same length.
	Broadcast(buf []byte, root int) error
	// Abort ends the whole job after err on this rank: under MPI every
	// process of the job is killed and exits with code (MPI_Abort); with
	// Local, every rank's collective operations in flight and to come
	// fail with an error naming this rank.
	Abort(code int, err error)
	// Close ends this rank's part in the job (MPI_Finalize); it is
	// called once, after the last collective.
	Close() error
}

// AnyRank reports whether flag is true on at least one rank. Every rank
// must call it at the same point; the training loop uses it to stop all
// ranks together after an interrupt that reached only some.
func AnyRank(c Comm, flag bool) (bool, error) {
	buf := []float64{0}
	if flag {
		buf[0] = 1
	}
	if err := c.AllReduceF64(buf); err != nil {
		return false, err
	}
	return buf[0] > 0, nil
}
