package exec_test

import (
	"context"
	"syscall"
	"testing"
	"time"

	"github.com/gopir/gopir/exec"
	"github.com/gopir/gopir/ir"
	"github.com/gopir/gopir/ops"
	"github.com/gopir/gopir/tensor"
)

// BenchmarkInterpreterOverhead runs a chain of 10,000 scalar adds: the
// kernels do almost nothing, so ns/instr is the executor's own cost per
// instruction (dispatch, allocation, release). Each add is the last use of
// the previous sum, so the executor donates it and the add updates it in
// place; BenchmarkInterpreterOverheadNoDonate measures the same chain with
// a fresh buffer per add. cpu-ns/instr is the process's CPU time per
// instruction, steadier than wall time on a shared machine.
func BenchmarkInterpreterOverhead(b *testing.B) { benchOverhead(b, exec.Options{Threads: 1}) }

// BenchmarkInterpreterOverheadNoDonate is BenchmarkInterpreterOverhead
// with an allocation and a release per instruction.
func BenchmarkInterpreterOverheadNoDonate(b *testing.B) {
	benchOverhead(b, exec.Options{Threads: 1, NoDonate: true})
}

func benchOverhead(b *testing.B, opts exec.Options) {
	const n = 10000
	bld := ir.NewBuilder(ir.NewProgram())
	x := ops.Data(bld, "x", ir.F32)
	one := ops.Full(bld, ir.F32, 1)
	v := x
	for range n {
		v = ops.Add(bld, v, one)
	}
	ops.Fetch(bld, "y", v)
	p, err := bld.Finish()
	if err != nil {
		b.Fatal(err)
	}
	ex, err := exec.Compile(p, opts)
	if err != nil {
		b.Fatal(err)
	}
	in, _ := tensor.FromF32(host, []float32{0}, []int{}...)
	defer in.Release()
	feeds := map[string]*tensor.Tensor{"x": in}
	run := func() {
		res, err := ex.Run(context.Background(), feeds)
		if err != nil {
			b.Fatal(err)
		}
		res.Release()
	}
	run() // reserve the allocator's chunk: the steady state is what a training loop sees
	cpu0 := cpuTime()
	b.ResetTimer()
	for range b.N {
		run()
	}
	b.StopTimer()
	instrs := float64(b.N) * n
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/instrs, "ns/instr")
	b.ReportMetric(float64((cpuTime()-cpu0).Nanoseconds())/instrs, "cpu-ns/instr")
}

// cpuTime is the CPU time the process has used.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
