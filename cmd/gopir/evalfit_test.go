package main

import (
	"regexp"
	"strings"
	"testing"
)

// gopir train --mem-limit bounds the final evaluation too: lenet at its
// floor trains and evaluates in a smaller batch, with the accuracy of the
// default batch; gate, whose evaluation cannot shrink, exits 1 before
// training with a limit that works.
func TestTrainEvaluatesUnderTheLimit(t *testing.T) {
	free := gopir("train", "--model", "lenet", "--steps", "3", "--threads", "2")
	r := gopir("train", "--model", "lenet", "--steps", "3", "--threads", "2", "--mem-limit", "1546039")
	if free.code != 0 || r.code != 0 {
		t.Fatalf("exit %d and %d: %s%s", free.code, r.code, free.stderr, r.stderr)
	}
	if !regexp.MustCompile(`(?m)^eval: batch [0-9]+ instead of 500, to fit the memory limit of 1\.474418MB$`).MatchString(r.stdout) {
		t.Errorf("no line for the evaluation batch: %s", r.stdout)
	}
	acc := regexp.MustCompile(`(?m)^Eval: accuracy: [0-9.]+$`)
	if a, b := acc.FindString(r.stdout), acc.FindString(free.stdout); a == "" || a != b {
		t.Errorf("under the limit %q, without %q", a, b)
	}

	g := gopir("train", "--model", "gate", "--steps", "2", "--threads", "2", "--mem-limit", "5400000")
	m := regexp.MustCompile(`the evaluation of gate at its fixed batch .* nothing was allocated\. --mem-limit ([0-9]+) works`).FindStringSubmatch(g.stderr)
	if g.code != 1 || m == nil || strings.Contains(g.stdout, "Epoch") {
		t.Fatalf("gate at 5400000: exit %d: %s%s", g.code, g.stdout, g.stderr)
	}
	if ok := gopir("train", "--model", "gate", "--steps", "2", "--threads", "2", "--mem-limit", m[1], "--check-leaks"); ok.code != 0 || !strings.Contains(ok.stdout, "Eval: accuracy") {
		t.Fatalf("gate at --mem-limit %s: exit %d: %s%s", m[1], ok.code, ok.stdout, ok.stderr)
	}
}
