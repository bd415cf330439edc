package tensor_test

import (
	"testing"

	"github.com/gopir/gopir/memory"
	"github.com/gopir/gopir/tensor"
)

// BenchmarkNewRelease makes and releases a small tensor: the per-tensor
// cost every kernel result pays (header, storage, allocator block).
func BenchmarkNewRelease(b *testing.B) {
	a := memory.New(memory.Options{})
	shape := []int{2, 3}
	b.ReportAllocs()
	for b.Loop() {
		x, err := tensor.New(a, tensor.F32, shape...)
		if err != nil {
			b.Fatal(err)
		}
		x.Release()
	}
}

// BenchmarkRetainRelease shares a tensor and drops the share.
func BenchmarkRetainRelease(b *testing.B) {
	a := memory.New(memory.Options{})
	x, _ := tensor.New(a, tensor.F32, 4)
	defer x.Release()
	for b.Loop() {
		x.Retain().Release()
	}
}
