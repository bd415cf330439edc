package main

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func newTestRunner(t *testing.T) *runner {
	t.Helper()
	return &runner{root: t.TempDir(), tmp: t.TempDir(), bin: map[string]string{}, rawOut: io.Discard,
		s: samples{}, fail: map[string]string{}}
}

// script writes an executable shell script that prints out.
func script(t *testing.T, r *runner, name, out string, rc int) string {
	t.Helper()
	p := filepath.Join(r.tmp, name)
	body := "#!/bin/sh\ncat <<'EOF'\n" + out + "EOF\nexit " + string(rune('0'+rc)) + "\n"
	if err := os.WriteFile(p, []byte(body), 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestPeerORT checks that ortbench's lines reach the samples: times, the
// CPU figure, the error summary, FAIL lines, and the 2-thread figure as the
// faster of spinning and not.
func TestPeerORT(t *testing.T) {
	r := newTestRunner(t)
	out := `# ONNX Runtime 1.30.0 (lib), onnxruntime_go v1.27.0 (C API version 24)
ort cnn/check/case0 ok y: max abs err 6.26e-07, max rel err 2.65e-05, max |want| 0.341, shape [2 10]
ort cnn/max-abs-err 6.26e-07 (over 1 outputs of 1 cases)
ort cnn/b64/t2 9.5 ms/inference (median of 1 rounds, range 9.5–9.5, 31 runs; CPU 18.25 ms/inference)
ort cnn/b64/t1 7.25 ms/inference (median of 1 rounds, range 7.25–7.25, 41 runs; CPU 7.5 ms/inference)
ort cnn/b1/t2 FAIL something broke
`
	r.peer(2, nil, "ort cnn", script(t, r, "a", out, 0))
	r.peer(2, nil, "ort cnn", script(t, r, "b", "ort cnn/b64/t2/no-spin 8 ms/inference (median of 1 rounds, range 8–8, 40 runs; CPU 9 ms/inference)\n", 0))
	for key, want := range map[string]float64{
		"ort cnn/max-abs-err":        6.26e-07,
		"ort cnn/b64/t2":             9.5,
		"ort cnn/b64/t2 cpu":         18.25,
		"ort cnn/b64/t1 cpu":         7.5,
		"ort cnn/b64/t2/no-spin":     8,
		"ort cnn/b64/t2/no-spin cpu": 9,
	} {
		if got, ok := r.s.median(key); !ok || got != want {
			t.Errorf("%s: %v (%v), want %v", key, got, ok, want)
		}
	}
	if _, ok := r.s.median("ort cnn/check/case0"); ok {
		t.Error("a check line was recorded as a time")
	}
	if e := r.fail["ort cnn/b1/t2"]; e != "something broke" {
		t.Errorf("FAIL line: %q", e)
	}
	if r.fail["ort cnn"] != "" {
		t.Errorf("peer failed: %s", r.fail["ort cnn"])
	}
	v, cell, ok := r.ortTime("ort cnn/b64/t2")
	if !ok || v != 8 || !strings.Contains(cell, "no spin (spin 9.5)") {
		t.Errorf("2 threads: %v %q %v, want 8 without spinning", v, cell, ok)
	}
	v, cell, ok = r.ortTime("ort cnn/b64/t1")
	if !ok || v != 7.25 || cell != "7.25" {
		t.Errorf("1 thread: %v %q %v", v, cell, ok)
	}

	r.peer(2, nil, "ort mlp", script(t, r, "c", "ortbench: some checks or runs failed\n", 1))
	if r.fail["ort mlp"] == "" {
		t.Error("a failing ortbench left no reason")
	}
}

// TestGoBenchInference checks the keys of BenchmarkONNXInference's
// metrics, with and without the GOMAXPROCS suffix.
func TestGoBenchInference(t *testing.T) {
	r := newTestRunner(t)
	r.goOut = map[string]*bytes.Buffer{}
	out := `BenchmarkONNXInference/model=cnn/batch=64-2         	      13	  17679978 ns/op	        17.34 cpu-ms/inference	       745.1 max-abs-err-nano	        17.45 ms/inference
BenchmarkONNXInference/model=ctrlflow/batch=2 	    6663	     34797 ns/op	         0.02400 cpu-ms/inference	        29.80 max-abs-err-nano	         0.02395 ms/inference
`
	r.bin["inference"] = script(t, r, "bench.test", out, 0)
	r.goBench1("inference", "ONNXInference", "1x", "2", "gopir")
	for key, want := range map[string]float64{
		"gopir BenchmarkONNXInference/model=cnn/batch=64/t2 ms/inference":         17.45,
		"gopir BenchmarkONNXInference/model=cnn/batch=64/t2 max-abs-err-nano":     745.1,
		"gopir BenchmarkONNXInference/model=ctrlflow/batch=2/t1 cpu-ms/inference": 0.024,
	} {
		if got, ok := r.s.median(key); !ok || got != want {
			t.Errorf("%s: %v (%v), want %v", key, got, ok, want)
		}
	}
}

// TestFigures: the before/after table's CPU column says "-" for a
// contender without a figure, not 0.
func TestFigures(t *testing.T) {
	r := newTestRunner(t)
	r.s.add("base x", 1.5)
	r.s.add("ort x", 0.25)
	if got, want := r.figures("base x", "gopir x", "ort x"), "1.5 / - / 0.25"; got != want {
		t.Errorf("figures %q, want %q", got, want)
	}
}

// TestDetInferenceRows: the detector's inference rows pair gopir's
// optimized figure with ORT's at the same batch and thread count (at 2
// threads the faster of spinning and not), judge the bar at 1 and at 2
// threads, and give the plain form at 2 threads without a status.
func TestDetInferenceRows(t *testing.T) {
	r := newTestRunner(t)
	for k, v := range map[string]float64{
		"gopir BenchmarkDetInference/compile=optimized/b=1/t1 ms/inference": 30,
		"ort ppyoloe_s/b1/t1": 20,
		"gopir BenchmarkDetInference/compile=optimized/b=1/t2 ms/inference": 18,
		"ort ppyoloe_s/b1/t2":                                           20,
		"ort ppyoloe_s/b1/t2/no-spin":                                   15,
		"ort ppyoloe_s/b1/t2/no-spin cpu":                               30,
		"gopir BenchmarkDetInference/compile=plain/b=1/t2 ms/inference": 40,
	} {
		r.record(k, v)
	}
	var rows [][]string
	r.detInferenceRows(func(c ...string) { rows = append(rows, c) })
	if len(rows) != 6 {
		t.Fatalf("%d rows, want 6 (optimized at 1 and 2 threads, plain at 2, batch 1 and 8 each)", len(rows))
	}
	if !strings.Contains(rows[2][2], "15.0 (CPU 30.0), no spin (spin 20.0)") {
		t.Errorf("ORT's 2-thread cell %q, want the no-spin figure with its CPU time and the spinning one beside", rows[2][2])
	}
	for i, want := range []struct{ what, ratio, status string }{
		{"batch 1, 1 thread", "1.50", "**not met**"},
		{"batch 8, 1 thread", "-", "-"},
		{"batch 1, 2 threads", "1.20", "**not met**"},
		{"batch 8, 2 threads", "-", "-"},
		{"compiled plainly), batch 1, 2 threads", "2.67", "-"},
	} {
		row := rows[i]
		if !strings.Contains(row[0], want.what) || row[3] != want.ratio || row[5] != want.status {
			t.Errorf("row %d = %q, want %q with ratio %s, status %s", i, row, want.what, want.ratio, want.status)
		}
	}
}
