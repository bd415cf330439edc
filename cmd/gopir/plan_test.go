package main

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// planJSON runs gopir plan --json and decodes its line.
func planJSON(t *testing.T, args ...string) (peak int64, assumed []string) {
	t.Helper()
	r := gopir(append([]string{"plan", "--json"}, args...)...)
	if r.code != 0 {
		t.Fatalf("plan %v: exit %d: %s", args, r.code, r.stderr)
	}
	var rec struct {
		Peak    int64    `json:"peak"`
		Assumed []string `json:"assumed"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &rec); err != nil {
		t.Fatalf("plan %v: %v in %q", args, err, r.stdout)
	}
	return rec.Peak, rec.Assumed
}

// The plan of a program is the peak its run reports, for each way of
// giving the feed's shape.
func TestPlanMatchesRun(t *testing.T) {
	for _, rows := range []int{1, 3, 100} {
		row := "[1,2,3,4]"
		x := "[" + strings.Repeat(row+",", rows-1) + row + "]"
		r := gopir("run", "testdata/design_if.pir", "--feed", "x="+x, "--json")
		if r.code != 0 {
			t.Fatalf("run: exit %d: %s", r.code, r.stderr)
		}
		var run struct {
			Peak int64 `json:"peak_allocated"`
		}
		if err := json.Unmarshal([]byte(r.stdout), &run); err != nil {
			t.Fatal(err)
		}
		n := strconv.Itoa(rows)
		for _, args := range [][]string{
			{"testdata/design_if.pir", "--feed-shape", "x=" + n + "x4"},
			{"testdata/design_if.pir", "--batch", n},
		} {
			peak, assumed := planJSON(t, args...)
			if peak != run.Peak || peak == 0 {
				t.Errorf("%d rows: plan %v says %d bytes, the run peaked at %d", rows, args, peak, run.Peak)
			}
			if len(assumed) != 1 || !strings.Contains(assumed[0], `branch of the "if"`) {
				t.Errorf("plan %v: assumed %q, want the if's branch", args, assumed)
			}
		}
	}
}

// --fit finds the batch at the edge of the limit: training at it stays
// under the limit, and train with --remat=off refuses one more before
// allocating anything.
func TestPlanFitAgreesWithTrain(t *testing.T) {
	const limit = 16 << 20
	r := gopir("plan", "--model", "mlp", "--backward", "--fit", "16MiB", "--json")
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	var rec struct {
		Fit struct {
			Batch int   `json:"batch"`
			Peak  int64 `json:"peak"`
		} `json:"fit"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &rec); err != nil {
		t.Fatal(err)
	}
	b := rec.Fit.Batch
	if b < 2 || rec.Fit.Peak > limit {
		t.Fatalf("fit %+v", rec.Fit)
	}
	at := gopir("train", "--model", "mlp", "--steps", "1", "--batch", strconv.Itoa(b), "--mem-limit", "16MiB", "--json")
	if at.code != 0 {
		t.Fatalf("train at batch %d: exit %d: %s", b, at.code, at.stderr)
	}
	var step struct {
		Peak int64 `json:"peak_allocated"`
	}
	if err := json.Unmarshal([]byte(strings.SplitN(at.stdout, "\n", 2)[0]), &step); err != nil {
		t.Fatal(err)
	}
	if step.Peak != rec.Fit.Peak || step.Peak > limit {
		t.Errorf("batch %d: the step peaked at %d bytes, the plan said %d, the limit is %d", b, step.Peak, rec.Fit.Peak, limit)
	}
	over, _ := planJSON(t, "--model", "mlp", "--backward", "--batch", strconv.Itoa(b+1))
	if over <= limit {
		t.Errorf("batch %d plans %d bytes, within the limit --fit was given", b+1, over)
	}
	tr := gopir("train", "--model", "mlp", "--steps", "1", "--batch", strconv.Itoa(b+1), "--mem-limit", "16MiB", "--remat=off")
	if tr.code != 1 || !strings.Contains(tr.stderr, "ResourceExhaustedError") || !strings.Contains(tr.stderr, "nothing was allocated") {
		t.Errorf("train at batch %d: exit %d: %s", b+1, tr.code, tr.stderr)
	}
}

// The plan of lenet's training step is the peak its training reports.
func TestPlanLenetAsTrainReports(t *testing.T) {
	peak, _ := planJSON(t, "--model", "lenet", "--backward", "--batch", "64")
	r := gopir("train", "--model", "lenet", "--batch", "64", "--steps", "2", "--log-every", "1", "--json")
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	for _, line := range strings.Split(strings.TrimSpace(r.stdout), "\n") {
		var step struct {
			Peak *int64 `json:"peak_allocated"`
		}
		if json.Unmarshal([]byte(line), &step) == nil && step.Peak != nil && *step.Peak != peak {
			t.Errorf("train reports peak_allocated %d, plan says %d", *step.Peak, peak)
		}
	}
}

func TestPlanBadInput(t *testing.T) {
	for _, args := range [][]string{
		{"testdata/design_if.pir"},
		{"testdata/design_if.pir", "--feed-shape", "x=3xq"},
		{"testdata/design_if.pir", "--feed-shape", "y=3x4"},
		{"testdata/design_if.pir", "--feed-shape", "x=3x5"},
		{"testdata/design_if.pir", "--feed-shape", "x=3x4", "--feed-shape", "x=2x4"},
		{"testdata/design_if.pir", "--batch", "0"},
		{"testdata/design_if.pir", "--model", "mlp"},
		{"testdata/design_if.pir", "--backward"},
		{"--model", "nosuch"},
		{"--model", "mlp", "--fit", "lots"},
		{"--model", "mlp", "--fit", "0"},
		{"--image-size", "64"},
		{"--model", "ppyoloe_s", "--image-size", "-32"},
		{"--model", "ppyoloe_s", "--image-size", "100"},
		{"--model", "mlp", "--image-size", "64"},
		{},
	} {
		r := gopir(append([]string{"plan"}, args...)...)
		if r.code != 2 || strings.Count(strings.TrimSpace(r.stderr), "\n") != 0 {
			t.Errorf("plan %v: exit %d, stderr %q; want 2 and one line", args, r.code, r.stderr)
		}
	}
}

// The plan of ppyoloe_s's training step (both ifs unknown: the higher
// branches kept) is the peak its training reports on a batch with
// objects, to the byte, and no lower than on the layout's empty batch
// (the 8th step).
func TestPlanPPYOLOEAsTrainReports(t *testing.T) {
	args := []string{"--model", "ppyoloe_s", "--image-size", "64", "--batch", "2"}
	peak, assumed := planJSON(t, append([]string{"--backward"}, args...)...)
	if len(assumed) != 2 {
		t.Errorf("assumed %q, want the two ifs of the loss", assumed)
	}
	r := gopir(append([]string{"train", "--steps", "8", "--log-every", "1", "--json"}, args...)...)
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	with, without := 0, 0
	for _, line := range strings.Split(strings.TrimSpace(r.stdout), "\n") {
		var step struct {
			Peak   *int64  `json:"peak_allocated"`
			NumGTs float64 `json:"num_gts"`
		}
		if json.Unmarshal([]byte(line), &step) != nil || step.Peak == nil {
			continue
		}
		switch {
		case step.NumGTs > 0:
			with++
			if *step.Peak != peak {
				t.Errorf("a step with objects: train reports peak_allocated %d, plan says %d", *step.Peak, peak)
			}
		default:
			without++
			if *step.Peak > peak {
				t.Errorf("the step without objects: train reports peak_allocated %d, over the plan's %d", *step.Peak, peak)
			}
		}
	}
	if with == 0 || without == 0 {
		t.Errorf("%d steps with objects, %d without; want both", with, without)
	}
}

// run keeps the packed copies of weights from one repeat to the next, and
// plan predicts the runs as run makes them: optimized or not, the first
// run's peak, and the peak of the later ones, which hold the copies from
// their start, to the byte.
func TestPlanMatchesRepeatedRuns(t *testing.T) {
	model := filepath.Join(models, "cnn.onnx")
	feed := "x=@" + filepath.Join(models, "cnn", "input_x.npy")
	for _, opt := range []string{"--optimize=true", "--optimize=false"} {
		r := gopir("run", model, "--feed", feed, "--json", "--repeat", "3", opt)
		if r.code != 0 {
			t.Fatalf("run %s: exit %d: %s", opt, r.code, r.stderr)
		}
		var runs []struct {
			Peak      int64 `json:"peak_allocated"`
			Allocated int64 `json:"mem_allocated"`
		}
		for _, line := range strings.Split(strings.TrimSpace(r.stdout), "\n") {
			var rec struct {
				Peak      int64 `json:"peak_allocated"`
				Allocated int64 `json:"mem_allocated"`
			}
			if err := json.Unmarshal([]byte(line), &rec); err != nil {
				t.Fatal(err)
			}
			runs = append(runs, rec)
		}
		peak, assumed := planJSON(t, model, "--feed-shape", "x=2x3x32x32", opt)
		if len(runs) != 3 || runs[1].Peak <= runs[0].Peak || runs[2].Peak != runs[1].Peak || peak != runs[1].Peak {
			t.Fatalf("%s: plan peak %d, runs %+v: want the later runs' peak, higher than the first's", opt, peak, runs)
		}
		first := fmt.Sprintf("the first run peaks at %d bytes", runs[0].Peak)
		if len(assumed) != 1 || !strings.Contains(assumed[0], first) {
			t.Errorf("%s: assumed %q, want it to say %q", opt, assumed, first)
		}
	}
}
