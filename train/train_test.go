package train_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/gopir/gopir/train"
)

type logLine struct {
	Epoch         int     `json:"epoch"`
	Step          int     `json:"step"`
	Loss          float64 `json:"loss"`
	MemAllocated  int64   `json:"mem_allocated"`
	MemReserved   int64   `json:"mem_reserved"`
	PeakAllocated int64   `json:"peak_allocated"`
	Positive      float64 `json:"positive"`
}

func runJSON(t *testing.T, cfg train.Config) ([]logLine, map[string]float64) {
	t.Helper()
	cfg.JSON, cfg.LogEvery = true, 1
	tr, err := train.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	var out bytes.Buffer
	if _, err := tr.Run(context.Background(), &out); err != nil {
		t.Fatal(err)
	}
	var lines []logLine
	var eval map[string]float64
	for _, l := range strings.Split(strings.TrimSpace(out.String()), "\n") {
		if strings.HasPrefix(l, `{"eval"`) {
			var e struct{ Eval map[string]float64 }
			if err := json.Unmarshal([]byte(l), &e); err != nil {
				t.Fatal(err)
			}
			eval = e.Eval
			continue
		}
		var ll logLine
		if err := json.Unmarshal([]byte(l), &ll); err != nil {
			t.Fatalf("%v: %s", err, l)
		}
		lines = append(lines, ll)
	}
	return lines, eval
}

func TestTrainingLossFallsAndMemoryStaysFlat(t *testing.T) {
	lines, eval := runJSON(t, train.Config{Model: "test_regress", Steps: 60, Seed: 3, CheckLeaks: true})
	if len(lines) != 60 {
		t.Fatalf("%d log lines, want 60", len(lines))
	}
	first, last := lines[0], lines[len(lines)-1]
	if !(last.Loss < first.Loss/2) {
		t.Errorf("loss %v -> %v: did not fall", first.Loss, last.Loss)
	}
	branches := map[float64]bool{}
	for i, l := range lines {
		if l.MemAllocated != first.MemAllocated {
			t.Fatalf("step %d: mem_allocated %d, step 1 had %d", i+1, l.MemAllocated, first.MemAllocated)
		}
		branches[l.Positive] = true
	}
	if len(branches) != 2 {
		t.Errorf("only one branch of the if was taken: %v", branches)
	}
	if lines[8].Epoch != 1 || lines[8].Step != 1 {
		t.Errorf("step 9 logged as epoch %d step %d, want epoch 1 step 1", lines[8].Epoch, lines[8].Step)
	}
	if _, ok := eval["mse"]; !ok {
		t.Errorf("no eval line: %v", eval)
	}
}

func TestLogLineFormat(t *testing.T) {
	tr, err := train.New(train.Config{Model: "test_regress", Steps: 10, LogEvery: 5})
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	var out bytes.Buffer
	if _, err := tr.Run(context.Background(), &out); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	re := regexp.MustCompile(`^Epoch: \[\d+\] \[\d/8\] loss: \d+\.\d{4} mem_allocated: \d+ MB mem_reserved: \d+ MB positive: [01]$`)
	if len(lines) != 3 || !re.MatchString(lines[0]) || !re.MatchString(lines[1]) || !strings.HasPrefix(lines[2], "Eval: mse: ") {
		t.Fatalf("log:\n%s", out.String())
	}
	if !strings.HasPrefix(lines[1], "Epoch: [1] [2/8]") {
		t.Errorf("step 10 logged as %q, want epoch 1 step 2", lines[1])
	}
}

// TestResumeContinuesBitForBit saves after 13 steps, resumes to 30, and
// compares every loss with an uninterrupted 30-step run.
func TestResumeContinuesBitForBit(t *testing.T) {
	full, _ := runJSON(t, train.Config{Model: "test_regress", Steps: 30, Seed: 5})
	dir := t.TempDir()
	// Interrupt a 30-step run after 13 steps, as Ctrl-C would.
	tr, err := train.New(train.Config{Model: "test_regress", Steps: 30, Seed: 5, Save: dir})
	if err != nil {
		t.Fatal(err)
	}
	var head []logLine
	for range 13 {
		rec, err := tr.Step(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		head = append(head, logLine{Loss: rec.Loss})
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := tr.Run(ctx, &bytes.Buffer{}); !errors.Is(err, train.ErrInterrupted) {
		t.Fatalf("interrupt: %v", err)
	}
	tr.Close()
	tail, _ := runJSON(t, train.Config{Model: "test_regress", Steps: 30, Seed: 5, Resume: dir})
	got := append(head, tail...)
	if len(got) != len(full) {
		t.Fatalf("%d + %d steps, want %d", len(head), len(tail), len(full))
	}
	for i := range full {
		if got[i].Loss != full[i].Loss {
			t.Fatalf("step %d: loss %v after resuming, %v uninterrupted", i+1, got[i].Loss, full[i].Loss)
		}
	}
}

func TestBadCheckpointsAreClearErrors(t *testing.T) {
	dir := t.TempDir()
	runJSON(t, train.Config{Model: "test_regress", Steps: 2, Seed: 1, Save: dir})
	path := filepath.Join(dir, "checkpoint.safetensors")
	good, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	flip := append([]byte(nil), good...)
	flip[len(flip)-3] ^= 0xff
	cases := []struct {
		name string
		data []byte
		cfg  train.Config
		want string
	}{
		{"truncated", good[:len(good)-10], train.Config{}, "checksum mismatch"},
		{"tiny", good[:5], train.Config{}, "truncated: 5 bytes"},
		{"header cut", good[:40], train.Config{}, "truncated: the header says"},
		{"bit flip", flip, train.Config{}, "checksum mismatch"},
		{"garbage header", append([]byte{8, 0, 0, 0, 0, 0, 0, 0}, []byte("not json")...), train.Config{}, "corrupt header"},
		{"other seed", good, train.Config{Seed: 2}, "saved with seed 1, this run has 2"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			os.WriteFile(path, tc.data, 0o644)
			cfg := tc.cfg
			cfg.Model, cfg.Steps, cfg.Resume = "test_regress", 4, dir
			if cfg.Seed == 0 {
				cfg.Seed = 1
			}
			_, err := train.New(cfg)
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.HasPrefix(err.Error(), "--resume: ") {
				t.Fatalf("err = %v, want one mentioning %q", err, tc.want)
			}
		})
	}
	if _, err := train.New(train.Config{Model: "test_regress", Resume: t.TempDir()}); err == nil || !strings.Contains(err.Error(), "no such file") {
		t.Errorf("missing checkpoint: %v", err)
	}
}

func TestMemcheck(t *testing.T) {
	rep, err := train.Memcheck(context.Background(), train.Config{Model: "test_regress"}, 12, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !rep.OK() || len(rep.Allocated) != 12 {
		t.Fatalf("memcheck of a correct model failed: %s", rep.Message)
	}
	rep, err = train.Memcheck(context.Background(), train.Config{Model: "test_leaky"}, 12, nil)
	if err != nil {
		t.Fatal(err)
	}
	// The report names the value kept alive: fc2's output, made by "add"
	// (the Linear layer's bias) in the test task.
	if rep.OK() || len(rep.Leaked) == 0 || !strings.Contains(rep.Message, `= "add" at `) || !strings.Contains(rep.Message, "task_test.go:") {
		t.Fatalf("memcheck missed the injected leak or did not name it: %s", rep.Message)
	}
	for _, k := range kept {
		k.Release()
	}
	kept = nil
}

func TestInterruptSavesAndStops(t *testing.T) {
	dir := t.TempDir()
	tr, err := train.New(train.Config{Model: "test_regress", Steps: 30, Save: dir})
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err = tr.Run(ctx, &bytes.Buffer{})
	if !errors.Is(err, train.ErrInterrupted) {
		t.Fatalf("err = %v, want ErrInterrupted", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "checkpoint.safetensors")); err != nil {
		t.Fatalf("no checkpoint after the interrupt: %v", err)
	}
}
