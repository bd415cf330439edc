package main

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/gopir/gopir/ir"
)

// gopir train --mem-limit under the step's natural peak rematerializes: one
// line says so (natural peak, budget, planned peak, work recomputed), and
// every step stays within the limit with the losses of training without
// it; gopir plan and gopir print show the same recomputation.
func TestTrainRematerializesToTheLimit(t *testing.T) {
	const limit = "500KB" // rnn's step peaks at 990400 bytes
	free := gopir("train", "--model", "rnn", "--steps", "4", "--log-every", "1", "--json", "--threads", "2")
	r := gopir("train", "--model", "rnn", "--steps", "4", "--log-every", "1", "--json", "--threads", "2", "--mem-limit", limit)
	if free.code != 0 || r.code != 0 {
		t.Fatalf("exit %d and %d: %s%s", free.code, r.code, free.stderr, r.stderr)
	}
	lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
	var head struct {
		Remat struct {
			Natural, Budget, Planned int64
			Flops, Step              int64
		} `json:"remat"`
	}
	var raw map[string]map[string]int64
	if err := json.Unmarshal([]byte(lines[0]), &raw); err != nil {
		t.Fatalf("%v: %s", err, lines[0])
	}
	m := raw["remat"]
	head.Remat.Natural, head.Remat.Budget, head.Remat.Planned = m["natural_peak"], m["budget"], m["planned_peak"]
	head.Remat.Flops, head.Remat.Step = m["recomputed_flops"], m["step_flops"]
	if head.Remat.Budget != 500<<10 || head.Remat.Natural != 990400 || head.Remat.Planned > head.Remat.Budget || head.Remat.Flops <= 0 || head.Remat.Flops >= head.Remat.Step {
		t.Fatalf("the remat line: %s", lines[0])
	}
	want := strings.Split(strings.TrimSpace(free.stdout), "\n")
	for i, l := range lines[1:5] {
		var got, w struct {
			Loss float64 `json:"loss"`
			Peak int64   `json:"peak_allocated"`
		}
		json.Unmarshal([]byte(l), &got)
		json.Unmarshal([]byte(want[i]), &w)
		if got.Loss != w.Loss || got.Peak > 500<<10 {
			t.Errorf("step %d: loss %v (%v without the limit), peak %d", i, got.Loss, w.Loss, got.Peak)
		}
	}
	text := gopir("train", "--model", "rnn", "--steps", "1", "--mem-limit", limit)
	if text.code != 0 || !regexp.MustCompile(`^remat: natural peak 0\.944519MB, budget 0\.488281MB, planned peak 0\.[0-9]+MB, recomputed [0-9.]+ MFLOP \([0-9.]+% of the step\) in 0 ops, 1 loops and 0 splits over the batch\n`).MatchString(text.stdout) {
		t.Errorf("exit %d: %q", text.code, text.stdout)
	}

	pl := gopir("plan", "--model", "rnn", "--backward", "--mem-limit", limit)
	if pl.code != 0 || !strings.Contains(pl.stdout, "rematerialized: ") || !regexp.MustCompile(`loop \S*models/rnn.go:[0-9]+: keeps every ([0-9]+(st|nd|rd|th) )?trip's carried values`).MatchString(pl.stdout) {
		t.Errorf("plan: exit %d: %s%s", pl.code, pl.stdout, pl.stderr)
	}
	pj := gopir("plan", "--model", "rnn", "--backward", "--mem-limit", limit, "--json")
	var plan struct {
		Remat struct {
			Planned      int64 `json:"planned_peak"`
			Checkpointed []struct {
				Pos   string `json:"pos"`
				Every int    `json:"every"`
			} `json:"checkpointed"`
		} `json:"remat"`
	}
	if err := json.Unmarshal([]byte(pj.stdout), &plan); err != nil || plan.Remat.Planned != head.Remat.Planned || len(plan.Remat.Checkpointed) != 1 {
		t.Errorf("plan --json: %v: %s", err, pj.stdout)
	}

	pr := gopir("print", "--model", "rnn", "--backward", "--mem-limit", limit)
	if pr.code != 0 || !strings.Contains(pr.stdout, "// recomputes the trips of the loop of %") {
		t.Fatalf("print: exit %d: %.300s%s", pr.code, pr.stdout, pr.stderr)
	}
	if _, err := ir.Parse("printed", []byte(pr.stdout)); err != nil {
		t.Errorf("the printed program does not parse: %v", err)
	}
}

// Under the floor, train refuses before allocating and names a limit that
// works, which then trains; --remat=off refuses a step over the limit as
// before; --remat takes on or off.
func TestTrainRefusesUnderTheFloor(t *testing.T) {
	r := gopir("train", "--model", "rnn", "--steps", "1", "--mem-limit", "100KB")
	m := regexp.MustCompile(`and ([0-9.]+)MB at the lowest that recomputing .* --mem-limit ([0-9]+) works`).FindStringSubmatch(r.stderr)
	if r.code != 1 || m == nil || !strings.Contains(r.stderr, "nothing was allocated") {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	if ok := gopir("train", "--model", "rnn", "--steps", "2", "--mem-limit", m[2], "--check-leaks"); ok.code != 0 {
		t.Fatalf("at --mem-limit %s: exit %d: %s", m[2], ok.code, ok.stderr)
	}
	if planned, _ := strconv.ParseFloat(m[1], 64); planned >= 0.944519 || planned <= 0 {
		t.Errorf("the lowest planned peak %vMB is not under the natural 0.944519MB", planned)
	}
	off := gopir("train", "--model", "rnn", "--steps", "1", "--mem-limit", "500KB", "--remat=off")
	if off.code != 1 || !strings.Contains(off.stderr, "ResourceExhaustedError: a training step of rnn at batch 32 needs 0.944519MB at its peak") {
		t.Fatalf("--remat=off: exit %d: %s", off.code, off.stderr)
	}
	if bad := gopir("train", "--model", "rnn", "--remat", "maybe"); bad.code != 2 || !strings.Contains(bad.stderr, `--remat "maybe": want on or off`) {
		t.Fatalf("--remat maybe: exit %d: %s", bad.code, bad.stderr)
	}
}

// lenet at half its natural peak splits its conv trunk over the batch (at
// the second block's pool or the ReLU before it, keeping that whole) and
// runs its updates early: gopir plan says where and in how many pieces,
// and how many updates moved (text and JSON), gopir print notes every op
// of the pieces and every update moved and still prints a program that
// parses, and --remat=off refuses the budget as before.
func TestPlanShowsTheSplitOverTheBatch(t *testing.T) {
	const budget = "1949184" // half of lenet's 3898368 at batch 64
	pl := gopir("plan", "--model", "lenet", "--backward", "--mem-limit", budget)
	if pl.code != 0 || !regexp.MustCompile(`split over the batch at %[0-9]+ \((max_pool2d|relu) \S*models/lenet.go:[0-9]+\): ([0-9]+) pieces of ([0-9]+) samples`).MatchString(pl.stdout) {
		t.Fatalf("plan: exit %d: %s%s", pl.code, pl.stdout, pl.stderr)
	}
	pj := gopir("plan", "--model", "lenet", "--backward", "--mem-limit", budget, "--json")
	var plan struct {
		Remat struct {
			Planned int64 `json:"planned_peak"`
			Early   int   `json:"early_updates"`
			Splits  []struct {
				Op     string `json:"op"`
				Pieces int    `json:"pieces"`
			} `json:"splits"`
		} `json:"remat"`
	}
	if err := json.Unmarshal([]byte(pj.stdout), &plan); err != nil || plan.Remat.Planned > 1949184 || len(plan.Remat.Splits) != 1 || plan.Remat.Splits[0].Pieces < 2 || plan.Remat.Early == 0 || !strings.Contains(pl.stdout, "updates run early") {
		t.Fatalf("plan --json: %v: %s", err, pj.stdout)
	}
	pr := gopir("print", "--model", "lenet", "--backward", "--mem-limit", budget)
	last := fmt.Sprintf("// piece %d/%d of the batch split at %s", plan.Remat.Splits[0].Pieces, plan.Remat.Splits[0].Pieces, plan.Remat.Splits[0].Op)
	if pr.code != 0 || !strings.Contains(pr.stdout, last) || !strings.Contains(pr.stdout, "// runs early") {
		t.Fatalf("print: exit %d: %.300s%s", pr.code, pr.stdout, pr.stderr)
	}
	if _, err := ir.Parse("printed", []byte(pr.stdout)); err != nil {
		t.Fatalf("the printed program does not parse: %v", err)
	}
	off := gopir("train", "--model", "lenet", "--steps", "1", "--mem-limit", budget, "--remat", "off")
	if off.code != 1 {
		t.Fatalf("--remat off under the natural peak: exit %d: %s%s", off.code, off.stdout, off.stderr)
	}
}
