package optimize

import (
	"fmt"
	"strings"

	"github.com/gopir/gopir/exec"
	"github.com/gopir/gopir/ir"
)

// Pass is one rewrite, by name.
type Pass struct {
	Name string
	// Run returns the rewritten program (p is not changed) and how many
	// rewrites it made; params are the values it may read and add to.
	Run func(p *ir.Program, params *Params) (*ir.Program, int, error)
}

// Passes are the passes Inference runs, in order: the constants first,
// so that the passes after them see a folded value as the constant it
// is (an identity's 0 or 1, a fold's per-channel factor); identities
// next, so that the patterns after them are contiguous; the folds before
// the fusion, which then takes the folded bias into the fused op; the
// pools without indices before the fusion of a pool into the fused
// convolution that feeds it; softmax's and sigmoid's float32 forms after
// them, as they change no pattern the others look for (and the fusion
// has taken the sigmoids it keeps exact); the blocked layout after them,
// on the fused convolutions (it does nothing where ops.NCHWcBlock is 0);
// Winograd's products last, on the convolutions in their final layout.
var Passes = []Pass{
	{Name: "fold_constants", Run: func(p *ir.Program, _ *Params) (*ir.Program, int, error) { return FoldConstants(p) }},
	{Name: "identities", Run: func(p *ir.Program, _ *Params) (*ir.Program, int, error) { return RemoveIdentities(p) }},
	{Name: "fold_batch_norm", Run: FoldBatchNorm},
	{Name: "fold_scale_shift", Run: FoldScaleShift},
	{Name: "fuse_epilogue", Run: func(p *ir.Program, _ *Params) (*ir.Program, int, error) { return FuseEpilogue(p) }},
	{Name: "drop_pool_indices", Run: func(p *ir.Program, _ *Params) (*ir.Program, int, error) { return DropPoolIndices(p) }},
	{Name: "fuse_pool", Run: func(p *ir.Program, _ *Params) (*ir.Program, int, error) { return FusePool(p) }},
	{Name: "softmax_f32", Run: func(p *ir.Program, _ *Params) (*ir.Program, int, error) { return SoftmaxF32(p) }},
	{Name: "sigmoid_f32", Run: func(p *ir.Program, _ *Params) (*ir.Program, int, error) { return SigmoidF32(p) }},
	{Name: "nchwc", Run: func(p *ir.Program, _ *Params) (*ir.Program, int, error) { return NCHWc(p) }},
	{Name: "winograd", Run: func(p *ir.Program, _ *Params) (*ir.Program, int, error) { return Winograd(p) }},
}

// PassNames lists the passes' names, in order.
func PassNames() []string {
	names := make([]string, len(Passes))
	for i, p := range Passes {
		names[i] = p.Name
	}
	return names
}

// Count is what one pass did.
type Count struct {
	Pass     string
	Rewrites int
}

// Result is an optimized program and what each pass did to it.
type Result struct {
	Program *ir.Program
	Counts  []Count
}

// Summary is one line saying what each pass did.
func (r *Result) Summary() string {
	parts := make([]string, len(r.Counts))
	for i, c := range r.Counts {
		parts[i] = fmt.Sprintf("%s %d", c.Pass, c.Rewrites)
	}
	return strings.Join(parts, ", ")
}

// Inference checks that p is an inference program (CheckInference), runs
// the passes named by only (all of them when only is empty) in the order
// of Passes, verifies the result and drops from params the parameters it
// no longer reads. p is not changed.
func Inference(p *ir.Program, params *Params, only ...string) (*Result, error) {
	if err := CheckInference(p); err != nil {
		return nil, err
	}
	for _, name := range only {
		if !knownPass(name) {
			return nil, fmt.Errorf("optimize: no pass %q (passes: %s)", name, strings.Join(PassNames(), ", "))
		}
	}
	res := &Result{Program: p}
	for _, pass := range Passes {
		if len(only) > 0 && !contains(only, pass.Name) {
			continue
		}
		q, n, err := pass.Run(res.Program, params)
		if err != nil {
			return nil, fmt.Errorf("optimize: %s: %w", pass.Name, err)
		}
		if err := ir.Verify(q); err != nil {
			return nil, fmt.Errorf("optimize: %s made an invalid program (a bug in the pass): %w", pass.Name, err)
		}
		res.Program = q
		res.Counts = append(res.Counts, Count{pass.Name, n})
	}
	if params != nil {
		params.Prune(res.Program)
	}
	return res, nil
}

func knownPass(name string) bool { return contains(PassNames(), name) }

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// Compile optimizes p for inference with the parameter values in store
// (Inference, all passes or those named by only) and compiles the result
// with opts, whose Store it replaces by the Params' store: the returned
// executable's Store shares store's tensors and owns the folded ones;
// release it when done. store itself is not changed.
func Compile(p *ir.Program, store *exec.Store, opts exec.Options, only ...string) (*exec.Executable, *Result, error) {
	params := NewParams(store, opts.Alloc)
	res, err := Inference(p, params, only...)
	if err != nil {
		params.Release()
		return nil, nil, err
	}
	opts.Store = params.Store()
	x, err := exec.Compile(res.Program, opts)
	if err != nil {
		params.Release()
		return nil, nil, err
	}
	return x, res, nil
}
