package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime"
	"strconv"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/gopir/gopir/dist"
	"github.com/gopir/gopir/train"
)

// Data-parallel training under mpirun (docs/distributed.md): train and
// memcheck join the MPI job that started them, if any.

// job is this process's place in a data-parallel job.
type job struct {
	comm       dist.Comm
	rank, size int
	stderr     io.Writer
}

// joinJob connects to the MPI job that started the process and sets up
// cfg for it; it returns nil when no launcher started the process (or the
// job has one rank). Unless --threads was given, each rank's kernels get
// an equal share of the machine's cores among the ranks on it.
func joinJob(cmd *cobra.Command, cfg *train.Config) (*job, error) {
	// MPI calls come from this goroutine: keep it on the thread that
	// initializes MPI.
	runtime.LockOSThread()
	comm, err := dist.FromEnvironment()
	if err != nil || comm == nil {
		runtime.UnlockOSThread()
		if err != nil {
			return nil, badInput(err)
		}
		return nil, nil
	}
	j := &job{comm: comm, rank: comm.Rank(), size: comm.Size(), stderr: cmd.ErrOrStderr()}
	cfg.Comm = comm
	if !cmd.Flags().Changed("threads") {
		local, err := strconv.Atoi(os.Getenv("OMPI_COMM_WORLD_LOCAL_SIZE"))
		if err != nil || local < 1 {
			local = 1
		}
		cfg.Threads = max(1, runtime.NumCPU()/local)
	}
	// mpirun ends a job with SIGTERM to every rank (then SIGKILL a
	// second later): when one rank failed, or when mpirun itself was
	// interrupted (Ctrl-C). Say so in one line naming the rank, and stop
	// as after an interrupt: the ranks stop together after the step in
	// progress and rank 0 writes the checkpoint, if there is one to write
	// and time to write it.
	ctx, cancel := context.WithCancel(cmd.Context())
	term := make(chan os.Signal, 1)
	signal.Notify(term, syscall.SIGTERM)
	go func() {
		if _, ok := <-term; ok {
			fmt.Fprintf(j.stderr, "%sstopped by mpirun (another rank failed, or the job was interrupted)\n", j.prefix())
			cancel()
		}
	}()
	cmd.SetContext(ctx)
	return j, nil
}

// prefix starts the lines a rank prints about itself.
func (j *job) prefix() string { return fmt.Sprintf("gopir: rank %d of %d: ", j.rank, j.size) }

// finish ends this rank's part: on success it leaves the job
// (MPI_Finalize); on failure it prints the error naming the rank and
// aborts the whole job with the exit code (MPI_Abort), so that no other
// rank waits for this one.
func (j *job) finish(err error) error {
	if err == nil {
		if cerr := j.comm.Close(); cerr != nil {
			return fmt.Errorf("rank %d of %d: %w", j.rank, j.size, cerr)
		}
		return nil
	}
	code := report(err, j.prefix(), j.stderr)
	if errors.Is(err, train.ErrInterrupted) {
		// Every rank stopped after the same step: leave the job in order.
		j.comm.Close()
		return silentExit{code}
	}
	j.comm.Abort(code, err)
	return silentExit{code}
}
