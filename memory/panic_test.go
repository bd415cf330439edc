package memory_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/gopir/gopir/memory"
)

func mustPanic(t *testing.T, want string, f func()) {
	t.Helper()
	defer func() {
		t.Helper()
		r := recover()
		if r == nil {
			t.Fatalf("no panic, want %q", want)
		}
		if msg := fmt.Sprint(r); !strings.Contains(msg, want) {
			t.Fatalf("panic %q, want it to contain %q", msg, want)
		}
	}()
	f()
}

func TestFreeMisusePanics(t *testing.T) {
	alloc := func(a *memory.Allocator, n int64) *memory.Block {
		b, err := a.Alloc(n)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	for _, tc := range []struct {
		name string
		want string
		run  func(a *memory.Allocator)
	}{
		{"nil", "Free(nil)", func(a *memory.Allocator) { a.Free(nil) }},
		{"foreign", "belongs to another allocator", func(a *memory.Allocator) {
			a.Free(alloc(memory.New(memory.Options{}), 100))
		}},
		{"double", "double Free of block #1 (100 bytes, op \"matmul\" value \"%3\" at m.pir:4:7 step 2)", func(a *memory.Allocator) {
			a.SetTag(memory.Tag{Op: "matmul", Value: "%3", Pos: "m.pir:4:7", Step: 2})
			b := alloc(a, 100)
			a.Free(b)
			a.Free(b)
		}},
		{"double-zero", "double Free", func(a *memory.Allocator) {
			b := alloc(a, 0)
			a.Free(b)
			a.Free(b)
		}},
		{"double-after-merge", "double Free of block #1", func(a *memory.Allocator) {
			x, y := alloc(a, 64), alloc(a, 64)
			a.Free(y)
			a.Free(x) // x absorbs y and the tail
			a.Free(x)
		}},
		{"double-after-reuse", "double Free of block #1", func(a *memory.Allocator) {
			x := alloc(a, 64)
			a.Free(x)
			y := alloc(a, 64) // same bytes, fresh handle
			defer a.Free(y)
			a.Free(x)
		}},
		{"double-after-release", "double Free", func(a *memory.Allocator) {
			x := alloc(a, 64)
			a.Free(x)
			a.EmptyCache()
			a.Free(x)
		}},
		{"double-after-segment-reuse", "double Free of block #1", func(a *memory.Allocator) {
			// x's segment is recycled for y; x's handle stays freed.
			x, keep := alloc(a, 64), alloc(a, 64)
			defer a.Free(keep)
			a.Free(x)
			y := alloc(a, 64)
			defer a.Free(y)
			a.Free(x)
		}},
		{"never-allocated", "never allocated", func(a *memory.Allocator) { a.Free(&memory.Block{}) }},
		{"copy", "Free of a copy of block #1", func(a *memory.Allocator) {
			x := alloc(a, 64)
			defer a.Free(x)
			c := *x
			a.Free(&c)
		}},
		{"alloc-into-live", "a handle serves one allocation", func(a *memory.Allocator) {
			var h memory.Block
			if err := a.AllocInto(&h, 10); err != nil {
				t.Fatal(err)
			}
			defer a.Free(&h)
			_ = a.AllocInto(&h, 10)
		}},
		{"alloc-into-freed", "a handle serves one allocation", func(a *memory.Allocator) {
			var h memory.Block
			if err := a.AllocInto(&h, 10); err != nil {
				t.Fatal(err)
			}
			a.Free(&h)
			_ = a.AllocInto(&h, 10)
		}},
		{"retag-freed", "Retag of freed block #1", func(a *memory.Allocator) {
			x := alloc(a, 64)
			a.Free(x)
			a.Retag(x)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := memory.New(memory.Options{ChunkSize: 4096})
			mustPanic(t, tc.want, func() { tc.run(a) })
			// The panic must not leave the lock held.
			b := alloc(a, 10)
			a.Free(b)
		})
	}
}
