// Package remat rematerializes a training program to a memory budget: it
// chooses forward values that the backward pass needs, drops them after
// their forward use and computes them again right before their first
// backward use, so that the static planner's peak (exec.Plan) fits the
// budget with as little added work as it can find (docs/memory.md,
// "Rematerialization").
//
// Four kinds of recomputation:
//
//   - a value of the top level: a copy of the op that made it (and of
//     those of its operands that are dropped too) is inserted before the
//     value's first use in the backward pass;
//   - a residual of an "if" (a value of the branch that the backward "if"
//     reads, carried out as an extra result): the forward "if" no longer
//     yields it, and the backward "if" recomputes it inside the branch
//     that runs, from the residuals it keeps and values outside;
//   - the tapes of a "while": the forward loop keeps every k-th trip's
//     carried values instead of the residuals of every trip, and the
//     backward loop, segment by segment from the last, runs the forward
//     body again from the segment's checkpoint to refill a tape for those
//     k trips and runs the original backward body over them.
//   - the batch, in pieces (split.go): the per-sample forward ops from the
//     feeds up to a cut run a few samples at a time, keeping only the
//     cut, and the backward ops that read their values run piece by piece
//     too, each piece recomputing what it reads and adding its sums over
//     the batch into the running ones (in the kernels' canonical order,
//     ops.BatchGroup, so that the bits are the whole batch's). Training
//     batch norms are run in passes over the pieces (norms.go): their
//     statistics, and their gradient's sums, summed in float64 lanes
//     carried from piece to piece, then each piece normalised.
//
// The choice is greedy against the planner (Fit): while the planned peak
// is above the budget, it tries each candidate alive at the peak and takes
// the one that lowers the peak most per FLOP it adds (ops.Flops), then
// drops the choices that are not needed after all. Recomputation repeats
// the same ops on the same operands, so it reproduces the values bit for
// bit: random ops are recomputed with their original's stream (ops.Pin),
// an op is never recomputed after an operand it reads was overwritten in
// place, and loops holding random ops or regions are not checkpointed.
// Collective ops (ops.Collective: the all-reduces of data-parallel
// training, synchronized batch norm) are never recomputed and loops
// holding them never checkpointed, so every rank of a data-parallel job
// still runs the same collectives once each, in the same order.
package remat
