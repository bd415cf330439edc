// Command ddp measures the throughput of data-parallel training for
// bench/ddp: it trains a model of the zoo for -warmup steps, then times
// -steps steps between two points where every rank meets, and rank 0
// prints one line:
//
//	gopir ddp MODEL ranks=N batch=B threads=T samples_per_s=X ms_per_step=Y cpu_ms_per_step=Z
//
// Z is the processor time of all ranks together per step (user and
// system, MPI's busy waiting included): on a machine shared with other
// work it shows the cost of a step independently of the wall clock.
// B is the global batch. Run it alone (one process) or, built with the mpi
// tag, under mpirun (one process per rank):
//
//	go build -tags mpi -o ddp ./bench/internal/ddp
//	mpirun -np 2 ./ddp -model lenet -batch 128 -threads 1
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"runtime/pprof"
	"syscall"
	"time"

	"github.com/gopir/gopir/dist"
	"github.com/gopir/gopir/train"

	_ "github.com/gopir/gopir/models" // the zoo
)

func main() {
	model := flag.String("model", "lenet", "model of the zoo")
	batch := flag.Int("batch", 128, "global batch")
	steps := flag.Int("steps", 200, "timed steps")
	warmup := flag.Int("warmup", 20, "steps before the timing")
	threads := flag.Int("threads", 1, "kernel threads per rank")
	bucket := flag.Int64("bucket", 0, "gradient bucket size in bytes (0: dist.DefaultBucketBytes; -1: one per gradient)")
	profile := flag.String("cpuprofile", "", "write a CPU profile of the timed steps to `FILE` (rank r > 0: FILE.rankR)")
	flag.Parse()
	if err := run(*model, *batch, *steps, *warmup, *threads, *bucket, *profile); err != nil {
		fmt.Fprintln(os.Stderr, "ddp:", err)
		os.Exit(1)
	}
}

func run(model string, batch, steps, warmup, threads int, bucket int64, profile string) error {
	comm, err := dist.FromEnvironment()
	if err != nil {
		return err
	}
	cfg := train.Config{Model: model, Batch: batch, Threads: threads, Steps: warmup + steps, Comm: comm, BucketBytes: bucket}
	tr, err := train.New(cfg)
	if err != nil {
		return fail(comm, err)
	}
	defer tr.Close()
	ctx := context.Background()
	meet := func() error {
		if comm == nil {
			return nil
		}
		_, err := dist.AnyRank(comm, false)
		return err
	}
	for range warmup {
		if _, err := tr.Step(ctx); err != nil {
			return fail(comm, err)
		}
	}
	if err := meet(); err != nil {
		return fail(comm, err)
	}
	if profile != "" {
		if tr.Rank() > 0 {
			profile = fmt.Sprintf("%s.rank%d", profile, tr.Rank())
		}
		f, err := os.Create(profile)
		if err != nil {
			return fail(comm, err)
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return fail(comm, err)
		}
	}
	start, cpu0 := time.Now(), cpuTime()
	for range steps {
		if _, err := tr.Step(ctx); err != nil {
			return fail(comm, err)
		}
	}
	if profile != "" {
		pprof.StopCPUProfile()
	}
	if err := meet(); err != nil {
		return fail(comm, err)
	}
	took := time.Since(start)
	cpu := []float64{(cpuTime() - cpu0).Seconds()}
	if comm != nil {
		if err := comm.AllReduceF64(cpu); err != nil {
			return fail(comm, err)
		}
	}
	if tr.Rank() == 0 {
		fmt.Printf("gopir ddp %s ranks=%d batch=%d threads=%d samples_per_s=%.1f ms_per_step=%.4f cpu_ms_per_step=%.4f\n",
			model, tr.Ranks(), batch, threads, float64(batch*steps)/took.Seconds(), took.Seconds()*1e3/float64(steps), cpu[0]*1e3/float64(steps))
	}
	if comm != nil {
		return comm.Close()
	}
	return nil
}

// cpuTime is the process's user and system time.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// fail ends the job on every rank.
func fail(comm dist.Comm, err error) error {
	if comm != nil {
		fmt.Fprintf(os.Stderr, "ddp: rank %d: %v\n", comm.Rank(), err)
		comm.Abort(1, err)
	}
	return err
}
