package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gopir/gopir/memory"
	"github.com/gopir/gopir/tensor"
)

type cliResult struct {
	code           int
	stdout, stderr string
}

func gopir(args ...string) cliResult {
	var out, errOut bytes.Buffer
	code := Main(args, strings.NewReader(""), &out, &errOut)
	return cliResult{code, out.String(), errOut.String()}
}

func TestPrintCanonicalText(t *testing.T) {
	for _, f := range []string{"testdata/design_if.pir", "testdata/design_while.pir"} {
		r := gopir("print", f)
		if r.code != 0 || r.stderr != "" {
			t.Fatalf("print %s: exit %d, stderr %q", f, r.code, r.stderr)
		}
		// The canonical text is a fixed point.
		tmp := filepath.Join(t.TempDir(), "p.pir")
		os.WriteFile(tmp, []byte(r.stdout), 0o644)
		if again := gopir("print", tmp); again.stdout != r.stdout {
			t.Errorf("print is not a fixed point for %s:\n%s\nthen\n%s", f, r.stdout, again.stdout)
		}
		if !strings.Contains(r.stdout, `(%0) = "data" () {name:`) {
			t.Errorf("print %s: not canonical:\n%s", f, r.stdout)
		}
	}
}

func TestBadInputIsOneLineAndExitTwo(t *testing.T) {
	cases := []struct {
		args []string
		want string // prefix of the only stderr line
	}{
		{[]string{"print", "testdata/bad_syntax.pir"}, "testdata/bad_syntax.pir:3:21: expected ',' or ')' in operand list, found ':'"},
		{[]string{"print", "testdata/bad_types.pir"}, `testdata/bad_types.pir:4:3: "add": operand shapes [2] and [3] are not broadcastable`},
		{[]string{"print", "testdata/missing.pir"}, "open testdata/missing.pir: no such file or directory"},
		{[]string{"print"}, "give --model NAME or FILE.pir"},
		{[]string{"print", "a.pir", "b.pir"}, "accepts at most 1 arg(s), received 2"},
		{[]string{"print", "--backward", "testdata/design_if.pir"}, "--backward needs --model"},
		{[]string{"print", "--model", "nope"}, `unknown model "nope"`},
		{[]string{"train", "--model", "nope"}, `unknown model "nope"`},
		{[]string{"train", "--batch", "0"}, "--batch 0: want at least 1"},
		{[]string{"train", "--steps", "3", "--epochs", "2"}, "if any flags in the group [steps epochs] are set none of the others can be"},
		{[]string{"train", "--mem-limit", "x"}, `--mem-limit: invalid size "x"`},
		{[]string{"memcheck", "--steps", "1"}, "--steps 1: memcheck needs at least 2 steps"},
		{[]string{"train", "--model", "tinydet", "--image-size", "64"}, "--image-size 64: model tinydet takes images of one size"},
		{[]string{"train", "--model", "ppyoloe_s", "--image-size", "100"}, "--image-size: ppyoloe_s: image size 100, want a multiple of 32"},
		{[]string{"train", "--image-size", "0"}, "--image-size 0: want a positive size"},
		{[]string{"train", "--dtype", "f16"}, `--dtype "f16": want f32 or f64`},
		{[]string{"train", "--model", "ppyoloe_s", "--dtype", "f64"}, "--dtype f64: model ppyoloe_s builds in f32 only"},
		{[]string{"plan", "testdata/design_if.pir", "--dtype", "f64"}, "--dtype needs --model"},
		{[]string{"print", "--deploy"}, "--deploy or --image-size needs --model"},
		{[]string{"print", "--model", "mlp", "--deploy"}, "model mlp has no inference form (--deploy)"},
		{[]string{"print", "--model", "ppyoloe_s", "--deploy", "--backward"}, "give --backward or --deploy, not both"},
		{[]string{"feeds", "--model", "ppyoloe_s"}, "--out DIR is required"},
		{[]string{"feeds", "--model", "ppyoloe_s", "--out", "x", "--steps", "a"}, `--steps "a": want step numbers like 0,7`},
		{[]string{"frobnicate"}, `unknown command "frobnicate" for "gopir"`},
		{[]string{"run", "testdata/design_if.pir"}, "missing --feed x=VALUE: the program expects tensor<?x4xf32>"},
		{[]string{"run", "testdata/design_if.pir", "--feed", "x=[[1,2,3,4],[5,6,7]]"}, "--feed x: array is not rectangular"},
		{[]string{"run", "testdata/design_if.pir", "--feed", "x=[[1,2,3]]"}, `--feed x: the program expects tensor<?x4xf32>, got tensor<1x3xf32>`},
		{[]string{"run", "testdata/design_if.pir", "--feed", "y=1"}, `--feed y: the program has no input "y" (inputs: x)`},
		{[]string{"run", "testdata/design_if.pir", "--feed", "x=[[1,2,3,4]]", "--feed", "x=[[1,2,3,4]]"}, "--feed x: given twice"},
		{[]string{"run", "testdata/design_if.pir", "--feed", "x=nope"}, `--feed x: value "nope" is not a JSON number or array`},
		{[]string{"run", "testdata/design_if.pir", "--feed", "x=@testdata/none.npy"}, "--feed x: open testdata/none.npy: no such file or directory"},
		{[]string{"run", "testdata/design_while.pir", "--feed", "n=1.5"}, "--feed n: element 0: 1.5 is not an integer"},
		{[]string{"run", "testdata/big.pir", "--mem-limit", "lots"}, `--mem-limit: invalid size "lots"`},
		{[]string{"run", "testdata/big.pir", "--repeat", "0"}, "--repeat 0: want at least 1"},
	}
	for _, tc := range cases {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			r := gopir(tc.args...)
			if r.code != 2 {
				t.Fatalf("exit %d, want 2; stderr %q", r.code, r.stderr)
			}
			if strings.Count(r.stderr, "\n") != 1 || !strings.HasPrefix(r.stderr, tc.want) {
				t.Fatalf("stderr %q\nwant one line starting with %q", r.stderr, tc.want)
			}
		})
	}
}

func TestRunJSON(t *testing.T) {
	r := gopir("run", "testdata/design_if.pir", "--feed", "x=[[1,-2,3,-4],[0.5,0,-1,4]]", "--repeat", "3", "--json", "--check-leaks")
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
	if len(lines) != 3 {
		t.Fatalf("%d lines, want one per run:\n%s", len(lines), r.stdout)
	}
	for i, line := range lines {
		var rec struct {
			Run           int   `json:"run"`
			MemAllocated  int64 `json:"mem_allocated"`
			MemReserved   int64 `json:"mem_reserved"`
			PeakAllocated int64 `json:"peak_allocated"`
			Fetch         map[string]struct {
				DType string    `json:"dtype"`
				Shape []int     `json:"shape"`
				Data  []float64 `json:"data"`
			} `json:"fetch"`
		}
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatalf("line %d: %v: %s", i, err, line)
		}
		out := rec.Fetch["out"]
		if rec.Run != i || rec.MemAllocated != 0 || rec.PeakAllocated == 0 || out.DType != "f32" || len(out.Shape) != 2 || out.Shape[0] != 2 || out.Shape[1] != 4 {
			t.Fatalf("line %d: %+v", i, rec)
		}
		want := []float64{1, 0, 3, 0, 0.5, 0, 0, 4} // sum > 0: relu branch
		for j, w := range want {
			if out.Data[j] != w {
				t.Fatalf("out = %v, want %v", out.Data, want)
			}
		}
	}
}

func TestRunWhileAndNpyFeed(t *testing.T) {
	path := filepath.Join(t.TempDir(), "n.npy")
	a := memory.New(memory.Options{})
	n, _ := tensor.FromI64(a, []int64{5}, []int{}...)
	f, _ := os.Create(path)
	if err := tensor.WriteNpy(f, n); err != nil {
		t.Fatal(err)
	}
	f.Close()
	n.Release()
	r := gopir("run", "testdata/design_while.pir", "--feed", "n=@"+path)
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	if !strings.Contains(r.stdout, "sum: tensor<f32> 10") || !strings.Contains(r.stdout, "run 0: mem_allocated: 0 B") {
		t.Fatalf("stdout:\n%s", r.stdout)
	}
}

func TestRunOutOfMemoryExitsOne(t *testing.T) {
	r := gopir("run", "testdata/big.pir", "--mem-limit", "6MiB")
	if r.code != 1 {
		t.Fatalf("exit %d, want 1; stderr %q", r.code, r.stderr)
	}
	want := "ResourceExhaustedError: Out of memory error on CPU 0. Cannot allocate 4.000000MB memory on CPU 0, 4.000000MB memory has been allocated and available memory is only 2.000000MB.\n"
	if !strings.HasPrefix(r.stderr, want) {
		t.Fatalf("stderr %q\nwant it to start with %q", r.stderr, want)
	}
	if ok := gopir("run", "testdata/big.pir", "--mem-limit", "9MiB"); ok.code != 0 {
		t.Fatalf("with 9MiB: exit %d: %s", ok.code, ok.stderr)
	}
}

func TestImpossibleRequestIsAnOOMErrorNotACrash(t *testing.T) {
	r := gopir("run", "testdata/huge.pir")
	if r.code != 1 || !strings.HasPrefix(r.stderr, "ResourceExhaustedError: Out of memory error on CPU 0. Cannot allocate 149.011612GB memory on CPU 0") {
		t.Fatalf("exit %d, stderr %q", r.code, r.stderr)
	}
}

// TestPrintDeploy: the deployed ppyoloe_s has no batch norm and one
// convolution per RepVGG block; the training form has both branches.
func TestPrintDeploy(t *testing.T) {
	dep := gopir("print", "--model", "ppyoloe_s", "--deploy", "--image-size", "64")
	if dep.code != 0 {
		t.Fatalf("exit %d: %s", dep.code, dep.stderr)
	}
	plain := gopir("print", "--model", "ppyoloe_s", "--image-size", "64")
	if plain.code != 0 {
		t.Fatalf("exit %d: %s", plain.code, plain.stderr)
	}
	if strings.Contains(dep.stdout, `"batch_norm"`) || !strings.Contains(dep.stdout, "blocks.0.conv2.deploy.weight") {
		t.Errorf("deployed program still has batch norms or lacks the folded RepVGG convs")
	}
	if !strings.Contains(plain.stdout, `"batch_norm"`) || !strings.Contains(plain.stdout, "blocks.0.conv2.conv1.conv.weight") {
		t.Errorf("training form lacks its batch norms or RepVGG branches")
	}
	if d, p := strings.Count(dep.stdout, `"conv2d"`), strings.Count(plain.stdout, `"conv2d"`); d >= p {
		t.Errorf("%d convolutions deployed, %d in the training form", d, p)
	}
}

// TestFeedsWritesNpy: gopir feeds writes each feed of the asked steps and
// the initial weights.
func TestFeedsWritesNpy(t *testing.T) {
	dir := t.TempDir()
	r := gopir("feeds", "--model", "ppyoloe_s", "--image-size", "64", "--batch", "2", "--steps", "0,7", "--out", dir, "--weights", filepath.Join(dir, "w.safetensors"))
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	for _, f := range []string{"step0/image.npy", "step0/gt_boxes.npy", "step0/gt_classes.npy", "step0/num_gts.npy", "step7/num_gts.npy", "w.safetensors"} {
		if st, err := os.Stat(filepath.Join(dir, f)); err != nil || st.Size() == 0 {
			t.Errorf("%s: %v", f, err)
		}
	}
	raw, err := os.ReadFile(filepath.Join(dir, "step7/num_gts.npy"))
	if err != nil {
		t.Fatal(err)
	}
	n, err := tensor.ReadNpy(bytes.NewReader(raw), memory.New(memory.Options{}))
	if err != nil || n.Float64At(0) != 0 {
		t.Errorf("step 7 (an empty batch of the layout): num_gts %v, %v", n, err)
	}
}
