// Package tensor provides dense, row-major tensors over reference-counted
// storage taken from a memory.Allocator.
//
// A Tensor is an immutable header (dtype, shape) over a *Storage. Views
// (Reshape, and Retain for sharing the same header) add a reference instead
// of copying; the last Release returns the bytes to the allocator. This is
// the mechanism behind gopir's ownership rules: whoever holds a reference
// releases it exactly once, and the allocator's statistics then say exactly
// what is still held.
//
// New makes one Go object per tensor: the header, the storage, the
// allocator's block handle and a shape of up to four dims; Reshape makes one
// (header and shape). A Pool makes them once: it takes them back when the
// storage is released and hands them out again, for an owner (the
// executor) that makes the same tensors run after run and lets none of
// them out without Detach. A tensor's Shape belongs to its header, so a
// shape kept beyond the tensor's last release must be copied.
//
// Element types are f32, f64, i32, i64 and i1 (bool, one byte per element).
// Typed accessors (F32, I64, ...) return slices over the allocator's bytes
// without copying; they are valid until the last Release.
//
// Debug mode (SetDebug) poisons released bytes with 0xFF (floats read as
// NaN) and turns a use after release or a double release into a panic that
// says where the storage was released. It costs one atomic load per access
// when off.
//
// ReadNpy and WriteNpy move tensors in and out of NumPy's .npy format.
package tensor
