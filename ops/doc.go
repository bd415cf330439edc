// Package ops is gopir's op catalog. Each op is defined once, in a Def that
// holds its type inference, its checks, its CPU kernel binding and (for
// differentiable ops) its gradient rule, like a JAX primitive.
//
// Importing the package registers every op with package ir, so that
// programs can be built, parsed and verified. Files are grouped by op
// family: io.go for program inputs and outputs, elementwise.go, unary.go,
// reduce.go, and so on.
//
// Kernels allocate their results through the Ctx they receive, so that the
// memory allocator's statistics see every buffer, and they release whatever
// they allocated when they fail.
package ops
