// Package ops is gopir's op catalog. Each op is defined once, in a Def that
// holds its type inference, its checks, its CPU kernel binding and (for
// differentiable ops) its gradient rule, like a JAX primitive.
//
// Importing the package registers every op with package ir, so that
// programs can be built, parsed and verified. Files are grouped by op
// family: io.go for program inputs and outputs, elementwise.go, unary.go,
// reduce.go, and so on.
//
// An op whose result shapes follow from its operands' shapes has a Compute:
// its kernel writes into results and a workspace that the executor
// allocates from Infer's types and Work's bytes, and never allocates, so
// the memory of a run is known before it runs (docs/memory.md). The few
// ops whose results depend on operand values (nonzero, unique, the ops
// that read a shape from a tensor), stacks and sequences keep a Bind
// kernel, which allocates its results through the Ctx it receives and
// releases whatever it allocated when it fails.
package ops
