package ops

import (
	"fmt"
	"sort"

	"github.com/gopir/gopir/ir"
	"github.com/gopir/gopir/tensor"
)

// Kernel runs one op on its operands and returns new results. It must not
// keep or release its inputs, except those it owns (Ctx.Owned): those it
// returns or releases, on success and on error. On error it releases every
// tensor it made. A result may share an input's storage only through
// Retain or a view (tensor.Reshape), or be an owned input itself, so that
// reference counts stay exact. It may return its results in Ctx.Results
// (see Ctx.Result).
type Kernel func(c *Ctx, in []*tensor.Tensor) ([]*tensor.Tensor, error)

// Def is the whole definition of one op.
type Def struct {
	Name string
	// Infer computes result types from operand types and attributes.
	Infer func(in []ir.Type, attrs ir.Attrs) ([]ir.Type, error)
	// Verify checks what Infer cannot; optional.
	Verify func(op *ir.Op) error
	// Compute decodes op's attributes once, at compile time, and returns
	// its kernel in destination-passing form (see Compute): the executor
	// allocates the results, with the dtypes and shapes Infer gives for the
	// operands' shapes, and the workspace. Ops whose result shapes depend
	// on operand values, and the stack and sequence ops, whose results are
	// containers, have Bind instead.
	Compute func(op *ir.Op) (Compute, error)
	// Bind decodes op's attributes once, at compile time, and returns its
	// kernel, which allocates its own results. Nil for ops the executor
	// implements itself (data, fetch, parameter) and ops with Compute.
	Bind func(op *ir.Op) (Kernel, error)
	// Donate lists operands whose reference the kernel may take over when
	// the value dies at this op, to update it in place instead of copying;
	// Ctx.Owns tells the kernel which ones it got. A kernel of an op with
	// Donate must handle ownership (see Kernel): the elementwise kernels
	// (ewKernel) write their result into an owned, unshared operand of the
	// result's dtype and shape, and release the other owned operands.
	Donate []int
	// Writes lists operands the kernel updates in place: parameters and
	// optimizer state, owned by the store, which a step changes without
	// reallocating. Such ops usually have no results.
	Writes []int
	// Stacks marks ops that take or make stack values.
	Stacks bool
	// Grad is the op's vector-Jacobian product, used by package autodiff.
	Grad VJP
	// NoGrad marks ops through which no gradient flows (comparisons,
	// argmax, integer casts, random numbers). An op with neither Grad nor
	// NoGrad cannot be differentiated: autodiff says so.
	NoGrad bool
	// Flops, if set, is the work of one execution for static operand and
	// result types, for ops whose work is not about one unit per element
	// (see Flops).
	Flops func(op *ir.Op, in, out []ir.Type) int64
	// Reads, if set, lists for each result the operands it depends on,
	// when some result does not depend on every operand (nil: all of
	// them). A copy of the op may then run after an operand that no
	// needed result reads was overwritten (see Reads).
	Reads func(op *ir.Op) [][]int
	// Pin, for ops that draw random numbers keyed by their position in the
	// program, returns the op's attributes with that key written down, so
	// that a copy elsewhere draws the same numbers (see Pin).
	Pin func(op *ir.Op) ir.Attrs
	// Collective, if set, reports whether op exchanges data with the
	// other ranks of a data-parallel job (see Collective).
	Collective func(op *ir.Op) bool
	// PerSample, if set, reports whether op works sample by sample along
	// the batch, to the same bits however the batch is cut (see
	// PerSample). Set it only for kernels whose every element comes out
	// alike wherever it falls in a vector loop or a thread's share.
	PerSample func(op *ir.Op, batch func(*ir.Value) bool) bool
	// BatchSum, if set, is how op sums over the batch the canonical way
	// (see BatchGroup).
	BatchSum *BatchSum
	// NCHWc, if set, says how op runs on the blocked channel layout with
	// channel block b (NCHWcForm): its form for op's operand types, or
	// false where it has none (a dtype, a rank or a channel count the
	// layout does not hold).
	NCHWc func(op *ir.Op, b int) (NCHWcForm, bool)
	// Winograd, if set, reports whether op can compute its 3×3
	// convolution by Winograd's F(2×2, 3×3) (kernels/winograd.go) when
	// given the attribute winograd:true, which the optimize pass
	// "winograd" sets: fewer multiply-adds than the direct sum, results
	// within float32 rounding of it but not its bits. It says false where
	// the kernel has no such path or where it would not be faster.
	Winograd func(op *ir.Op) bool
}

var defs = map[string]*Def{}

// Register adds d to the catalog and hands its type hooks to package ir,
// so that programs can use an op gopir does not define. Call it from an
// init function; registering a name twice panics.
func Register(d *Def) {
	if d.Name == "" || d.Infer == nil {
		panic("ops.Register: a Def needs a Name and an Infer hook")
	}
	if _, dup := defs[d.Name]; dup {
		panic("ops: " + d.Name + " registered twice")
	}
	defs[d.Name] = d
	ir.Register(d.Name, ir.OpSpec{Infer: d.Infer, Verify: d.Verify, Stacks: d.Stacks, Writes: d.Writes})
}

// Lookup returns the definition of the op named name.
func Lookup(name string) (*Def, bool) {
	d, ok := defs[name]
	return d, ok
}

// Names lists every op in the catalog, sorted.
func Names() []string {
	names := make([]string, 0, len(defs))
	for n := range defs {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// Bind returns the kernel of op, decoding its attributes: its own Bind, or
// for an op with Compute a kernel that allocates the results and the
// workspace itself and calls it (for tests and tools that run ops outside
// the executor).
func Bind(op *ir.Op) (Kernel, error) {
	d, ok := defs[op.Name()]
	if !ok {
		return nil, fmt.Errorf("unknown op %q", op.Name())
	}
	if d.Compute != nil {
		return bindCompute(op, d)
	}
	if d.Bind == nil {
		return nil, fmt.Errorf("op %q has no kernel; the executor runs it", op.Name())
	}
	return d.Bind(op)
}

func register(d *Def) { Register(d) }

func init() { ir.MarkHelperPackage("github.com/gopir/gopir/ops") }
