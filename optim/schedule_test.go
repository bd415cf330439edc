package optim_test

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/gopir/gopir/optim"
)

func TestScheduleFormulas(t *testing.T) {
	cos := func(base, lo float64, step, total int) float64 {
		return lo + (base-lo)*(1+math.Cos(math.Pi*float64(step)/float64(total)))/2
	}
	for _, c := range []struct {
		name  string
		s     optim.Schedule
		steps []int
		want  []float64
	}{
		{"constant", optim.Constant(0.1), []int{0, 1, 1000}, []float64{0.1, 0.1, 0.1}},
		{"step", optim.StepDecay{Base: 0.1, Gamma: 0.5, StepSize: 3},
			[]int{0, 2, 3, 5, 6, 9}, []float64{0.1, 0.1, 0.05, 0.05, 0.025, 0.0125}},
		{"cosine", optim.Cosine{Base: 1, Min: 0.1, TotalSteps: 10},
			[]int{0, 2, 5, 9, 10, 11, 1000}, []float64{1, cos(1, 0.1, 2, 10), 0.55, cos(1, 0.1, 9, 10), 0.1, 0.1, 0.1}},
		{"warmup default start", optim.Warmup{Steps: 4, Then: optim.Constant(1)},
			[]int{0, 1, 2, 3, 4, 100}, []float64{0.2, 0.4, 0.6, 0.8, 1, 1}},
		{"warmup then step decay restarts at 0", optim.Warmup{Steps: 2, Start: 0.5, Then: optim.StepDecay{Base: 1, Gamma: 0.1, StepSize: 2}},
			[]int{0, 1, 2, 3, 4, 6}, []float64{0.5, 0.75, 1, 1, 0.1, 0.01}},
		{"warmup then cosine", optim.Warmup{Steps: 3, Start: 0.1, Then: optim.Cosine{Base: 2, Min: 0, TotalSteps: 4}},
			[]int{0, 1, 3, 5, 7, 8}, []float64{0.2, 0.2 + 1.8/3, 2, 1, 0, 0}},
	} {
		for i, step := range c.steps {
			if got := c.s.LR(step); math.Abs(got-c.want[i]) > 1e-15*math.Max(1, math.Abs(c.want[i])) {
				t.Errorf("%s: LR(%d) = %.17g, want %.17g", c.name, step, got, c.want[i])
			}
		}
	}
}

func TestSchedulePyTorch(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join("testdata", "schedules.json"))
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Cases []struct {
			Name     string      `json:"name"`
			Base     float64     `json:"base"`
			Schedule goldenSched `json:"schedule"`
			LRs      []float64   `json:"lrs"`
		} `json:"cases"`
	}
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	if len(doc.Cases) < 4 {
		t.Fatalf("%d schedule cases", len(doc.Cases))
	}
	for _, c := range doc.Cases {
		s := goldenSchedule(t, c.Schedule, c.Base)
		if c.Schedule.Start == 1.0/6 {
			// The same schedule with Start left at its default, 1/(Steps+1).
			c.Schedule.Start = 0
			s0 := goldenSchedule(t, c.Schedule, c.Base)
			for step := range c.LRs {
				if a, b := s.LR(step), s0.LR(step); math.Abs(a-b) > 1e-15 {
					t.Errorf("%s: default Start gives %v at step %d, Start 1/6 gives %v", c.Name, b, step, a)
				}
			}
		}
		for step, want := range c.LRs {
			if got := s.LR(step); math.Abs(got-want) > 1e-12*math.Abs(want)+1e-18 {
				t.Errorf("%s: LR(%d) = %.17g, PyTorch %.17g", c.Name, step, got, want)
			}
		}
	}
}
