package dist

import (
	"errors"
	"fmt"
	"sync"

	"github.com/gopir/gopir/ops"
)

// Local returns the n communicators of a job whose ranks are goroutines
// of this process, one communicator per goroutine: the collective ops,
// the bucketing and the training loop can be tested with N ranks without
// MPI. Collectives behave as MPI's: the k-th collective call of each rank
// meets the k-th of every other; a non-blocking sum returns at once and
// completes when the last rank has joined. The sum is taken in rank order
// (rank 0's element, plus rank 1's, ...) in the buffers' precision and
// written to every rank, so every rank gets the same bits. Calls that do
// not match (another operation or another length at the same position)
// fail on every rank with an error saying so. Abort makes every pending
// and later call of every rank fail with an error naming the rank that
// aborted.
func Local(n int) []Comm {
	if n < 1 {
		n = 1
	}
	j := &localJob{n: n, rounds: map[int]*localRound{}, aborted: make(chan struct{})}
	out := make([]Comm, n)
	for r := range n {
		out[r] = &localComm{job: j, rank: r}
	}
	return out
}

type localJob struct {
	n       int
	mu      sync.Mutex
	rounds  map[int]*localRound // by sequence number
	aborted chan struct{}
	abort   error // set before aborted is closed
}

// localRound is one collective: each rank's buffer, filled in as ranks
// arrive.
type localRound struct {
	kind    string // "f32", "f64", "bcast"
	root    int
	f32     [][]float32
	f64     [][]float64
	bytes   [][]byte
	arrived int
	err     error
	done    chan struct{}
}

type localComm struct {
	job  *localJob
	rank int
	seq  int // collectives called so far
}

func (c *localComm) Rank() int { return c.rank }
func (c *localComm) Size() int { return c.job.n }

// join adds this rank's buffer to its next round; the last rank to
// arrive completes the round.
func (c *localComm) join(kind string, root int, f32 []float32, f64 []float64, b []byte) (*localRound, error) {
	j := c.job
	j.mu.Lock()
	if j.abort != nil {
		err := j.abort
		j.mu.Unlock()
		return nil, err
	}
	seq := c.seq
	c.seq++
	r := j.rounds[seq]
	if r == nil {
		r = &localRound{kind: kind, root: root, f32: make([][]float32, j.n), f64: make([][]float64, j.n), bytes: make([][]byte, j.n), done: make(chan struct{})}
		j.rounds[seq] = r
	}
	if r.err == nil && (r.kind != kind || r.root != root) {
		r.err = fmt.Errorf("collective %d: rank %d calls %s (root %d), another rank %s (root %d)", seq, c.rank, kind, root, r.kind, r.root)
	}
	r.f32[c.rank], r.f64[c.rank], r.bytes[c.rank] = f32, f64, b
	r.arrived++
	last := r.arrived == j.n
	if last {
		delete(j.rounds, seq)
	}
	j.mu.Unlock()
	if last {
		if r.err == nil {
			r.err = r.complete(seq)
		}
		close(r.done)
	}
	return r, nil
}

// complete carries out the round once every rank's buffer is in.
func (r *localRound) complete(seq int) error {
	switch r.kind {
	case "f32":
		return localSum(seq, r.f32)
	case "f64":
		return localSum(seq, r.f64)
	case "bcast":
		src := r.bytes[r.root]
		for k, b := range r.bytes {
			if len(b) != len(src) {
				return fmt.Errorf("collective %d: broadcast of %d bytes on rank %d, %d on the root %d", seq, len(b), k, len(src), r.root)
			}
		}
		for k, b := range r.bytes {
			if k != r.root {
				copy(b, src)
			}
		}
	}
	return nil
}

func localSum[T float32 | float64](seq int, bufs [][]T) error {
	n := len(bufs[0])
	for k, b := range bufs {
		if len(b) != n {
			return fmt.Errorf("collective %d: all-reduce of %d elements on rank %d, %d on rank 0", seq, len(b), k, n)
		}
	}
	for i := range n {
		s := bufs[0][i]
		for _, b := range bufs[1:] {
			s += b[i]
		}
		for _, b := range bufs {
			b[i] = s
		}
	}
	return nil
}

// localRequest waits for a round or the job's abort.
type localRequest struct {
	r   *localRound
	job *localJob
}

func (q localRequest) Wait() error {
	select {
	case <-q.r.done:
		return q.r.err
	case <-q.job.aborted:
		// A round completed before the abort still counts.
		select {
		case <-q.r.done:
			return q.r.err
		default:
		}
		q.job.mu.Lock()
		defer q.job.mu.Unlock()
		return q.job.abort
	}
}

func (c *localComm) StartAllReduceF32(buf []float32) (ops.Request, error) {
	r, err := c.join("f32", 0, buf, nil, nil)
	if err != nil {
		return nil, err
	}
	return localRequest{r, c.job}, nil
}

func (c *localComm) StartAllReduceF64(buf []float64) (ops.Request, error) {
	r, err := c.join("f64", 0, nil, buf, nil)
	if err != nil {
		return nil, err
	}
	return localRequest{r, c.job}, nil
}

func (c *localComm) AllReduceF64(buf []float64) error {
	q, err := c.StartAllReduceF64(buf)
	if err != nil {
		return err
	}
	return q.Wait()
}

func (c *localComm) Broadcast(buf []byte, root int) error {
	if root < 0 || root >= c.job.n {
		return fmt.Errorf("broadcast from rank %d of %d", root, c.job.n)
	}
	r, err := c.join("bcast", root, nil, nil, buf)
	if err != nil {
		return err
	}
	return localRequest{r, c.job}.Wait()
}

// ErrAborted is the error behind every collective of a Local job after
// one of its ranks aborted; errors.Is finds it.
var ErrAborted = errors.New("job aborted")

func (c *localComm) Abort(code int, err error) {
	j := c.job
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.abort != nil {
		return
	}
	j.abort = fmt.Errorf("%w by rank %d (exit code %d): %v", ErrAborted, c.rank, code, err)
	close(j.aborted)
}

func (c *localComm) Close() error { return nil }
