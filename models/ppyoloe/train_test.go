package ppyoloe_test

import (
	"context"
	"math"
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/gopir/gopir/models/ppyoloe"
	"github.com/gopir/gopir/train"
)

// TestShortRunDeterministic: the same seed gives the same losses, bit for
// bit; the losses are finite. (TestEvaluatePerfect covers evaluation.)
func TestShortRunDeterministic(t *testing.T) {
	run := func() []float64 {
		cfg := smallConfig()
		cfg.Steps, cfg.Seed = 5, 3
		tr, err := train.New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		defer tr.Close()
		var losses []float64
		for !tr.Done() {
			rec, err := tr.Step(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			if math.IsNaN(rec.Loss) || math.IsInf(rec.Loss, 0) {
				t.Fatalf("step %d: loss %v", rec.GlobalStep, rec.Loss)
			}
			losses = append(losses, rec.Loss)
		}
		return losses
	}
	a, b := run(), run()
	for i := range a {
		if a[i] != b[i] {
			t.Errorf("step %d: loss %v then %v", i+1, a[i], b[i])
		}
	}
}

// The accuracy run of the README: ppyoloe_s at 160×160 (--image-size 160),
// batch 8, 1200 steps of AdamW at lr 0.002, cosine schedule.
var longConfig = train.Config{Model: ppyoloe.Name, ImageSize: 160, Steps: 1200, LR: 0.002, Threads: 2}

// TestLongAccuracy (GOPIR_LONG=1) trains longConfig, checks mAP@0.5 >= 0.8
// on the held-out set, mem_allocated after every step equal to the
// first's, batches with and without objects, and reports the wall and CPU
// time (the goal: within 30 minutes on 2 cores).
func TestLongAccuracy(t *testing.T) {
	if os.Getenv("GOPIR_LONG") == "" {
		t.Skip("set GOPIR_LONG=1 to run the ppyoloe_s accuracy run (about half an hour on 2 cores)")
	}
	start, cpu0 := time.Now(), cpuTime()
	tr, err := train.New(longConfig)
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	var first int64 = -1
	with, without := 0, 0
	for !tr.Done() {
		rec, err := tr.Step(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if first < 0 {
			first = rec.MemAllocated
		}
		if rec.MemAllocated != first {
			t.Errorf("step %d: mem_allocated %d, step 1 had %d", rec.GlobalStep, rec.MemAllocated, first)
		}
		if rec.Extra["num_gts"] > 0 {
			with++
		} else {
			without++
		}
	}
	m, err := tr.Evaluate(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	wall, cpu := time.Since(start), cpuTime()-cpu0
	t.Logf("%d steps (%d with objects, %d without): map50 %.4f; mem_allocated %d bytes after every step; %v wall, %v CPU",
		with+without, with, without, m["map50"], first, wall.Round(time.Second), cpu.Round(time.Second))
	if m["map50"] < 0.8 {
		t.Errorf("map50 %.4f, want at least 0.8", m["map50"])
	}
	if with == 0 || without == 0 {
		t.Errorf("%d batches with objects, %d without; want both", with, without)
	}
}

func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
