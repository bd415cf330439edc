// Package autodiff appends the reverse-mode gradient of a program's scalar
// loss to the program, like a static append_backward, through every op of
// the catalog and through "if" and "while" (docs/autodiff.md).
//
// The forward program is walked backwards from the loss; each op's
// vector-Jacobian product (ops.Def.Grad) appends the gradients of its
// operands, summed where a value has several uses. Ops whose results get no
// gradient, and operands that do not depend on the values asked for, get no
// work.
//
// Control flow:
//
//   - The backward of an "if" is an "if" on the same condition whose
//     branches hold the backward of each forward branch. A value the
//     backward needs from inside a forward branch becomes an extra result
//     of the forward "if" (a residual); the branch not taken yields an
//     empty placeholder of zero bytes. Residual results have dynamic dims
//     so that the placeholder fits their type.
//   - The backward of a "while" is a "while" that runs as many iterations
//     as the forward did (a counter is added to the forward loop). A value
//     the backward needs from inside the forward body is pushed onto a
//     stack each iteration; the backward body pops it, so iterations are
//     replayed in reverse and each residual is freed once consumed.
//     Residuals of one type share a stack, and loops nested in loop
//     bodies share their stacks, so that the backward of a nest stays
//     linear in its depth.
//   - Gradients of values captured by a region from outside flow out of the
//     backward region as results (of the backward "if") or as accumulated
//     loop-carried values (of the backward "while").
//
// Residuals are fetched lazily: a gradient rule reads forward values
// through ops.GradContext.X and Y, and only what it reads is kept.
package autodiff
