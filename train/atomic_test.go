package train_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gopir/gopir/exec"
	"github.com/gopir/gopir/ops"
	"github.com/gopir/gopir/train"
)

// snapshot copies every tensor of the store.
func snapshot(s *exec.Store) map[string][]byte {
	m := map[string][]byte{}
	for _, n := range s.Names() {
		t, _ := s.Get(n)
		m[n] = bytes.Clone(t.Raw())
	}
	return m
}

func restore(s *exec.Store, m map[string][]byte) {
	for n, b := range m {
		t, _ := s.Get(n)
		copy(t.Raw(), b)
	}
}

func sameStore(a, b map[string][]byte) bool {
	for n := range a {
		if !bytes.Equal(a[n], b[n]) {
			return false
		}
	}
	return true
}

// writes reports whether the op named name updates the store in place.
func writes(name string) bool {
	d, ok := ops.Lookup(name)
	return ok && len(d.Writes) > 0
}

// A cancelled training step leaves the store as it was before the step or
// as it is after it, bit for bit, whichever instruction the cancellation
// comes before: cancellation is injected after every instruction of one
// step of every model of the zoo (a sample of them for the largest, all of
// them with GOPIR_LONG=1).
func TestCancelledStepIsAtomic(t *testing.T) {
	for _, tc := range []struct {
		model string
		batch int
	}{{"mlp", 16}, {"lenet", 8}, {"gate", 16}, {"rnn", 0}, {"tinydet", 4}} {
		t.Run(tc.model, func(t *testing.T) {
			var n, cancelAt int
			var cancel context.CancelFunc
			var trace []string
			tr, err := train.New(train.Config{Model: tc.model, Batch: tc.batch, Seed: 5, MemoryLog: func(r exec.MemoryRecord) {
				n++
				trace = append(trace, r.Op)
				if n == cancelAt {
					cancel()
				}
			}})
			if err != nil {
				t.Fatal(err)
			}
			defer tr.Close()
			ctx := context.Background()
			if _, err := tr.Step(ctx); err != nil { // optimizer state is not trivial
				t.Fatal(err)
			}
			before := snapshot(tr.Store())
			base := tr.Allocator().Stats().Allocated.Current
			n, trace = 0, nil
			if _, err := tr.Step(ctx); err != nil {
				t.Fatal(err)
			}
			after, total, stepOps := snapshot(tr.Store()), n, trace
			if sameStore(before, after) {
				t.Fatal("a step did not change the store")
			}
			stride := 1
			if os.Getenv("GOPIR_LONG") == "" {
				stride = max(1, total/60)
			}
			committed, sawBoth := false, [2]bool{}
			for k := 1; k <= total; k++ {
				committed = committed || writes(stepOps[k-1])
				if k%stride != 0 && k != 1 && k != total && !writes(stepOps[k-1]) {
					continue
				}
				restore(tr.Store(), before)
				tr.SetStep(1)
				n, trace, cancelAt = 0, nil, k
				var cctx context.Context
				cctx, cancel = context.WithCancel(ctx)
				_, err := tr.Step(cctx)
				cancel()
				got := snapshot(tr.Store())
				switch {
				case err == nil:
					sawBoth[1] = true
					if !committed && k < total {
						t.Fatalf("cancelled after instruction %d (%s), before any write, the step still ran", k, stepOps[k-1])
					}
					if !sameStore(got, after) {
						t.Fatalf("cancelled after instruction %d (%s): the step succeeded but the store differs from an uncancelled step", k, stepOps[k-1])
					}
				case errors.Is(err, context.Canceled):
					sawBoth[0] = true
					if committed {
						t.Fatalf("cancelled after instruction %d (%s), after the step began writing: %v", k, stepOps[k-1], err)
					}
					if !sameStore(got, before) {
						t.Fatalf("cancelled after instruction %d (%s): the store is neither the old nor the new step", k, stepOps[k-1])
					}
				default:
					t.Fatalf("instruction %d: %v", k, err)
				}
				if a := tr.Allocator().Stats().Allocated.Current; a != base {
					t.Fatalf("cancelled after instruction %d: %d bytes allocated, want the store's %d", k, a, base)
				}
			}
			if !sawBoth[0] || !sawBoth[1] {
				t.Fatalf("the sweep saw cancelled: %v, completed: %v; want both", sawBoth[0], sawBoth[1])
			}
		})
	}
}

// An interrupted run saves a checkpoint from which a resumed run repeats
// the uninterrupted trajectory bit for bit, wherever in a step the
// interrupt came.
func TestInterruptedRunResumesExactly(t *testing.T) {
	const steps = 6
	for _, model := range []string{"mlp", "tinydet"} {
		cfg := train.Config{Model: model, Batch: 8, Steps: steps, Seed: 2}
		full, _ := runJSON(t, cfg)
		// Instructions per step, and where the first write is.
		var count, firstWrite int
		probe := cfg
		probe.Steps = 1
		probe.MemoryLog = func(r exec.MemoryRecord) {
			count++
			if firstWrite == 0 && writes(r.Op) {
				firstWrite = count
			}
		}
		pt, err := train.New(probe)
		if err != nil {
			t.Fatal(err)
		}
		pt.Step(context.Background())
		pt.Close()
		for _, at := range []int{1, firstWrite - 1, firstWrite, count - 1} {
			dir := t.TempDir()
			ctx, cancel := context.WithCancel(context.Background())
			n := 0
			c := cfg
			c.Save = dir
			c.MemoryLog = func(r exec.MemoryRecord) {
				if r.Run == 2 { // the third step
					if n++; n == at {
						cancel()
					}
				}
			}
			tr, err := train.New(c)
			if err != nil {
				t.Fatal(err)
			}
			_, err = tr.Run(ctx, &bytes.Buffer{})
			tr.Close()
			cancel()
			if !errors.Is(err, train.ErrInterrupted) {
				t.Fatalf("%s, cancel at %d: %v, want ErrInterrupted", model, at, err)
			}
			r := cfg
			r.Resume = dir
			rest, _ := runJSON(t, r)
			done := steps - len(rest)
			if done != 2 && done != 3 {
				t.Fatalf("%s, cancel at %d: resumed after %d steps, want 2 or 3", model, at, done)
			}
			for i, l := range rest {
				if l.Loss != full[done+i].Loss {
					t.Fatalf("%s, cancel at instruction %d of step 3: resumed step %d loss %v, uninterrupted %v", model, at, done+i+1, l.Loss, full[done+i].Loss)
				}
			}
		}
	}
}

// A --save that cannot work fails before the first step, and a save that
// fails at the end anyway keeps the weights elsewhere.
func TestSaveDirCheckedFirst(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "file")
	os.WriteFile(file, []byte("x"), 0o644)
	holdsDir := filepath.Join(dir, "holds")
	os.MkdirAll(filepath.Join(holdsDir, "checkpoint.safetensors"), 0o755)
	readOnly := filepath.Join(dir, "ro")
	os.MkdirAll(readOnly, 0o555)
	cases := map[string]string{file: "not a directory", holdsDir: "is not a regular file", filepath.Join(file, "sub"): "not a directory"}
	if os.Geteuid() != 0 { // root writes anywhere
		cases[readOnly] = "permission denied"
	}
	for save, want := range cases {
		_, err := train.New(train.Config{Model: "mlp", Steps: 1, Save: save})
		var se *train.SetupError
		if !errors.As(err, &se) || !strings.Contains(err.Error(), want) {
			t.Errorf("--save %s: %v, want a SetupError containing %q", save, err, want)
		}
	}
}

func TestSaveRescuesWeights(t *testing.T) {
	dir := t.TempDir()
	tr, err := train.New(train.Config{Model: "mlp", Batch: 8, Steps: 1, Save: dir})
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	// The directory turns bad while training.
	os.MkdirAll(filepath.Join(dir, "checkpoint.safetensors"), 0o755)
	_, err = tr.Run(context.Background(), &bytes.Buffer{})
	if err == nil || !strings.Contains(err.Error(), "the checkpoint was written to ") {
		t.Fatalf("%v", err)
	}
	rescued := err.Error()[strings.Index(err.Error(), "written to ")+len("written to "):]
	rescued = rescued[:strings.IndexByte(rescued, ' ')]
	defer os.RemoveAll(rescued)
	if _, err := os.Stat(filepath.Join(rescued, "checkpoint.safetensors")); err != nil {
		t.Fatal(err)
	}
	r, err := train.New(train.Config{Model: "mlp", Batch: 8, Steps: 2, Resume: rescued})
	if err != nil {
		t.Fatalf("resuming from the rescued checkpoint: %v", err)
	}
	r.Close()
}

// Temporary files of killed saves go at the next save; a live process's
// stay.
func TestSaveRemovesStaleTemps(t *testing.T) {
	dir := t.TempDir()
	stale := []string{".checkpoint-999999999-123.tmp", ".checkpoint-123.tmp", ".checkpoint-probe-1.tmp"}
	for _, n := range stale {
		os.WriteFile(filepath.Join(dir, n), []byte("junk"), 0o644)
	}
	live := ".checkpoint-1-5.tmp" // pid 1 always runs
	os.WriteFile(filepath.Join(dir, live), []byte("junk"), 0o644)
	tr, err := train.New(train.Config{Model: "mlp", Batch: 8, Steps: 1, Save: dir})
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	if _, err := tr.Run(context.Background(), &bytes.Buffer{}); err != nil {
		t.Fatal(err)
	}
	left, _ := filepath.Glob(filepath.Join(dir, ".checkpoint-*"))
	if len(left) != 1 || filepath.Base(left[0]) != live {
		t.Fatalf("left %v, want only %s", left, live)
	}
}

// Ctrl-C during the evaluation that follows training is an interrupt, not
// a failure.
func TestInterruptDuringEvaluation(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	const steps = 2
	var tr *train.Trainer
	tr, err := train.New(train.Config{Model: "mlp", Batch: 8, Steps: steps, MemoryLog: func(exec.MemoryRecord) {
		if tr.Done() { // trained: this is the evaluation
			cancel()
		}
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	if _, err := tr.Run(ctx, &bytes.Buffer{}); !errors.Is(err, train.ErrInterrupted) {
		t.Fatalf("%v, want ErrInterrupted", err)
	}
}
