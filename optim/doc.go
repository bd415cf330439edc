// Package optim appends optimizer updates to a training program: SGD (with
// momentum, Nesterov momentum and weight decay), Adam and AdamW, gradient
// clipping by global norm, and learning-rate schedules. It follows PyTorch
// 1.13 (torch.optim, torch.nn.utils.clip_grad_norm_, torch.optim.lr_scheduler)
// and is checked against it: tools/golden_optim.py records 20-step
// trajectories that the tests reproduce to 1e-9.
//
// A training program is one IR program: the forward pass, its backward
// (package autodiff) and, appended after it by an Optimizer, one in-place
// update op per parameter (sgd_update, momentum_update, adam_update from
// ops/optim.go). Parameters and optimizer state are persistable values:
// "parameter" ops read them from the executor's store, shared and not
// copied, and the update ops write them in place. A step therefore
// allocates nothing that outlives it, and the store's tensors are created
// once and never reallocated:
//
//	b := ir.NewBuilder(ir.NewProgram())
//	w := ops.Parameter(b, "fc.w", ir.F32, 784, 10)
//	... // forward pass, scalar loss
//	ops.Fetch(b, "loss", loss)
//	grads, err := autodiff.Backward(b, loss, params)
//	grads, norm := optim.ClipByGlobalNorm(b, grads, 1.0) // optional
//	state, err := optim.NewAdam(1e-3).Apply(b, params, grads)
//	prog, err := b.Finish()
//
//	store := exec.NewStore() // holds the parameters, initialised by the model
//	err = state.Create(alloc, store.Set) // optimizer state, once
//	x, err := exec.Compile(prog, exec.Options{Alloc: alloc, Store: store})
//	lr, _ := store.Get(state.LR)
//	for step := 0; step < n; step++ {
//		optim.SetScalar(lr, schedule.LR(step))
//		res, err := x.Run(ctx, feeds) // forward, backward and update
//		...
//		res.Release()
//	}
//
// Apply returns the State the program now reads besides the parameters:
// each value's name, type and initial value (StateSpec). Names are derived
// from the parameter's: "fc.w@adam.m", "fc.w@adam.v", "fc.w@sgd.velocity";
// shared scalars are "optim.lr" (the learning rate, f64) and, for Adam,
// "optim.step" (the number of steps taken, i64, incremented by the program
// before the updates so that the first update sees 1). Both names can be
// changed per optimizer (LRName, StepName), e.g. to use two optimizers on
// disjoint parameter sets in one program.
//
// Memory: the update ops allocate nothing, so after each step the
// allocator holds exactly the store's buffers (parameters, optimizer state,
// learning rate, step counter) plus what the caller fetched. The tests
// train a model with an "if" and a "while" for 1000 steps and check this
// after every step, together with the identity of the store's tensors and
// the freeing of the loop's stacks.
//
// The learning rate is a value in the store, not an attribute, so that a
// schedule changes it without recompiling: the training loop writes
// Schedule.LR(step) into it before each run. Schedules (Constant,
// StepDecay, Cosine, Warmup) document their exact formulas and how they
// relate to PyTorch's StepLR, CosineAnnealingLR, LinearLR and SequentialLR.
package optim
