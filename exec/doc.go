// Package exec compiles a verified program into instructions and runs it
// with exact memory ownership (docs/architecture.md).
//
// Compile computes liveness once per block: after each instruction the
// frame of the running block releases the values whose last use that was.
// A value used inside a nested region counts as used by the op that owns
// the region, so captured values outlive the region (and, for a "while",
// every iteration). "yield" hands its operands to the parent op's results:
// a value of the yielding block is moved, a captured value is shared with
// one more reference. A "while" iteration's block arguments belong to the
// body's frame, so the previous iteration's values are released at their
// last use unless the body yields them again. When a region finishes, its
// frame is empty; there are no skip lists.
//
// An operand that dies at a kernel instruction, belongs to the running
// block and is listed in the op's ops.Def.Donate is moved into the kernel
// rather than lent: the elementwise kernels then write their result into
// its buffer when nobody else holds it (Options.NoDonate turns this off).
//
// When a run fails (a kernel error, out of memory, a cancelled context),
// every frame is unwound and every buffer it held is released, so the
// allocator is back at its baseline and the executable can run again.
package exec
