package exec_test

import (
	"context"
	"testing"

	"github.com/gopir/gopir/exec"
	"github.com/gopir/gopir/ir"
	"github.com/gopir/gopir/memory"
	_ "github.com/gopir/gopir/ops"
	"github.com/gopir/gopir/tensor"
)

// host holds feeds: they belong to the caller, not to the run, so they
// live on an allocator of their own and do not blur the run's statistics.
var host = memory.New(memory.Options{})

func parse(t testing.TB, src string) *ir.Program {
	t.Helper()
	p, err := ir.Parse(t.Name()+".pir", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func compile(t testing.TB, src string, opts exec.Options) *exec.Executable {
	t.Helper()
	x, err := exec.Compile(parse(t, src), opts)
	if err != nil {
		t.Fatal(err)
	}
	return x
}

// newAlloc returns an allocator with small chunks, so that tests see
// reserved memory move.
func newAlloc() *memory.Allocator { return memory.New(memory.Options{ChunkSize: 1 << 20}) }

func allocated(a *memory.Allocator) int64 { return a.Stats().Allocated.Current }

func f32(t testing.TB, data []float32, shape ...int) *tensor.Tensor {
	t.Helper()
	x, err := tensor.FromF32(host, data, shape...)
	if err != nil {
		t.Fatal(err)
	}
	return x
}

func i64(t testing.TB, v int64) *tensor.Tensor {
	t.Helper()
	x, err := tensor.FromI64(host, []int64{v}, []int{}...)
	if err != nil {
		t.Fatal(err)
	}
	return x
}

func boolean(t testing.TB, v bool) *tensor.Tensor {
	t.Helper()
	x, err := tensor.FromBool(host, []bool{v}, []int{}...)
	if err != nil {
		t.Fatal(err)
	}
	return x
}

func ramp(n int) []float32 {
	d := make([]float32, n)
	for i := range d {
		d[i] = float32(i%7) - 3
	}
	return d
}

type feeds = map[string]*tensor.Tensor

// mustRun runs x once and returns the results.
func mustRun(t testing.TB, x *exec.Executable, in feeds) exec.Results {
	t.Helper()
	res, err := x.Run(context.Background(), in)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// scalarOf returns the only element of a fetched tensor as float64.
func scalarOf(t testing.TB, res exec.Results, name string) float64 {
	t.Helper()
	v, ok := res[name]
	if !ok {
		t.Fatalf("no fetch %q in %v", name, res)
	}
	if v.Len() != 1 {
		t.Fatalf("fetch %q has %d elements, want 1", name, v.Len())
	}
	return v.Float64At(0)
}

func releaseFeeds(in feeds) {
	for _, t := range in {
		t.Release()
	}
}
