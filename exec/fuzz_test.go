package exec_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/gopir/gopir/exec"
	"github.com/gopir/gopir/ir"
	"github.com/gopir/gopir/memory"
	"github.com/gopir/gopir/tensor"
)

// FuzzRun parses, compiles and runs arbitrary programs with small feeds of
// the declared dtypes (dynamic dims as 2): whatever happens, nothing
// panics, and a run that fails or succeeds leaves no buffer behind.
func FuzzRun(f *testing.F) {
	for _, dir := range []string{"../ir/testdata", "../cmd/gopir/testdata"} {
		files, _ := filepath.Glob(filepath.Join(dir, "*.pir"))
		for _, file := range files {
			if src, err := os.ReadFile(file); err == nil && filepath.Base(file) != "huge.pir" && filepath.Base(file) != "big.pir" {
				f.Add(src)
			}
		}
	}
	f.Fuzz(func(t *testing.T, src []byte) {
		p, err := ir.Parse("f.pir", src)
		if err != nil || ir.Verify(p) != nil {
			return
		}
		a := memory.New(memory.Options{Limit: 64 << 20, ChunkSize: 1 << 20})
		x, err := exec.Compile(p, exec.Options{Alloc: a, Threads: 1})
		if err != nil {
			return
		}
		feeds := map[string]*tensor.Tensor{}
		for _, s := range x.Feeds() {
			dims := make([]int, s.Type.Rank())
			n := 1
			for i, d := range s.Type.Dims {
				if d == ir.Dynamic {
					d = 2
				}
				dims[i], n = d, n*d
			}
			if n > 1<<16 || s.Type.IsStack() {
				return
			}
			t, err := tensor.Zeros(host, tensor.DType(s.Type.DType), dims...)
			if err != nil {
				return
			}
			defer t.Release()
			feeds[s.Name] = t
		}
		for _, s := range x.Params() {
			t, err := tensor.Zeros(a, tensor.DType(s.Type.DType), s.Type.Dims...)
			if err != nil {
				return
			}
			x.Store().Set(s.Name, t)
		}
		defer x.Store().Release()
		// A mutated loop bound can make a run endless: cancellation ends it,
		// and must release everything like any other failure.
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		res, err := x.Run(ctx, feeds)
		if err == nil {
			res.Release()
		}
		if got, held := a.Stats().Allocated.Current, x.Store().Bytes(); got < held || got > held+int64(len(x.Params()))*64 {
			t.Fatalf("%d bytes allocated after the run, the store holds %d\n%s", got, held, p)
		}
	})
}
