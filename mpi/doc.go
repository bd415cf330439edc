// Package mpi is gopir's binding to the C API of MPI (Open MPI, or any
// MPI-3 implementation), reduced to what data-parallel training uses:
// initialization and finalization, rank and size, the sum of float32 and
// float64 buffers across ranks (blocking, and non-blocking with a request
// to wait for, so that communication overlaps computation), broadcast,
// barrier and abort. Errors are returned, never fatal: Init sets
// MPI_ERRORS_RETURN on MPI_COMM_WORLD, and each failing call is an
// *Error naming the call and carrying MPI's message.
//
// The binding uses cgo and is compiled only with the build tag mpi:
//
//	go build -tags mpi ./cmd/gopir     # needs libopenmpi-dev (mpi.h, libmpi) and pkg-config
//
// Without the tag the package still compiles, Available is false and Init
// returns ErrNotBuilt, so the default build stays pure Go and needs no C
// toolchain.
//
// All operations act on MPI_COMM_WORLD and are serialized by a mutex:
// Init asks for MPI_THREAD_SERIALIZED, since a Go program's calls come
// from whichever thread runs the calling goroutine. A buffer handed to a
// non-blocking call is pinned (runtime.Pinner) until its request
// completes, so that C may keep the pointer as cgo's rules require.
//
// Waits (Request.Wait, and AllreduceF64, which is a non-blocking sum and
// its wait) test the request for 50 µs and then sleep between tests
// instead of spinning in MPI_Wait: ranks that share processors, with each
// other or with other work, would otherwise take the processor from the
// rank they wait for.
package mpi

import "errors"

// ErrNotBuilt is what Init returns in a build without the mpi tag.
var ErrNotBuilt = errors.New("gopir was built without MPI: rebuild it with -tags mpi (needs Open MPI's libopenmpi-dev and pkg-config)")

// Error is a failed MPI call.
type Error struct {
	Call string // "MPI_Iallreduce", ...
	Code int    // MPI's error code
	Msg  string // MPI_Error_string
}

func (e *Error) Error() string { return e.Call + ": " + e.Msg }
