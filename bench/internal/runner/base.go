package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// Before and after: bench/run -base REV builds the training-step
// benchmark and the command line at revision REV (in a temporary git
// worktree) beside the working tree's, runs their step benchmarks in
// alternating rounds, and trains a few steps of every zoo model with each
// to read the step's memory, so that a change's cost or gain is measured
// side by side in one run, on one machine state.

// baseSetup builds REV's bench test binary and gopir command, and the
// working tree's command. It returns the revision's one-line description.
func (r *runner) baseSetup(rev string) (string, error) {
	desc, err := r.cmd(nil, "git", "log", "-1", "--format=%h %s", rev)
	if err != nil {
		return "", fmt.Errorf("-base %s: %w", rev, err)
	}
	wt := filepath.Join(r.tmp, "base")
	if _, err := r.cmd(nil, "git", "worktree", "add", "--detach", wt, rev); err != nil {
		return "", fmt.Errorf("-base %s: %w", rev, err)
	}
	r.cleanup = append(r.cleanup, func() { r.cmd(nil, "git", "worktree", "remove", "--force", wt) })
	builds := []struct{ dir, pkg, out string }{
		{wt, "./bench", "base-bench.test"},
		{wt, "./cmd/gopir", "base-gopir"},
		{r.root, "./cmd/gopir", "gopir"},
	}
	for _, b := range builds {
		args := []string{"build", "-o", filepath.Join(r.tmp, b.out), b.pkg}
		if strings.HasSuffix(b.out, ".test") {
			args = []string{"test", "-c", "-o", filepath.Join(r.tmp, b.out), b.pkg}
		}
		if _, err := r.cmd(nil, "go", append([]string{"-C", b.dir}, args...)...); err != nil {
			return "", fmt.Errorf("-base %s: building %s: %w", rev, b.pkg, err)
		}
	}
	r.bin["base"] = filepath.Join(r.tmp, "base-bench.test")
	return strings.TrimSpace(desc), nil
}

// baseRound runs the step benchmarks of the working tree and of the base,
// in the round's order.
func (r *runner) baseRound(reverse bool, bt string) {
	now := func() { r.goBench("bench", "Step", bt, "2,1", "gopir") }
	then := func() { r.goBench("base", "Step", bt, "2,1", "base") }
	if reverse {
		now, then = then, now
	}
	now()
	then()
}

// stepMemory is the memory a training step reports.
type stepMemory struct {
	Peak, Allocated, Reserved int64
}

// trainMemory trains four steps of model with the gopir command bin and
// returns the last step's figures.
func (r *runner) trainMemory(bin, model string) (stepMemory, error) {
	out, err := r.cmd(nil, bin, "train", "--model", model, "--steps", "4", "--log-every", "1", "--json", "--threads", fmt.Sprint(threads))
	if err != nil {
		return stepMemory{}, err
	}
	var last stepMemory
	found := false
	for _, line := range strings.Split(out, "\n") {
		var rec struct {
			Peak      *int64 `json:"peak_allocated"`
			Allocated int64  `json:"mem_allocated"`
			Reserved  int64  `json:"mem_reserved"`
		}
		if json.Unmarshal([]byte(line), &rec) == nil && rec.Peak != nil {
			last, found = stepMemory{*rec.Peak, rec.Allocated, rec.Reserved}, true
		}
	}
	if !found {
		return stepMemory{}, fmt.Errorf("%s train --model %s printed no step", filepath.Base(bin), model)
	}
	return last, nil
}

// baseTable prints the before/after table.
func (r *runner) baseTable(desc string) {
	fmt.Printf("before: %s\nafter:  the working tree\n\n", desc)
	fmt.Println("| step | before (ms) | after (ms) | after / before | before cpu-ms | after cpu-ms |")
	fmt.Println("|---|---|---|---|---|---|")
	for _, m := range []string{"mlp", "lenet"} {
		for _, t := range []string{"2", "1"} {
			key := "BenchmarkStep/" + m + "/t" + t
			b, bok := r.s.median("base " + key + " ms/step")
			a, aok := r.s.median("gopir " + key + " ms/step")
			bc, bcok := r.s.median("base " + key + " cpu-ms/step")
			ac, acok := r.s.median("gopir " + key + " cpu-ms/step")
			ratio := "-"
			if aok && bok {
				ratio = fmt.Sprintf("%.3f", a/b)
			}
			fmt.Printf("| %s, %s thr | %s | %s | %s | %s | %s |\n", m, t,
				cellSpread(b, bok, r.s.spread("base "+key+" ms/step", "%.2f")), cellSpread(a, aok, r.s.spread("gopir "+key+" ms/step", "%.2f")),
				ratio, cell(bc, bcok, "%.2f"), cell(ac, acok, "%.2f"))
		}
	}
	fmt.Println()
	fmt.Println("| model | peak before | peak after | mem_allocated before | after | mem_reserved before | after |")
	fmt.Println("|---|---|---|---|---|---|---|")
	for _, m := range memModels {
		b, berr := r.trainMemory(filepath.Join(r.tmp, "base-gopir"), m)
		a, aerr := r.trainMemory(filepath.Join(r.tmp, "gopir"), m)
		if berr != nil || aerr != nil {
			fmt.Printf("| %s | %v | %v | | | | |\n", m, berr, aerr)
			continue
		}
		fmt.Printf("| %s | %s | %s | %s | %s | %s | %s |\n", m, bytesStr(b.Peak), bytesStr(a.Peak),
			bytesStr(b.Allocated), bytesStr(a.Allocated), bytesStr(b.Reserved), bytesStr(a.Reserved))
	}
}

// cellSpread is a median with its range over the rounds.
func cellSpread(v float64, ok bool, spread string) string {
	c := cell(v, ok, "%.2f")
	if ok && spread != "" {
		c += " (" + spread + ")"
	}
	return c
}

// removeAll runs the cleanups (the base worktree) before exiting.
func (r *runner) removeAll() {
	for _, f := range r.cleanup {
		f()
	}
	os.RemoveAll(r.tmp)
}
