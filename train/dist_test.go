package train_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sync"
	"testing"

	"github.com/gopir/gopir/dist"
	"github.com/gopir/gopir/train"
)

// Data-parallel training with in-process ranks (dist.Local): the same
// code paths as under mpirun, without MPI. The tests under mpirun are in
// dist/mpi_test.go (build tag mpi).

// rankRun is what one rank saw.
type rankRun struct {
	loss   []float64 // per step, the logged (global) loss
	hash   []uint32  // per step, ReplicaHash after it
	alloc  []int64   // per step, allocated bytes after it
	extras []map[string]float64
}

// trainRanks trains cfg for steps steps on n in-process ranks (n = 1:
// without a communicator) and returns what each rank saw. A rank that
// fails aborts the job, as the command line does.
func trainRanks(t *testing.T, cfg train.Config, n, steps int) ([]rankRun, error) {
	t.Helper()
	cfg.Steps = steps
	var comms []dist.Comm
	if n > 1 {
		comms = dist.Local(n)
	}
	runs := make([]rankRun, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for r := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := cfg
			if comms != nil {
				c.Comm = comms[r]
			}
			err := func() error {
				tr, err := train.New(c)
				if err != nil {
					return err
				}
				defer tr.Close()
				for !tr.Done() {
					rec, err := tr.Step(context.Background())
					if err != nil {
						return err
					}
					runs[r].loss = append(runs[r].loss, rec.Loss)
					runs[r].hash = append(runs[r].hash, tr.ReplicaHash())
					runs[r].alloc = append(runs[r].alloc, rec.MemAllocated)
					runs[r].extras = append(runs[r].extras, rec.Extra)
				}
				return nil
			}()
			if err != nil {
				errs[r] = fmt.Errorf("rank %d: %w", r, err)
				if comms != nil {
					comms[r].Abort(1, err)
				}
			}
		}()
	}
	wg.Wait()
	return runs, errors.Join(errs...)
}

// wantSameTrajectory compares the logged losses of a data-parallel run
// with a single process's to tol, relative.
func wantSameTrajectory(t *testing.T, one, many []float64, tol float64) {
	t.Helper()
	if len(one) != len(many) {
		t.Fatalf("%d steps alone, %d data-parallel", len(one), len(many))
	}
	worst := 0.0
	for i := range one {
		d := math.Abs(one[i]-many[i]) / math.Max(math.Abs(one[i]), 1e-12)
		worst = math.Max(worst, d)
		if !(d <= tol) {
			t.Fatalf("step %d: loss %.9g alone, %.9g data-parallel (relative difference %.3g > %g)", i+1, one[i], many[i], d, tol)
		}
	}
	t.Logf("%d steps, largest relative difference %.3g", len(one), worst)
}

// wantReplicasAlike checks that every rank held the same parameters after
// every step.
func wantReplicasAlike(t *testing.T, runs []rankRun) {
	t.Helper()
	for r := 1; r < len(runs); r++ {
		for i, h := range runs[r].hash {
			if h != runs[0].hash[i] {
				t.Fatalf("step %d: rank %d's parameters hash to %08x, rank 0's to %08x", i+1, r, h, runs[0].hash[i])
			}
		}
	}
}

func TestDataParallelMatchesOneProcess(t *testing.T) {
	for _, c := range []struct {
		cfg   train.Config
		ranks []int
		steps int
	}{
		{train.Config{Model: "mlp", Batch: 24, Threads: 1}, []int{2, 3}, 12},
		{train.Config{Model: "test_regress", Batch: 16, Seed: 2, Threads: 1}, []int{2}, 20},
	} {
		one, err := trainRanks(t, c.cfg, 1, c.steps)
		if err != nil {
			t.Fatal(err)
		}
		for _, n := range c.ranks {
			t.Run(fmt.Sprintf("%s/%d", c.cfg.Model, n), func(t *testing.T) {
				cfg := c.cfg
				cfg.CheckReplicas = true
				runs, err := trainRanks(t, cfg, n, c.steps)
				if err != nil {
					t.Fatal(err)
				}
				if c.cfg.Model == "test_regress" {
					return // dropout draws per rank: only the replicas must agree
				}
				wantSameTrajectory(t, one[0].loss, runs[0].loss, 1e-5)
				wantReplicasAlike(t, runs)
			})
		}
	}
}
