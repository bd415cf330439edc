package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gopir/gopir/kernels"
)

// run optimizes inference programs by default: the CNN's output is within
// 1e-5 of the unoptimized run's and PyTorch's within 1e-4; --passes picks
// passes; with only the exact passes the output is the same text.
func TestRunOptimize(t *testing.T) {
	model := filepath.Join(models, "cnn.onnx")
	feed := []string{"--feed", "x=@" + filepath.Join(models, "cnn/input_x.npy")}
	want := npyValues(t, filepath.Join(models, "cnn/output_y.npy"))
	plain := fetchValues(t, "y", append([]string{"run", model, "--optimize=false"}, feed...)...)
	opt := fetchValues(t, "y", append([]string{"run", model, "--repeat", "2"}, feed...)...)
	near(t, "optimized vs unoptimized", opt, plain, 1e-5)
	near(t, "optimized vs PyTorch", opt, want, 1e-4)
	exact := fetchValues(t, "y", append([]string{"run", model, "--passes", "identities,fuse_epilogue"}, feed...)...)
	for i := range exact {
		if exact[i] != plain[i] {
			t.Fatalf("identities and fusion alone: y[%d] = %v, unoptimized %v", i, exact[i], plain[i])
		}
	}
	r := gopir(append([]string{"run", model, "--optimize", "--passes", "fold_everything"}, feed...)...)
	if r.code != exitBadInput || !strings.Contains(r.stderr, `no pass "fold_everything"`) {
		t.Errorf("unknown pass: exit %d, %q", r.code, r.stderr)
	}
}

// A program with a backward runs as written by default and is bad input
// with an explicit --optimize.
func TestRunOptimizeRefusesBackward(t *testing.T) {
	dir := t.TempDir()
	if r := gopir("grad", "testdata/grad_if.pir", "--loss", "loss", "--wrt", "x,w", "-o", dir); r.code != 0 {
		t.Fatalf("grad: exit %d: %s", r.code, r.stderr)
	}
	feeds := []string{"--feed", "x=[[1,2,3],[4,5,6]]", "--feed", "w=[1,2,3]"}
	if r := gopir(append([]string{"run", dir}, feeds...)...); r.code != 0 || !strings.Contains(r.stdout, "x@GRAD") {
		t.Errorf("default: exit %d: %s %s", r.code, r.stdout, r.stderr)
	}
	r := gopir(append([]string{"run", dir, "--optimize"}, feeds...)...)
	if r.code != exitBadInput || !strings.Contains(r.stderr, `"relu_grad" is part of a backward pass`) {
		t.Errorf("--optimize: exit %d, %q", r.code, r.stderr)
	}
}

// print --optimize prints the program run --optimize runs, after a line
// saying what each pass did; it parses back.
func TestPrintOptimize(t *testing.T) {
	r := gopir("print", "--optimize", filepath.Join(models, "cnn.onnx"))
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	first, _, _ := strings.Cut(r.stdout, "\n")
	// The second convolution computes by Winograd where the kernels have
	// its vector transforms.
	wino := "0"
	if kernels.Conv2DWinogradOK(kernels.Conv2DParams{N: 1, C: 32, H: 16, W: 16, O: 64, KH: 3, KW: 3, SH: 1, SW: 1, PH: 1, PW: 1, DH: 1, DW: 1, Groups: 1, Pool2: true}) {
		wino = "1"
	}
	if first != "// optimized for inference: fold_constants 0, identities 0, fold_batch_norm 2, fold_scale_shift 0, fuse_epilogue 3, drop_pool_indices 2, fuse_pool 2, softmax_f32 0, sigmoid_f32 0, nchwc 0, winograd "+wino {
		t.Errorf("first line %q", first)
	}
	for _, want := range []string{`"conv2d_fused"`, `activation:"relu"`, `"matmul_fused"`, `name:"conv1.weight:folded"`, `pool:"max2x2"`} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("no %s in\n%s", want, r.stdout)
		}
	}
	for _, gone := range []string{`"batch_norm"`, `"max_pool2d`} {
		if strings.Contains(r.stdout, gone) {
			t.Errorf("%s left in\n%s", gone, r.stdout)
		}
	}
	tmp := filepath.Join(t.TempDir(), "p.pir")
	os.WriteFile(tmp, []byte(r.stdout), 0o644)
	if again := gopir("print", tmp); again.code != 0 {
		t.Errorf("the printed program does not parse: %s", again.stderr)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"print", "--optimize", "--model", "mlp", "--backward"}, "is part of a backward pass"},
		{[]string{"print", "--passes", "identities", filepath.Join(models, "cnn.onnx")}, "--passes needs --optimize"},
		{[]string{"print", "--optimize", "--model", "mlp", "--backward", "--mem-limit", "1MiB"}, "--optimize prints an inference program"},
	} {
		if r := gopir(c.args...); r.code != exitBadInput || !strings.Contains(r.stderr, c.want) {
			t.Errorf("%v: exit %d, %q", c.args, r.code, r.stderr)
		}
	}
	if r := gopir("print", "--optimize", "--model", "lenet"); r.code != 0 || !strings.Contains(r.stdout, "conv2d_fused") {
		t.Errorf("print --optimize --model lenet: exit %d %s", r.code, r.stderr)
	}
}

// The blocked layout's pass is one of --passes' list, printed like the
// others: where this machine has the blocked convolution's vector
// kernels, the ResNet's convolutions go blocked (the CNN's carry their
// pools, which the blocked kernel has not), all but the first, which
// without drop_pool_indices feeds a max_pool2d with indices and so would
// sit alone between two reorders; elsewhere it leaves the program NCHW.
func TestPrintOptimizeNCHWc(t *testing.T) {
	if r := gopir("print", "--help"); !strings.Contains(r.stdout, "sigmoid_f32,nchwc,winograd)") {
		t.Errorf("print --help does not list the nchwc and winograd passes:\n%s", r.stdout)
	}
	model := filepath.Join(models, "resnet18ish.onnx")
	if _, err := os.Stat(model); err != nil {
		t.Skipf("%s absent", model)
	}
	r := gopir("print", "--optimize", "--passes", "fold_batch_norm,fuse_epilogue,nchwc", model)
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	first, _, _ := strings.Cut(r.stdout, "\n")
	want, blocked := "// optimized for inference: fold_batch_norm 20, fuse_epilogue 21, nchwc 0", false
	if kernels.NCHWcBlock() != 0 {
		want, blocked = "// optimized for inference: fold_batch_norm 20, fuse_epilogue 21, nchwc 20", true
	}
	if first != want {
		t.Errorf("first line %q, want %q", first, want)
	}
	if got := strings.Contains(r.stdout, `"conv2d_nchwc"`) && strings.Contains(r.stdout, `"reorder_nchw"`); got != blocked {
		t.Errorf("blocked convolutions and reorders printed: %v, want %v", got, blocked)
	}
}
