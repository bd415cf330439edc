//go:build mpi

package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// gopir train and memcheck under mpirun, end to end: these tests build
// the command (with and without the mpi tag) and start mpirun themselves,
// so they run under plain `go test -tags mpi ./cmd/gopir/` (.ci/run).

var bin struct{ mpi, plain string }

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "gopir-mpi-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	bin.mpi, bin.plain = filepath.Join(dir, "gopir-mpi"), filepath.Join(dir, "gopir")
	code := 0
	for _, b := range []struct{ out, tags string }{{bin.mpi, "mpi"}, {bin.plain, ""}} {
		cmd := exec.Command("go", "build", "-tags", b.tags, "-o", b.out, ".")
		if out, err := cmd.CombinedOutput(); err != nil {
			fmt.Fprintf(os.Stderr, "go build -tags %q: %v\n%s", b.tags, err, out)
			code = 1
		}
	}
	if code == 0 {
		code = m.Run()
	}
	os.RemoveAll(dir)
	os.Exit(code)
}

// mpirun returns the command mpirun -np n ARGS..., or skips the test
// without mpirun.
func mpirun(t *testing.T, ctx context.Context, n int, args ...string) *exec.Cmd {
	t.Helper()
	path, err := exec.LookPath("mpirun")
	if err != nil {
		t.Skip("mpirun is missing: apt-get install openmpi-bin libopenmpi-dev")
	}
	flags := []string{"--oversubscribe", "-np", strconv.Itoa(n)}
	if os.Geteuid() == 0 {
		flags = append([]string{"--allow-run-as-root"}, flags...)
	}
	return exec.CommandContext(ctx, path, append(flags, args...)...)
}

// run runs cmd and returns its exit code, stdout and stderr.
func run(t *testing.T, cmd *exec.Cmd) (int, string, string) {
	t.Helper()
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return code, out.String(), errOut.String()
}

// jsonLosses reads the losses of the step lines of a --json log.
func jsonLosses(t *testing.T, log string) []float64 {
	t.Helper()
	var out []float64
	for _, l := range strings.Split(strings.TrimSpace(log), "\n") {
		var rec struct {
			Loss *float64 `json:"loss"`
		}
		if err := json.Unmarshal([]byte(l), &rec); err != nil {
			t.Fatalf("%v: %q", err, l)
		}
		if rec.Loss != nil {
			out = append(out, *rec.Loss)
		}
	}
	return out
}

func wantClose(t *testing.T, what string, a, b []float64, tol float64) {
	t.Helper()
	if len(a) != len(b) {
		t.Fatalf("%s: %d losses and %d", what, len(a), len(b))
	}
	for i := range a {
		if d := math.Abs(a[i]-b[i]) / math.Abs(a[i]); !(d <= tol) {
			t.Fatalf("%s: step %d: %.9g and %.9g (relative difference %.3g > %g)", what, i+1, a[i], b[i], d, tol)
		}
	}
}

// TestMPITrainMatchesOneProcess: N ranks follow one process's loss
// trajectory at the same global batch to 1e-5: mlp in float32 over 30
// steps, and tinydet, whose shards take different branches of its if,
// in float64 over 100 steps (in float32 its trajectory drifts by
// rounding, as one process's does from itself: docs/distributed.md).
func TestMPITrainMatchesOneProcess(t *testing.T) {
	for _, c := range []struct {
		args  []string
		steps int
	}{
		{[]string{"--model", "mlp", "--batch", "48"}, 30},
		{[]string{"--model", "tinydet", "--batch", "6", "--sync-bn", "--dtype", "f64"}, 100},
	} {
		args := append([]string{"train", "--steps", fmt.Sprint(c.steps), "--json", "--log-every", "1", "--threads", "1"}, c.args...)
		code, one, stderr := run(t, exec.Command(bin.plain, args...))
		if code != 0 {
			t.Fatalf("%s alone: exit %d: %s", c.args[1], code, stderr)
		}
		for _, n := range []int{2, 3} {
			code, many, stderr := run(t, mpirun(t, context.Background(), n, append([]string{bin.mpi}, append(args, "--check-replicas")...)...))
			if code != 0 {
				t.Fatalf("%s on %d ranks: exit %d: %s", c.args[1], n, code, stderr)
			}
			if got := strings.Count(many, "\n"); got != c.steps+1 {
				t.Fatalf("%s on %d ranks: %d lines of output, want %d (rank 0's only):\n%s", c.args[1], n, got, c.steps+1, many)
			}
			wantClose(t, fmt.Sprintf("%s on %d ranks", c.args[1], n), jsonLosses(t, one), jsonLosses(t, many), 1e-5)
		}
	}
}

// TestMPIInterruptAndResume: SIGTERM to the ranks, which is what mpirun
// sends them (a second later) when it is interrupted with Ctrl-C, stops
// every rank after the same step and rank 0 writes the checkpoint. Resumed on 2 ranks, the run
// repeats the uninterrupted one bit for bit; resumed on 3 ranks or on one
// process, its first steps agree with it to 1e-5 (they sum the gradients
// in another order, and the trajectories then drift apart as any two
// orders do: docs/distributed.md).
func TestMPIInterruptAndResume(t *testing.T) {
	dir := t.TempDir()
	args := []string{bin.mpi, "train", "--model", "lenet", "--steps", "40", "--batch", "120", "--json", "--log-every", "1", "--threads", "1"}
	code, whole, errs := run(t, mpirun(t, context.Background(), 2, args...))
	if code != 0 {
		t.Fatalf("uninterrupted: exit %d: %s", code, errs)
	}
	w := jsonLosses(t, whole)
	cmd := mpirun(t, context.Background(), 2, append(args, "--save", dir)...)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(stdout)
	for lines := 0; lines < 10 && sc.Scan(); lines++ {
	}
	for r := range 2 {
		syscall.Kill(rankPID(t, cmd.Process.Pid, r), syscall.SIGTERM)
	}
	for sc.Scan() {
	}
	if err := cmd.Wait(); err == nil {
		t.Fatalf("the interrupted job exited 0: %s", stderr.String())
	}
	if !strings.Contains(stderr.String(), "gopir: rank 0 of 2: stopped by mpirun") || !strings.Contains(stderr.String(), "gopir: rank 1 of 2: stopped by mpirun") {
		t.Fatalf("stderr: %s", stderr.String())
	}
	if _, err := os.Stat(filepath.Join(dir, "checkpoint.safetensors")); err != nil {
		t.Fatalf("no checkpoint: %v; stderr: %s", err, stderr.String())
	}
	for _, n := range []int{2, 3, 1} {
		var cmd *exec.Cmd
		if n == 1 {
			cmd = exec.Command(bin.plain, append(args[1:], "--resume", dir)...)
		} else {
			cmd = mpirun(t, context.Background(), n, append(args, "--resume", dir)...)
		}
		code, resumed, errs := run(t, cmd)
		if code != 0 {
			t.Fatalf("resumed on %d ranks: exit %d: %s", n, code, errs)
		}
		r := jsonLosses(t, resumed)
		if len(r) < 3 || len(r) >= len(w) {
			t.Fatalf("resumed for %d of %d steps", len(r), len(w))
		}
		rest := w[len(w)-len(r):]
		if n == 2 {
			wantClose(t, "resumed on 2 ranks", rest, r, 0)
			t.Logf("interrupted after step %d of %d; resumed on 2 ranks bit for bit", len(w)-len(r), len(w))
			continue
		}
		wantClose(t, fmt.Sprintf("resumed on %d ranks", n), rest[:3], r[:3], 1e-5)
	}
}

// waitLine reads lines until one contains s.
func waitLine(sc *bufio.Scanner, s string) bool {
	for sc.Scan() {
		if strings.Contains(sc.Text(), s) {
			return true
		}
	}
	return false
}

// rankPID finds the process of rank r among the children of mpirun.
func rankPID(t *testing.T, parent, rank int) int {
	t.Helper()
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		f := strings.Fields(string(stat[bytes.LastIndexByte(stat, ')')+1:]))
		if len(f) < 2 || f[1] != strconv.Itoa(parent) {
			continue
		}
		env, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "environ"))
		if bytes.Contains(env, []byte(fmt.Sprintf("OMPI_COMM_WORLD_RANK=%d\x00", rank))) {
			return pid
		}
	}
	t.Fatalf("no process of rank %d under mpirun (%d)", rank, parent)
	return 0
}

// TestMPIKillOneRank kills rank 1 in the middle of a run: the other rank
// exits, non-zero, within 10 s, saying which rank it is.
func TestMPIKillOneRank(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := mpirun(t, ctx, 2, bin.mpi, "train", "--model", "lenet", "--steps", "100000", "--batch", "64", "--log-every", "5", "--threads", "1")
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(stdout)
	if !waitLine(sc, "Epoch") {
		t.Fatalf("no step logged: %s", stderr.String())
	}
	victim := rankPID(t, cmd.Process.Pid, 1)
	killed := time.Now()
	if err := syscall.Kill(victim, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	for sc.Scan() {
	}
	err = cmd.Wait()
	took := time.Since(killed)
	if err == nil {
		t.Fatal("mpirun exited 0 after a rank was killed")
	}
	if took > 10*time.Second {
		t.Fatalf("the job took %v to end after rank 1 was killed", took)
	}
	if !strings.Contains(stderr.String(), "gopir: rank 0 of 2: stopped by mpirun") {
		t.Fatalf("rank 0 did not say it stopped: %s", stderr.String())
	}
	// mpirun names the rank that died.
	if !strings.Contains(stderr.String(), "rank 1 with PID") {
		t.Fatalf("the job's output does not name rank 1: %s", stderr.String())
	}
	t.Logf("the job ended %v after rank 1 was killed (%v)", took.Round(time.Millisecond), err)
}

// TestMPIOutOfMemoryOnOneRank: rank 0 alone gets a memory limit. One
// that no step fits in is refused before training: every rank exits,
// non-zero, within 10 s, and rank 0's error is one line that names it.
// One that training fits in but rank 0's evaluation at its default batch
// (500 images) does not is no longer an error in the run: rank 0 plans
// its evaluation under the limit too and evaluates in smaller batches.
// (A rank failing in the middle of a run is TestMPIKillOneRank's case,
// and dist's TestOutOfMemoryOnOneRank runs out of memory mid-run.)
func TestMPIOutOfMemoryOnOneRank(t *testing.T) {
	common := []string{"train", "--model", "lenet", "--batch", "64", "--threads", "1"}
	job := func(limit, steps string) (int, string, string, time.Duration) {
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		args := append(append([]string{}, common...), "--steps", steps)
		cmd := mpirun(t, ctx, 1, append(append([]string{bin.mpi}, args...), "--mem-limit", limit, ":", "-np", "1", bin.mpi)...)
		cmd.Args = append(cmd.Args, args...)
		start := time.Now()
		code, out, stderr := run(t, cmd)
		return code, out, stderr, time.Since(start)
	}

	code, _, stderr, took := job("1MiB", "1000")
	if code == 0 || took > 10*time.Second {
		t.Fatalf("--mem-limit 1MiB on rank 0: exit %d after %v: %s", code, took, stderr)
	}
	line := ""
	for _, l := range strings.Split(stderr, "\n") {
		if strings.HasPrefix(l, "gopir: rank 0 of 2: ") {
			line = l
		}
	}
	if want := "gopir: rank 0 of 2: ResourceExhaustedError: a training step of lenet at batch 64 (32 on each of 2 ranks) needs"; !strings.Contains(line, want) {
		t.Fatalf("--mem-limit 1MiB on rank 0: rank 0's line %q lacks %q; stderr:\n%s", line, want, stderr)
	}
	if !strings.Contains(stderr, "gopir: rank 1 of 2: stopped by mpirun") {
		t.Fatalf("--mem-limit 1MiB on rank 0: rank 1 did not say it stopped:\n%s", stderr)
	}

	code, out, stderr, _ := job("6MiB", "3")
	if code != 0 || !strings.Contains(out, "eval: batch ") || !strings.Contains(out, "Eval: accuracy:") {
		t.Fatalf("--mem-limit 6MiB on rank 0: exit %d\nstdout: %s\nstderr: %s", code, out, stderr)
	}
}

func TestMPISetupErrors(t *testing.T) {
	code, _, stderr := run(t, mpirun(t, context.Background(), 2, bin.mpi, "train", "--model", "mlp", "--batch", "25"))
	if code != exitBadInput || !strings.Contains(stderr, "gopir: rank 0 of 2: --batch 25: the global batch must be divisible by the 2 ranks") {
		t.Errorf("batch 25 on 2 ranks: exit %d: %s", code, stderr)
	}
	code, _, stderr = run(t, mpirun(t, context.Background(), 2, bin.plain, "train", "--model", "mlp"))
	if code != exitBadInput || !strings.Contains(stderr, "started by mpirun as rank 0 of 2, but gopir was built without MPI") {
		t.Errorf("gopir without MPI under mpirun: exit %d: %s", code, stderr)
	}
}

// TestMPIMemcheck: gopir memcheck under mpirun checks every rank.
func TestMPIMemcheck(t *testing.T) {
	code, out, stderr := run(t, mpirun(t, context.Background(), 2, bin.mpi, "memcheck", "--model", "tinydet", "--batch", "4", "--steps", "300", "--sync-bn", "--threads", "1"))
	if code != 0 || !strings.Contains(out, "memcheck tinydet: allocated 1292160 bytes after each of 300 steps") {
		t.Fatalf("exit %d\nstdout: %s\nstderr: %s", code, out, stderr)
	}
}

// jsonRecords reads the lines of a --json log.
func jsonRecords(t *testing.T, log string) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, l := range strings.Split(strings.TrimSpace(log), "\n") {
		var rec map[string]any
		if err := json.Unmarshal([]byte(l), &rec); err != nil {
			t.Fatalf("%v: %q", err, l)
		}
		out = append(out, rec)
	}
	return out
}

// TestMPIPlanRematAndTraces: the memory of a rank's step is planned and
// logged like one process's. gopir plan --ranks gives the peak each rank
// measures; under a --mem-limit the step is rematerialized on every rank
// the same way (rank 0 says so once), the losses stay those of the job
// without a limit bit for bit, and every step peaks within the limit; the
// Chrome trace of each rank (its own file) shows the gradient buckets.
func TestMPIPlanRematAndTraces(t *testing.T) {
	code, out, stderr := run(t, exec.Command(bin.plain, "plan", "--model", "lenet", "--backward", "--batch", "32", "--ranks", "2", "--threads", "1", "--json"))
	if code != 0 {
		t.Fatalf("gopir plan --ranks 2: exit %d: %s", code, stderr)
	}
	var plan struct{ Peak int64 }
	if err := json.Unmarshal([]byte(out), &plan); err != nil || plan.Peak == 0 {
		t.Fatalf("gopir plan --json: %v: %s", err, out)
	}
	code, out, stderr = run(t, mpirun(t, context.Background(), 2, bin.mpi, "train", "--model", "lenet", "--steps", "3", "--batch", "32", "--json", "--log-every", "1", "--threads", "1"))
	if code != 0 {
		t.Fatalf("lenet on 2 ranks: exit %d: %s", code, stderr)
	}
	for _, rec := range jsonRecords(t, out) {
		if pk, ok := rec["peak_allocated"]; ok && int64(pk.(float64)) != plan.Peak {
			t.Errorf("lenet on 2 ranks: a step peaks at %v, gopir plan --ranks 2 says %d", pk, plan.Peak)
		}
	}

	dir := t.TempDir()
	args := []string{bin.mpi, "train", "--model", "tinydet", "--steps", "3", "--batch", "64", "--sync-bn", "--json", "--log-every", "1", "--threads", "1"}
	code, whole, stderr := run(t, mpirun(t, context.Background(), 2, args...))
	if code != 0 {
		t.Fatalf("tinydet on 2 ranks: exit %d: %s", code, stderr)
	}
	const limit = 12 << 20
	code, capped, stderr := run(t, mpirun(t, context.Background(), 2, append(args, "--mem-limit", strconv.Itoa(limit), "--trace", filepath.Join(dir, "t.json"))...))
	if code != 0 {
		t.Fatalf("tinydet on 2 ranks under --mem-limit 12MiB: exit %d: %s", code, stderr)
	}
	wantClose(t, "under --mem-limit", jsonLosses(t, whole), jsonLosses(t, capped), 0)
	remats := 0
	for _, rec := range jsonRecords(t, capped) {
		if r, ok := rec["remat"].(map[string]any); ok {
			remats++
			if r["recomputed_ops"].(float64) == 0 || r["planned_peak"].(float64) > limit {
				t.Errorf("the remat line: %v", r)
			}
		}
		if pk, ok := rec["peak_allocated"]; ok && pk.(float64) > limit {
			t.Errorf("a step peaks at %v, over the limit of %d", pk, limit)
		}
	}
	if remats != 1 {
		t.Errorf("%d remat lines, want rank 0's alone:\n%s", remats, capped)
	}
	for _, name := range []string{"t.json", "t.rank1.json"} {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		var trace struct{ TraceEvents []struct{ Name string } }
		if err := json.Unmarshal(b, &trace); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		buckets := 0
		for _, e := range trace.TraceEvents {
			if e.Name == "all_reduce_start" {
				buckets++
			}
		}
		if buckets == 0 {
			t.Errorf("%s: no all_reduce_start among %d events", name, len(trace.TraceEvents))
		}
	}
}
