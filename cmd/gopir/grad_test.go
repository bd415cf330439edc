package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gopir/gopir/internal/fdcheck"
)

// runJSON runs gopir run --json once and returns the fetched values.
func runJSON(t *testing.T, args ...string) map[string][]float64 {
	t.Helper()
	r := gopir(append([]string{"run", "--json"}, args...)...)
	if r.code != 0 {
		t.Fatalf("gopir run %v: exit %d: %s", args, r.code, r.stderr)
	}
	var rec struct {
		Fetch map[string]struct {
			Data []float64 `json:"data"`
		} `json:"fetch"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &rec); err != nil {
		t.Fatalf("%v: %s", err, r.stdout)
	}
	out := map[string][]float64{}
	for k, v := range rec.Fetch {
		out[k] = v.Data
	}
	return out
}

func jsonArray(v []float64, rows int) string {
	if rows == 0 {
		b, _ := json.Marshal(v)
		return string(b)
	}
	var parts []string
	cols := len(v) / rows
	for r := range rows {
		b, _ := json.Marshal(v[r*cols : (r+1)*cols])
		parts = append(parts, string(b))
	}
	return "[" + strings.Join(parts, ",") + "]"
}

// TestGradMatchesFiniteDifferences differentiates the testdata programs
// with control flow through the command line and checks every gradient
// element against central differences of the original program.
func TestGradMatchesFiniteDifferences(t *testing.T) {
	type input struct {
		name string
		val  []float64
		rows int // 0: a vector
	}
	cases := []struct {
		file   string
		wrt    string
		inputs []input
		extra  []string
	}{
		{"grad_if.pir", "x,w", []input{{"x", []float64{0.1, 0.2, 0.3, -0.4, 0.5, 0.6}, 2}, {"w", []float64{1, 2, 3}, 0}}, nil},
		{"grad_if.pir", "x,w", []input{{"x", []float64{-0.1, 0.2, -0.3, -0.4, 0.5, -0.6}, 2}, {"w", []float64{1, 2, 3}, 0}}, nil},
		{"grad_while.pir", "x,w", []input{{"x", []float64{0.1, 0.2, 0.3, -0.4, 0.5, 0.6}, 2}, {"w", []float64{0.1, 0, 0.2, 0.3, -0.2, 0.1, 0, 0.5, 0.1}, 3}}, []string{"--feed", "n=3"}},
		{"grad_while.pir", "x,w", []input{{"x", []float64{0.1, 0.2, 0.3, -0.4, 0.5, 0.6}, 2}, {"w", []float64{0.1, 0, 0.2, 0.3, -0.2, 0.1, 0, 0.5, 0.1}, 3}}, []string{"--feed", "n=0"}},
	}
	for _, tc := range cases {
		t.Run(fmt.Sprintf("%s/%v", tc.file, tc.inputs[0].val[0]), func(t *testing.T) {
			src := filepath.Join("testdata", tc.file)
			g := gopir("grad", src, "--loss", "loss", "--wrt", tc.wrt)
			if g.code != 0 {
				t.Fatalf("grad: exit %d: %s", g.code, g.stderr)
			}
			gradFile := filepath.Join(t.TempDir(), "grad.pir")
			os.WriteFile(gradFile, []byte(g.stdout), 0o644)
			feedArgs := func(ins []input) []string {
				args := append([]string{}, tc.extra...)
				for _, in := range ins {
					args = append(args, "--feed", in.name+"="+jsonArray(in.val, in.rows))
				}
				return args
			}
			got := runJSON(t, append([]string{gradFile}, feedArgs(tc.inputs)...)...)
			for k, in := range tc.inputs {
				grad := got[in.name+"@GRAD"]
				if len(grad) != len(in.val) {
					t.Fatalf("%s@GRAD has %d elements, want %d", in.name, len(grad), len(in.val))
				}
				for i := range in.val {
					fd := fdcheck.Derivative(in.val[i], func(delta float64) float64 {
						ins := append([]input{}, tc.inputs...)
						ins[k].val = append([]float64{}, in.val...)
						ins[k].val[i] += delta
						return runJSON(t, append([]string{src}, feedArgs(ins)...)...)["loss"][0]
					})
					if !fdcheck.Close(grad[i], fd, 1e-5) {
						t.Errorf("%s@GRAD[%d] = %v, finite difference %v", in.name, i, grad[i], fd)
					}
				}
			}
		})
	}
}

func TestGradBadInput(t *testing.T) {
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"grad", "testdata/grad_while.pir", "--loss", "h", "--wrt", "x"}, "testdata/grad_while.pir: autodiff: the loss is tensor<2x3xf64>; it must be a scalar (one element)"},
		{[]string{"grad", "testdata/grad_while.pir", "--loss", "loss", "--wrt", "n"}, `testdata/grad_while.pir: autodiff: cannot differentiate with respect to data "n" of type tensor<i64>: it is not a float tensor`},
		{[]string{"grad", "testdata/grad_while.pir", "--loss", "nope", "--wrt", "x"}, `testdata/grad_while.pir: --loss nope: the program has no fetch named "nope" (fetches: loss, h)`},
		{[]string{"grad", "testdata/grad_while.pir", "--loss", "loss", "--wrt", "x,q"}, `testdata/grad_while.pir: --wrt q: no data or parameter named "q" (inputs: x, w, n)`},
		{[]string{"grad", "testdata/grad_while.pir", "--loss", "loss"}, `required flag(s) "wrt" not set`},
		{[]string{"grad", "testdata/bad_syntax.pir", "--loss", "l", "--wrt", "x"}, "testdata/bad_syntax.pir:3:21:"},
	}
	for _, tc := range cases {
		r := gopir(tc.args...)
		if r.code != 2 || strings.Count(r.stderr, "\n") != 1 || !strings.HasPrefix(r.stderr, tc.want) {
			t.Errorf("%v: exit %d, stderr %q\nwant exit 2 and one line starting with %q", tc.args, r.code, r.stderr, tc.want)
		}
	}
}
