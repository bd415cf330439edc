package exec_test

import (
	"context"
	"testing"

	"github.com/gopir/gopir/exec"
	"github.com/gopir/gopir/ir"
	"github.com/gopir/gopir/ops"
	"github.com/gopir/gopir/tensor"
)

// BenchmarkInterpreterOverhead runs a chain of 10,000 scalar adds: the
// kernels do almost nothing, so ns/instr is the executor's own cost per
// instruction (dispatch, allocation, release).
func BenchmarkInterpreterOverhead(b *testing.B) {
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
	ex, err := exec.Compile(p, exec.Options{Threads: 1})
	if err != nil {
		b.Fatal(err)
	}
	in, _ := tensor.FromF32(host, []float32{0}, []int{}...)
	defer in.Release()
	feeds := map[string]*tensor.Tensor{"x": in}
	b.ResetTimer()
	for range b.N {
		res, err := ex.Run(context.Background(), feeds)
		if err != nil {
			b.Fatal(err)
		}
		res.Release()
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/n, "ns/instr")
}
