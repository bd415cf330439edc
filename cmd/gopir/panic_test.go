package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gopir/gopir/ir"
	"github.com/gopir/gopir/ops"
	"github.com/gopir/gopir/tensor"
)

func init() {
	// test_cli_panic (x): a kernel with a bug.
	ops.Register(&ops.Def{Name: "test_cli_panic",
		Infer: func(in []ir.Type, _ ir.Attrs) ([]ir.Type, error) { return in[:1], nil },
		Bind: func(*ir.Op) (ops.Kernel, error) {
			return func(_ *ops.Ctx, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
				_ = in[0].F32()[len(in)+5] // index out of range
				return nil, nil
			}, nil
		}})
}

func writeProgram(t *testing.T, src string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "p.pir")
	if err := os.WriteFile(path, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestKernelPanicExitsOneWithTheStack: a kernel that panics fails the run
// with exit 1, a line that names the op and says it is a bug, and the
// kernel's stack, instead of the top-level "internal error".
func TestKernelPanicExitsOneWithTheStack(t *testing.T) {
	path := writeProgram(t, `{
  (%x) = "full" () {shape:[2], value:1.0, dtype:f32} : () -> tensor<2xf32>
  (%y) = "test_cli_panic" (%x) : (tensor<2xf32>) -> tensor<2xf32>
  () = "fetch" (%y) {name:"y"} : (tensor<2xf32>) -> ()
}`)
	r := gopir("run", path)
	first, rest, _ := strings.Cut(r.stderr, "\n")
	if r.code != 1 || !strings.Contains(first, `the kernel of "test_cli_panic" panicked`) || !strings.Contains(first, "bug in gopir") {
		t.Fatalf("exit %d, stderr %q", r.code, r.stderr)
	}
	if !strings.Contains(rest, "panic_test.go") {
		t.Fatalf("the stack does not show the kernel:\n%s", r.stderr)
	}
}

// TestEmptyConvKernelIsBadInput is issue 12's program: a convolution with
// a 0×0 kernel is refused by the verifier, exit 2.
func TestEmptyConvKernelIsBadInput(t *testing.T) {
	path := writeProgram(t, `{
  (%x) = "data" () {name:"x", shape:[1,1,2,2], dtype:f32} : () -> tensor<1x1x2x2xf32>
  (%w) = "data" () {name:"w", shape:[1,1,0,0], dtype:f32} : () -> tensor<1x1x0x0xf32>
  (%y) = "conv2d" (%x, %w) : (tensor<1x1x2x2xf32>, tensor<1x1x0x0xf32>) -> tensor<1x1x3x3xf32>
  () = "fetch" (%y) {name:"y"} : (tensor<1x1x3x3xf32>) -> ()
}`)
	r := gopir("run", path, "--feed", "x=[[[[1,2],[3,4]]]]", "--feed", "w=[[[]]]")
	if r.code != 2 || !strings.Contains(r.stderr, "kernel size must be at least 1×1") {
		t.Fatalf("exit %d, stderr %q", r.code, r.stderr)
	}
}
