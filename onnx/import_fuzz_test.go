package onnx_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/gopir/gopir/exec"
	"github.com/gopir/gopir/memory"
	"github.com/gopir/gopir/onnx"
	"github.com/gopir/gopir/tensor"
)

// FuzzImport imports arbitrary bytes as an ONNX model and, when that
// works, compiles and runs the program on small feeds of the declared
// types (dynamic dims as 2): nothing panics, an import that fails leaves
// no parameter allocated, and a run, failed or not, leaves nothing behind
// but the parameters.
func FuzzImport(f *testing.F) {
	for _, b := range suiteSeeds("node/test_*/model.onnx", 60) {
		f.Add(b)
	}
	for _, b := range suiteSeeds("simple/*/model.onnx", 10) {
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		mp, err := onnx.ParseModel(data)
		if err != nil {
			return
		}
		a := memory.New(memory.Options{ChunkSize: 1 << 16, Limit: 64 << 20})
		m, err := onnx.Import(mp, onnx.Options{Alloc: a})
		var bug *onnx.BugError
		if errors.As(err, &bug) {
			t.Fatalf("%v\n%s", err, bug.Stack)
		}
		if err != nil {
			if n := a.Stats().Allocated.Current; n != 0 {
				t.Fatalf("a failed import left %d bytes: %v", n, err)
			}
			return
		}
		defer m.Release()
		store := exec.NewStore()
		for n, p := range m.Params {
			store.Set(n, p.Retain())
		}
		defer store.Release()
		x, err := exec.Compile(m.Program, exec.Options{Alloc: a, Store: store, Threads: 1})
		if err != nil {
			t.Fatalf("an imported program does not compile: %v", err)
		}
		host := memory.New(memory.Options{Limit: 64 << 20})
		feeds := map[string]*tensor.Tensor{}
		for _, in := range m.Inputs {
			if in.Type.IsStack() || in.Type.Unranked {
				return
			}
			dims := make([]int, in.Type.Rank())
			for i, d := range in.Type.Dims {
				dims[i] = d
				if d < 0 {
					dims[i] = 2
				}
			}
			v, err := tensor.Zeros(host, tensor.DType(in.Type.DType), dims...)
			if err != nil {
				return
			}
			feeds[in.Name] = v
		}
		base := a.Stats().Allocated.Current
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		res, err := x.Run(ctx, feeds)
		if err == nil {
			res.Release()
		}
		for _, v := range feeds {
			v.Release()
		}
		if n := a.Stats().Allocated.Current; n != base {
			t.Fatalf("%d bytes left after a run (%v), %d before", n, err, base)
		}
	})
}
