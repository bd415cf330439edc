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

func TestMPITrainMatchesOneProcess(t *testing.T) {
	args := []string{"train", "--model", "mlp", "--steps", "30", "--batch", "48", "--json", "--log-every", "1", "--threads", "1"}
	code, one, stderr := run(t, exec.Command(bin.plain, args...))
	if code != 0 {
		t.Fatalf("alone: exit %d: %s", code, stderr)
	}
	for _, n := range []int{2, 3} {
		code, many, stderr := run(t, mpirun(t, context.Background(), n, append([]string{bin.mpi}, append(args, "--check-replicas")...)...))
		if code != 0 {
			t.Fatalf("%d ranks: exit %d: %s", n, code, stderr)
		}
		if got := strings.Count(many, "\n"); got != 31 {
			t.Fatalf("%d ranks: %d lines of output, want 31 (rank 0's only):\n%s", n, got, many)
		}
		wantClose(t, fmt.Sprintf("%d ranks", n), jsonLosses(t, one), jsonLosses(t, many), 1e-5)
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
	t.Logf("the job ended %v after rank 1 was killed (%v)", took.Round(time.Millisecond), err)
}

// TestMPIOutOfMemoryOnOneRank: rank 0 runs out of memory (a limit given
// to it alone); every rank exits, non-zero, within 10 s, and the error
// line names the rank.
func TestMPIOutOfMemoryOnOneRank(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	common := []string{"train", "--model", "lenet", "--steps", "1000", "--batch", "64", "--threads", "1"}
	cmd := mpirun(t, ctx, 1, append(append([]string{bin.mpi}, common...), "--mem-limit", "1MiB", ":", "-np", "1", bin.mpi)...)
	cmd.Args = append(cmd.Args, common...)
	start := time.Now()
	code, _, stderr := run(t, cmd)
	if code == 0 || time.Since(start) > 10*time.Second {
		t.Fatalf("exit %d after %v: %s", code, time.Since(start), stderr)
	}
	for _, want := range []string{"gopir: rank 0 of 2: ResourceExhaustedError: Out of memory", "gopir: rank 1 of 2: stopped by mpirun"} {
		if !strings.Contains(stderr, want) {
			t.Fatalf("stderr lacks %q:\n%s", want, stderr)
		}
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
