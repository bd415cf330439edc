package optim_test

import (
	"context"
	"fmt"

	"github.com/gopir/gopir/autodiff"
	"github.com/gopir/gopir/exec"
	"github.com/gopir/gopir/ir"
	"github.com/gopir/gopir/memory"
	"github.com/gopir/gopir/nn"
	"github.com/gopir/gopir/ops"
	"github.com/gopir/gopir/optim"
	"github.com/gopir/gopir/tensor"
)

// A model with an if in its loss, differentiated and trained with Adam:
// the README's training example.
func Example_trainWithIf() {
	b := ir.NewBuilder(ir.NewProgram())
	m := nn.NewModule(ir.F32, true)
	x, t := ops.Data(b, "x", ir.F32, -1, 2), ops.Data(b, "t", ir.F32, -1, 1)
	d := ops.Subtract(b, m.Linear(b, "fc", x, 1), t)
	mse := ops.ReduceMean(b, ops.Square(b, d), nil, false)
	big := ops.GreaterThan(b, mse, ops.Full(b, ir.F32, 1)) // an if on the loss itself
	loss := b.If(big,
		func(b *ir.Builder) []*ir.Value { return []*ir.Value{ops.Sqrt(b, mse)} },
		func(b *ir.Builder) []*ir.Value { return []*ir.Value{mse} })[0]
	grads, _ := autodiff.Backward(b, loss, m.Trainable())
	state, _ := optim.NewAdam(0.1).Apply(b, m.Trainable(), grads)
	ops.Fetch(b, "loss", loss)
	prog, err := b.Finish()
	if err != nil {
		panic(err)
	}

	alloc, store := memory.New(memory.Options{}), exec.NewStore()
	m.Create(alloc, 1, store.Set)  // parameters, seeded
	state.Create(alloc, store.Set) // Adam's moments, step and learning rate
	exe, _ := exec.Compile(prog, exec.Options{Alloc: alloc, Store: store})
	xs, _ := tensor.FromF32(alloc, []float32{1, 2, 3, -1, 0, 4, 2, 2}, 4, 2)
	ts, _ := tensor.FromF32(alloc, []float32{9, 4, 13, 11}, 4, 1) // t = 2·x0 + 3·x1 + 1
	for step := range 200 {
		res, err := exe.Run(context.Background(), map[string]*tensor.Tensor{"x": xs, "t": ts})
		if err != nil {
			panic(err)
		}
		if step%50 == 0 || step == 199 {
			fmt.Printf("step %3d loss %.4f\n", step, res["loss"].F32()[0])
		}
		res.Release()
	}
	xs.Release()
	ts.Release()
	fmt.Println("allocated = store:", alloc.Stats().Allocated.Current == storeBytes(store))
	// Output:
	// step   0 loss 10.1807
	// step  50 loss 0.1024
	// step 100 loss 0.0120
	// step 150 loss 0.0057
	// step 199 loss 0.0023
	// allocated = store: true
}

// storeBytes is what the store's tensors occupy in the allocator (each
// rounded up to the 64-byte alignment).
func storeBytes(s *exec.Store) int64 {
	var n int64
	for _, name := range s.Names() {
		t, _ := s.Get(name)
		n += (t.Bytes() + 63) / 64 * 64
	}
	return n
}
