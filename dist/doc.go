// Package dist trains one model on several processes, data-parallel, as
// PyTorch's DistributedDataParallel does: every rank holds the same
// parameters, runs the same training program on its own shard of each
// global batch, and the gradients are averaged over the ranks before the
// optimizer's update, so every rank takes the same step.
//
// The averaging is part of the training program. ReduceGradients inserts,
// between the backward pass and the optimizer's in-place updates, one
// all_reduce_start per bucket of gradients (right after the op that
// produces the bucket's last gradient, so that communication overlaps the
// rest of the backward pass) and one all_reduce_wait per bucket before
// the updates (ops/collective.go). The executor owns the buckets like any
// other buffer: the memory log, the leak check and the allocator's
// statistics see them.
//
// The ranks talk through a Comm: FromEnvironment makes one over MPI (package
// mpi, built with the mpi tag) when mpirun started the process, and Local
// makes N in-process ranks for tests. docs/distributed.md describes the
// whole design, how to run it on several machines and how it maps onto
// DDP's.
package dist
