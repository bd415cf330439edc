//go:build mpi

package mpi

/*
#cgo pkg-config: mpi
#include <stdlib.h>
#include <sched.h>
#include <time.h>
#include <mpi.h>

static int gopir_init(int *provided) {
	int done = 0;
	MPI_Initialized(&done);
	if (done) {
		return MPI_Query_thread(provided);
	}
	return MPI_Init_thread(NULL, NULL, MPI_THREAD_SERIALIZED, provided);
}
static int gopir_errors_return(void) { return MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN); }
static int gopir_rank(int *r) { return MPI_Comm_rank(MPI_COMM_WORLD, r); }
static int gopir_size(int *s) { return MPI_Comm_size(MPI_COMM_WORLD, s); }
static int gopir_iallreduce_f32(float *buf, int n, MPI_Request *req) {
	return MPI_Iallreduce(MPI_IN_PLACE, buf, n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD, req);
}
static int gopir_iallreduce_f64(double *buf, int n, MPI_Request *req) {
	return MPI_Iallreduce(MPI_IN_PLACE, buf, n, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD, req);
}
static int gopir_bcast(void *buf, int n, int root) {
	return MPI_Bcast(buf, n, MPI_BYTE, root, MPI_COMM_WORLD);
}
static int gopir_barrier(void) { return MPI_Barrier(MPI_COMM_WORLD); }
static int gopir_test(MPI_Request *req, int *flag) { return MPI_Test(req, flag, MPI_STATUS_IGNORE); }
static void gopir_abort(int code) { MPI_Abort(MPI_COMM_WORLD, code); }
static void gopir_yield(void) { sched_yield(); }
static void gopir_nap(long ns) {
	struct timespec ts = {0, ns};
	nanosleep(&ts, NULL);
}
static int gopir_finalize(void) {
	int done = 0;
	MPI_Finalized(&done);
	if (done) {
		return MPI_SUCCESS;
	}
	return MPI_Finalize();
}
static void gopir_error_string(int code, char *buf, int *len) {
	if (MPI_Error_string(code, buf, len) != MPI_SUCCESS) {
		*len = 0;
	}
}
*/
import "C"

import (
	"fmt"
	"math"
	"runtime"
	"sync"
	"time"
	"unsafe"
)

// Available reports whether this build has the MPI binding (the mpi
// build tag).
const Available = true

// Comm is MPI_COMM_WORLD.
type Comm struct {
	mu         sync.Mutex // MPI_THREAD_SERIALIZED: one call at a time
	rank, size int
	finalized  bool
}

// Request is a non-blocking operation in flight; its buffer stays pinned
// until Wait (or a Test that reports completion) returns.
type Request struct {
	c    *Comm
	h    C.MPI_Request
	pin  runtime.Pinner
	done bool
}

var world struct {
	sync.Mutex
	c *Comm
}

// Init initializes MPI (once per process; later calls return the same
// Comm) with MPI_THREAD_SERIALIZED and makes errors on MPI_COMM_WORLD
// return instead of aborting.
func Init() (*Comm, error) {
	world.Lock()
	defer world.Unlock()
	if world.c != nil {
		return world.c, nil
	}
	var provided C.int
	if rc := C.gopir_init(&provided); rc != C.MPI_SUCCESS {
		return nil, mpiError("MPI_Init_thread", rc)
	}
	if provided < C.MPI_THREAD_SERIALIZED {
		return nil, fmt.Errorf("mpi: the MPI library provides thread level %d, gopir needs MPI_THREAD_SERIALIZED (%d)", int(provided), int(C.MPI_THREAD_SERIALIZED))
	}
	if rc := C.gopir_errors_return(); rc != C.MPI_SUCCESS {
		return nil, mpiError("MPI_Comm_set_errhandler", rc)
	}
	var r, s C.int
	if rc := C.gopir_rank(&r); rc != C.MPI_SUCCESS {
		return nil, mpiError("MPI_Comm_rank", rc)
	}
	if rc := C.gopir_size(&s); rc != C.MPI_SUCCESS {
		return nil, mpiError("MPI_Comm_size", rc)
	}
	world.c = &Comm{rank: int(r), size: int(s)}
	return world.c, nil
}

// Rank is this process's rank in MPI_COMM_WORLD.
func (c *Comm) Rank() int { return c.rank }

// Size is the number of processes in MPI_COMM_WORLD.
func (c *Comm) Size() int { return c.size }

// count checks that n elements fit MPI's int count.
func count(call string, n int) (C.int, error) {
	if n > math.MaxInt32 {
		return 0, fmt.Errorf("mpi: %s of %d elements: MPI counts are 32-bit; split the buffer", call, n)
	}
	return C.int(n), nil
}

// AllreduceF64 replaces buf on every rank by the element-wise sum of
// every rank's buf: IallreduceF64 and Wait, so that it waits as Wait does.
func (c *Comm) AllreduceF64(buf []float64) error {
	r, err := c.IallreduceF64(buf)
	if err != nil {
		return err
	}
	return r.Wait()
}

// IallreduceF32 starts the element-wise sum of buf over every rank, in
// place (MPI_Iallreduce); buf must not be touched until the request
// completes.
func (c *Comm) IallreduceF32(buf []float32) (*Request, error) {
	n, err := count("MPI_Iallreduce", len(buf))
	if err != nil {
		return nil, err
	}
	r := &Request{c: c}
	var p *C.float // NULL for an empty buffer, which still takes part
	if n > 0 {
		r.pin.Pin(&buf[0])
		p = (*C.float)(unsafe.Pointer(&buf[0]))
	}
	c.mu.Lock()
	rc := C.gopir_iallreduce_f32(p, n, &r.h)
	c.mu.Unlock()
	if rc != C.MPI_SUCCESS {
		r.pin.Unpin()
		return nil, mpiError("MPI_Iallreduce", rc)
	}
	return r, nil
}

// IallreduceF64 is IallreduceF32 for float64s.
func (c *Comm) IallreduceF64(buf []float64) (*Request, error) {
	n, err := count("MPI_Iallreduce", len(buf))
	if err != nil {
		return nil, err
	}
	r := &Request{c: c}
	var p *C.double // NULL for an empty buffer, which still takes part
	if n > 0 {
		r.pin.Pin(&buf[0])
		p = (*C.double)(unsafe.Pointer(&buf[0]))
	}
	c.mu.Lock()
	rc := C.gopir_iallreduce_f64(p, n, &r.h)
	c.mu.Unlock()
	if rc != C.MPI_SUCCESS {
		r.pin.Unpin()
		return nil, mpiError("MPI_Iallreduce", rc)
	}
	return r, nil
}

// How Wait waits: it tests the request, yielding the processor between
// tests (sched_yield), for yieldFor; then it sleeps between tests
// (nanosleep: Go's timers wake a millisecond late), first for napFrom,
// each nap twice the last, at most napTo.
const (
	yieldFor = 2 * time.Millisecond
	napFrom  = 10 * time.Microsecond
	napTo    = 500 * time.Microsecond
)

// Wait blocks until the request is complete and unpins its buffer.
// Waiting for a completed request returns nil at once.
//
// It polls MPI_Test instead of blocking in MPI_Wait, which keeps a
// processor busy for as long as the other ranks take to arrive (Open MPI
// spins unless told to yield): where the ranks share processors with each
// other or with other work, that spinning takes the processor from the
// very rank it waits for. For the first yieldFor it gives the processor
// up between tests, to any other thread that wants it, and takes it back
// at once when none does: the ordinary wait for a rank a little behind
// (one step's skew) ends as soon as the sum does, without the latency of
// a sleep. A later sum is seen at most one nap late (napTo, plus the
// kernel's timer slack), while the processor is left to others.
func (r *Request) Wait() error {
	start, nap := time.Now(), napFrom
	for {
		done, err := r.Test()
		if done || err != nil {
			return err
		}
		if time.Since(start) < yieldFor {
			C.gopir_yield()
			continue
		}
		C.gopir_nap(C.long(nap))
		nap = min(2*nap, napTo)
	}
}

// Test reports whether the request is complete (MPI_Test), which also
// lets MPI progress it; a completed request's buffer is unpinned.
func (r *Request) Test() (bool, error) {
	if r.done {
		return true, nil
	}
	var flag C.int
	r.c.mu.Lock()
	rc := C.gopir_test(&r.h, &flag)
	r.c.mu.Unlock()
	if rc != C.MPI_SUCCESS {
		r.done = true
		r.pin.Unpin()
		return true, mpiError("MPI_Test", rc)
	}
	if flag != 0 {
		r.done = true
		r.pin.Unpin()
	}
	return r.done, nil
}

// Bcast copies root's buf into every other rank's buf (MPI_Bcast of
// bytes); every rank passes a buffer of the same length.
func (c *Comm) Bcast(buf []byte, root int) error {
	for off := 0; off == 0 || off < len(buf); off += math.MaxInt32 {
		part := buf[off:min(len(buf), off+math.MaxInt32)]
		var p unsafe.Pointer // NULL for an empty buffer, which still takes part
		if len(part) > 0 {
			p = unsafe.Pointer(&part[0])
		}
		c.mu.Lock()
		rc := C.gopir_bcast(p, C.int(len(part)), C.int(root))
		c.mu.Unlock()
		if err := check("MPI_Bcast", rc); err != nil {
			return err
		}
	}
	return nil
}

// Barrier blocks until every rank has called it (MPI_Barrier).
func (c *Comm) Barrier() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return check("MPI_Barrier", C.gopir_barrier())
}

// Abort ends every process of the job with code (MPI_Abort); it does not
// return when MPI works as specified.
func (c *Comm) Abort(code int) {
	// No lock: Abort must work while another goroutine blocks in MPI.
	C.gopir_abort(C.int(code))
}

// Finalize ends this process's use of MPI (MPI_Finalize); later calls do
// nothing.
func (c *Comm) Finalize() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.finalized {
		return nil
	}
	c.finalized = true
	return check("MPI_Finalize", C.gopir_finalize())
}

func check(call string, rc C.int) error {
	if rc == C.MPI_SUCCESS {
		return nil
	}
	return mpiError(call, rc)
}

func mpiError(call string, rc C.int) error {
	buf := (*C.char)(C.malloc(C.MPI_MAX_ERROR_STRING + 1))
	defer C.free(unsafe.Pointer(buf))
	var n C.int
	C.gopir_error_string(rc, buf, &n)
	msg := C.GoStringN(buf, n)
	if msg == "" {
		msg = fmt.Sprintf("error code %d", int(rc))
	}
	return &Error{Call: call, Code: int(rc), Msg: msg}
}
