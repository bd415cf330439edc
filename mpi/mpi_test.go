//go:build mpi

package mpi_test

import (
	"errors"
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/gopir/gopir/mpi"
)

// These tests run under mpirun, as .ci/run does:
//
//	go test -c -tags mpi -o mpi.test ./mpi/ && mpirun -np 2 ./mpi.test

func world(t *testing.T) *mpi.Comm {
	t.Helper()
	if os.Getenv("OMPI_COMM_WORLD_SIZE") == "" {
		t.Skip("run under mpirun: go test -c -tags mpi ./mpi/ && mpirun -np 2 ./mpi.test")
	}
	c, err := mpi.Init()
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestWaitLeavesTheProcessor: a rank that waits for a late one sleeps
// between tests of the request, after its first 2 ms of yielding, instead
// of spinning: over a wait of 400 ms
// it uses a small part of a processor (where ranks share processors, a
// spinning wait takes the time of the rank it waits for).
func TestWaitLeavesTheProcessor(t *testing.T) {
	c := world(t)
	const late = 400 * time.Millisecond
	buf := []float64{1}
	if c.Rank() == 1 {
		time.Sleep(late)
	}
	start, cpu0 := time.Now(), cpuTime()
	r, err := c.IallreduceF64(buf)
	if err == nil {
		err = r.Wait()
	}
	waited, used := time.Since(start), cpuTime()-cpu0
	if err != nil || buf[0] != float64(c.Size()) {
		t.Fatalf("sum %v: %v", buf, err)
	}
	if c.Rank() == 0 {
		t.Logf("waited %v, used %v of processor time", waited.Round(time.Millisecond), used.Round(time.Microsecond))
		if waited > late/2 && used > waited/5 {
			t.Errorf("waited %v for a late rank and used %v of processor time", waited, used)
		}
	}
}

// TestBinding ends with Finalize: it runs last.
func TestBinding(t *testing.T) {
	c := world(t)
	if again, err := mpi.Init(); err != nil || again != c {
		t.Fatalf("a second Init: %v %v", again, err)
	}
	r, n := c.Rank(), c.Size()
	if n < 2 || r < 0 || r >= n {
		t.Fatalf("rank %d of %d", r, n)
	}
	if err := c.Barrier(); err != nil {
		t.Fatal(err)
	}
	d := []float64{float64(r), 1}
	if err := c.AllreduceF64(d); err != nil || d[0] != float64(n*(n-1)/2) || d[1] != float64(n) {
		t.Fatalf("AllreduceF64: %v %v", d, err)
	}
	f := make([]float32, 1<<16)
	for i := range f {
		f[i] = float32(r + 1)
	}
	req, err := c.IallreduceF32(f)
	if err != nil {
		t.Fatal(err)
	}
	for done := false; !done; {
		if done, err = req.Test(); err != nil {
			t.Fatal(err)
		}
	}
	if err := req.Wait(); err != nil || f[0] != float32(n*(n+1)/2) || f[len(f)-1] != f[0] {
		t.Fatalf("IallreduceF32: %v %v", f[0], err)
	}
	g := []float64{1, 2}
	if req, err := c.IallreduceF64(g); err != nil || req.Wait() != nil || g[1] != float64(2*n) {
		t.Fatalf("IallreduceF64: %v %v", g, err)
	}
	// Empty buffers take part too, so the calls stay matched.
	if req, err := c.IallreduceF32(nil); err != nil || req.Wait() != nil {
		t.Fatalf("an empty IallreduceF32: %v", err)
	}
	if err := c.Bcast(nil, 0); err != nil {
		t.Fatalf("an empty Bcast: %v", err)
	}
	b := []byte{byte(r)}
	if err := c.Bcast(b, n-1); err != nil || b[0] != byte(n-1) {
		t.Fatalf("Bcast: %v %v", b, err)
	}
	// Errors come back (MPI_ERRORS_RETURN) instead of aborting the job.
	err = c.Bcast([]byte{1}, n+5)
	var me *mpi.Error
	if !errors.As(err, &me) || me.Call != "MPI_Bcast" || me.Msg == "" {
		t.Fatalf("a broadcast from rank %d of %d: %v", n+5, n, err)
	}
	if err := c.Finalize(); err != nil {
		t.Fatal(err)
	}
	if err := c.Finalize(); err != nil {
		t.Fatalf("a second Finalize: %v", err)
	}
}

func cpuTime() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
