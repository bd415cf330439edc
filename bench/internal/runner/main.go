// Command runner is bench/run: it measures gopir side by side with
// OpenBLAS (through numpy), PyTorch and GoMLX on this machine and prints
// one table of absolute figures and ratios (issue 8; docs/benchmarks.md),
// then a second one of inference on exported ONNX models against ONNX
// Runtime (issue 13).
//
//	bash bench/run [-rounds 3] [-quick] [-raw FILE] [-no-gomlx] [-no-ort] [-inference] [-benchstat]
//	bash bench/run -base REV [-rounds 3] [-quick] [-inference]
//	bash bench/run -det [-rounds 3] [-quick] [-no-ort] [-inference]
//
// Timings run in rounds; in each round every contender of a comparison
// runs back to back (the order alternates between rounds), so that a
// noisy machine slows them alike, and each figure is the median over the
// rounds. Memory is deterministic and measured once.
package main

import (
	"bufio"
	"bytes"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/gopir/gopir/bench"
)

var (
	rounds    = flag.Int("rounds", 3, "timing rounds; each figure is the median over them")
	quick     = flag.Bool("quick", false, "shorter timings (a smoke test of the script)")
	raw       = flag.String("raw", "", "also write every raw measurement line to this file")
	noGoMLX   = flag.Bool("no-gomlx", false, "skip GoMLX")
	noORT     = flag.Bool("no-ort", false, "skip ONNX Runtime (gopir's inference rows still run)")
	infOnly   = flag.Bool("inference", false, "only the inference rows (gopir vs ONNX Runtime on the exported ONNX models)")
	benchstat = flag.Bool("benchstat", false, "also install benchstat (golang.org/x/perf) and print its summary of gopir's Go benchmarks over the rounds")
	python    = flag.String("python", "/usr/bin/python3", "the Python with Debian's python3-torch and python3-numpy")
	base      = flag.String("base", "", "instead of the peers: compare the training steps' time and memory (with -inference: the inference rows, ORT beside them) with those of git revision `REV`, side by side")
	det       = flag.Bool("det", false, "only the detector rows: ppyoloe_s's training step and memory against its PyTorch twin, its inference against ONNX Runtime at 1 and 2 threads (det.go); with -inference, only the inference rows")
)

const threads = 2

var gemmSizes = []int{256, 512, 1024}

var memModels = []string{"mlp", "lenet", "tinydet", "rnn", "gate"}

// mallocTuned keeps glibc's malloc from returning large blocks to the
// kernel after every free (mmap/munmap, heap trimming): PyTorch allocates
// a fresh buffer per op, and on this virtual machine the page faults of
// re-touching them cost more than the arithmetic. Preloading jemalloc or
// tcmalloc, as PyTorch's CPU performance tuning guide suggests, is meant to
// have the same effect.
var mallocTuned = []string{"MALLOC_MMAP_THRESHOLD_=33554432", "MALLOC_TRIM_THRESHOLD_=4294967296"}

// samples collects measurements by key, e.g. "gopir step mlp".
type samples map[string][]float64

func (s samples) add(key string, v float64) { s[key] = append(s[key], v) }

func (s samples) median(key string) (float64, bool) {
	v := slices.Clone(s[key])
	if len(v) == 0 {
		return 0, false
	}
	slices.Sort(v)
	if len(v)%2 == 1 {
		return v[len(v)/2], true
	}
	return (v[len(v)/2-1] + v[len(v)/2]) / 2, true
}

// spread is "min–max" of key's samples, for the notes.
func (s samples) spread(key string, format string) string {
	v := s[key]
	if len(v) < 2 {
		return ""
	}
	return fmt.Sprintf(format+"–"+format, slices.Min(v), slices.Max(v))
}

type runner struct {
	root, tmp string
	bin       map[string]string // test binary by the key goBench takes
	rawOut    io.Writer
	s         samples
	fail      map[string]string // why a contender has no figure
	goOut     map[string]*bytes.Buffer
	torch     bool
	numpy     bool

	inf                []infModel // the models of the inference rows
	detDir             string     // the detector's batch, weights and ONNX export
	ortVersion, ortLib string     // ONNX Runtime's version and library, when it loads
	cleanup            []func()   // run before exiting (a -base worktree)
}

func main() {
	flag.Parse()
	root, err := os.Getwd()
	if err != nil {
		fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "bench", "run")); err != nil {
		fatal(fmt.Errorf("run me from the repository root (bench/run does)"))
	}
	tmp, err := os.MkdirTemp("", "gopir-bench-")
	if err != nil {
		fatal(err)
	}
	r := &runner{root: root, tmp: tmp, bin: map[string]string{}, rawOut: io.Discard, s: samples{}, fail: map[string]string{}, goOut: map[string]*bytes.Buffer{}}
	defer r.removeAll()
	if *raw != "" {
		f, err := os.Create(*raw)
		if err != nil {
			fatal(err)
		}
		defer f.Close()
		r.rawOut = f
	}
	start := time.Now()
	if *base != "" && *infOnly {
		r.compareInferenceWithBase(start)
		return
	}
	if *base != "" {
		r.compareWithBase(start)
		return
	}
	header := r.machine()
	r.build()
	if *det {
		r.detRun(header, start)
		return
	}
	header += r.inferenceSetup()
	for i := range *rounds {
		progress("round %d of %d", i+1, *rounds)
		r.round(i)
	}
	var mem []bench.MemRow
	if !*infOnly {
		progress("memory")
		mem = r.memory()
	}
	fmt.Println()
	fmt.Print(header)
	if !*infOnly {
		fmt.Println()
		r.table(mem)
	}
	r.inferenceTable()
	if *benchstat {
		r.benchstat()
	}
	fmt.Printf("\n(bench/run took %s)\n", time.Since(start).Round(time.Second))
}

// compareWithBase is bench/run -base REV.
func (r *runner) compareWithBase(start time.Time) {
	fmt.Fprintf(os.Stderr, "bench/run: building %s and the working tree\n", *base)
	desc, err := r.baseSetup(*base)
	if err != nil {
		r.removeAll()
		fatal(err)
	}
	if _, err := r.cmd(nil, "go", "test", "-c", "-o", filepath.Join(r.tmp, "bench.test"), "./bench"); err != nil {
		r.removeAll()
		fatal(err)
	}
	r.bin["bench"] = filepath.Join(r.tmp, "bench.test")
	header := r.machine()
	bt := "1s"
	if *quick {
		bt = "0.3s"
	}
	for i := range *rounds {
		progress("round %d of %d", i+1, *rounds)
		r.baseRound(i%2 == 1, bt)
	}
	fmt.Println()
	fmt.Print(header)
	r.baseTable(desc)
	fmt.Printf("\n(bench/run took %s)\n", time.Since(start).Round(time.Second))
}

func fatal(err error) {
	fmt.Fprintln(os.Stderr, "bench/run:", err)
	os.Exit(1)
}

func progress(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "bench/run: "+format+"\n", args...)
}

// cmd runs a command from the repository root and returns its stdout; env
// entries "NAME=" unset NAME.
func (r *runner) cmd(env []string, name string, args ...string) (string, error) {
	c := exec.Command(name, args...)
	c.Dir = r.root
	c.Env = os.Environ()
	for _, e := range env {
		k, v, _ := strings.Cut(e, "=")
		c.Env = slices.DeleteFunc(c.Env, func(x string) bool { return strings.HasPrefix(x, k+"=") })
		if v != "" {
			c.Env = append(c.Env, e)
		}
	}
	var out, errb bytes.Buffer
	c.Stdout, c.Stderr = &out, &errb
	err := c.Run()
	if err != nil {
		msg := strings.TrimSpace(errb.String())
		if msg == "" {
			msg = strings.TrimSpace(out.String())
		}
		return out.String(), fmt.Errorf("%s: %v: %s", filepath.Base(name), err, lastLines(msg, 3))
	}
	return out.String(), nil
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, " / ")
}

// machine describes the machine and the contenders' versions.
func (r *runner) machine() string {
	var b strings.Builder
	cpu := "unknown CPU"
	if data, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		info := map[string]string{}
		for _, l := range strings.Split(string(data), "\n") {
			if l == "" {
				break // the first processor only
			}
			if k, v, ok := strings.Cut(l, ":"); ok {
				info[strings.TrimSpace(k)] = strings.TrimSpace(v)
			}
		}
		if info["model name"] != "" {
			cpu = fmt.Sprintf("%s (family %s, model %s)", info["model name"], info["cpu family"], info["model"])
		}
		if strings.Contains(info["flags"], "avx512f") {
			cpu += ", AVX-512"
		}
	}
	load := ""
	if data, err := os.ReadFile("/proc/loadavg"); err == nil {
		f := strings.Fields(string(data))
		if len(f) >= 3 {
			load = strings.Join(f[:3], " ")
		}
	}
	fmt.Fprintf(&b, "date:     %s\n", time.Now().UTC().Format("2006-01-02 15:04 UTC"))
	fmt.Fprintf(&b, "machine:  %s, %d cores, load average at start %s\n", cpu, runtime.NumCPU(), load)
	fmt.Fprintf(&b, "gopir:    %s, %d kernel threads (GOMAXPROCS %d)\n", runtime.Version(), threads, runtime.GOMAXPROCS(0))
	if (*infOnly && !*det) || *base != "" { // -det -inference needs PyTorch for the ONNX export
		return b.String()
	}
	if _, err := r.cmd(nil, *python, "-c", "import torch"); err == nil {
		r.torch = true
		v, _ := r.cmd(nil, *python, "-c", "import torch; print(torch.__version__)")
		deb, _ := r.cmd(nil, "dpkg-query", "-W", "-f", "${Package} ${Version}", "python3-torch")
		if deb != "" {
			deb = ", " + deb
		}
		threadsUsed := "2 threads and 1 thread"
		if *det {
			threadsUsed = "2 threads"
			if *infOnly {
				threadsUsed = "for the ONNX export only"
			}
		}
		fmt.Fprintf(&b, "PyTorch:  %s (%s%s), CPU, %s\n", strings.TrimSpace(v), *python, deb, threadsUsed)
	} else {
		r.fail["torch"] = "MISSING (apt-get install python3-torch)"
		fmt.Fprintf(&b, "PyTorch:  MISSING: python3-torch is not installed (apt-get install python3-torch); PyTorch cells are empty\n")
	}
	if *det { // the detector rows need neither numpy's BLAS nor GoMLX
		return b.String()
	}
	if _, err := r.cmd(nil, *python, "-c", "import numpy"); err == nil {
		r.numpy = true
		v, _ := r.cmd(nil, *python, "-c", "import numpy; print(numpy.__version__)")
		blas, _ := filepath.EvalSymlinks("/usr/lib/x86_64-linux-gnu/libblas.so.3")
		ob, _ := r.cmd(nil, "dpkg-query", "-W", "-f", "${Package} ${Version}", "libopenblas0-pthread")
		line := fmt.Sprintf("numpy %s, BLAS %s", strings.TrimSpace(v), blas)
		if ob != "" {
			line += " (" + ob + ")"
		}
		if !strings.Contains(blas, "openblas") {
			line += "  WARNING: numpy does not use OpenBLAS (apt-get install libopenblas0-pthread)"
		}
		fmt.Fprintf(&b, "OpenBLAS: %s; OPENBLAS_CORETYPE and OPENBLAS_L2_SIZE unset\n", line)
	} else {
		r.fail["numpy"] = "MISSING (apt-get install python3-numpy libopenblas0-pthread)"
		fmt.Fprintf(&b, "OpenBLAS: MISSING: python3-numpy is not installed (apt-get install python3-numpy libopenblas0-pthread); OpenBLAS cells are empty\n")
	}
	fmt.Fprintf(&b, "GoMLX:    v0.26.0, SimpleGo (pure Go) backend, parallelism 2 (bench/peers/gomlx)\n")
	return b.String()
}

// build compiles the test binaries, the GoMLX peer and the ORT peer.
func (r *runner) build() {
	progress("building")
	pkgs := []string{"bench", "kernels", "exec"}
	if *infOnly || *det {
		pkgs = pkgs[:1]
	}
	for _, pkg := range pkgs {
		out := filepath.Join(r.tmp, pkg+".test")
		r.bin[pkg] = out
		if _, err := r.cmd(nil, "go", "test", "-c", "-o", out, "./"+pkg); err != nil {
			r.fail[pkg] = "build failed: " + err.Error()
			progress("%s", r.fail[pkg])
		}
	}
	// The inference benchmark lives in bench.test too, under a key of its
	// own: a failure of one (a wrong answer) does not stop the other.
	r.bin["inference"], r.fail["inference"] = r.bin["bench"], r.fail["bench"]
	r.buildORT()
	if *noGoMLX || *infOnly || *det {
		r.fail["gomlx"] = "skipped (-no-gomlx)"
		return
	}
	if _, err := r.cmd(nil, "go", "build", "-C", "bench/peers/gomlx", "-o", filepath.Join(r.tmp, "gomlx-step"), "."); err != nil {
		r.fail["gomlx"] = "cannot build: " + err.Error()
		progress("GoMLX %s", r.fail["gomlx"])
	}
}

// goBench runs a test binary's benchmarks with GOMAXPROCS set to each of
// cpus in turn and records each metric as "prefix NAME/tP UNIT", where P
// is GOMAXPROCS.
//
// Each value gets its own process. With -test.cpu 2,1 in one process, a
// benchmark written with b.Loop runs its first entry under the GOMAXPROCS
// the tests left behind (the list's last value), not the one its name
// says: the 2-thread GEMM figures measured one thread.
func (r *runner) goBench(pkg, pattern, benchtime, cpus, prefix string) {
	for _, cpu := range strings.Split(cpus, ",") {
		if r.fail[pkg] != "" {
			return
		}
		r.goBench1(pkg, pattern, benchtime, cpu, prefix)
	}
}

func (r *runner) goBench1(pkg, pattern, benchtime, cpu, prefix string) {
	out, err := r.cmd(nil, r.bin[pkg], "-test.run", "^$", "-test.bench", pattern, "-test.benchtime", benchtime, "-test.cpu", cpu)
	if err != nil {
		r.fail[pkg] = err.Error()
		progress("%s", err)
		return
	}
	if r.goOut[pkg] == nil {
		r.goOut[pkg] = &bytes.Buffer{}
	}
	r.goOut[pkg].WriteString(out)
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 4 || !strings.HasPrefix(f[0], "Benchmark") {
			continue
		}
		// NAME-P, where P is GOMAXPROCS; no suffix when it is 1.
		name, procs := f[0], "1"
		if i := strings.LastIndex(name, "-"); i > 0 {
			if _, err := strconv.Atoi(name[i+1:]); err == nil {
				name, procs = name[:i], name[i+1:]
			}
		}
		for i := 2; i+1 < len(f); i += 2 {
			if v, err := strconv.ParseFloat(f[i], 64); err == nil {
				r.record(prefix+" "+name+"/t"+procs+" "+f[i+1], v)
			}
		}
	}
}

func (r *runner) record(key string, v float64) {
	r.s.add(key, v)
	fmt.Fprintf(r.rawOut, "%s %g\n", key, v)
}

// peer runs a peer (script or binary) and records its lines
// "WHO WHAT VALUE ..." (WHO torch, numpy, gomlx or ort) under the key made of
// the first fields fields, with the next field as the value; a line
// "WHO WHAT FAIL REASON" records why WHAT has no figure. For ort, the
// number after "CPU" is also recorded, as "KEY cpu".
func (r *runner) peer(fields int, env []string, failKey string, name string, args ...string) {
	out, err := r.cmd(env, name, args...)
	for _, l := range strings.Split(out, "\n") {
		f := strings.Fields(l)
		if len(f) <= fields || (f[0] != "torch" && f[0] != "numpy" && f[0] != "gomlx" && f[0] != "ort") {
			continue
		}
		if f[2] == "FAIL" {
			r.fail[f[0]+" "+f[1]] = strings.Join(f[3:], " ")
			continue
		}
		if v, err := strconv.ParseFloat(f[fields], 64); err == nil {
			r.record(strings.Join(f[:fields], " "), v)
		}
		// ortbench's lines end "...; CPU C ms/inference)": recorded as
		// "KEY cpu".
		if i := slices.Index(f, "CPU"); f[0] == "ort" && i > fields && i+1 < len(f) {
			if v, err := strconv.ParseFloat(f[i+1], 64); err == nil {
				r.record(strings.Join(f[:fields], " ")+" cpu", v)
			}
		}
	}
	if err != nil {
		r.fail[failKey] = err.Error()
		progress("%s", err)
	}
}

func (r *runner) round(i int) {
	secs, bt := "1", "1s"
	if *quick {
		secs, bt = "0.3", "0.3s"
	}
	reverse := i%2 == 1
	pair := func(a, b func()) {
		if reverse {
			a, b = b, a
		}
		a()
		b()
	}
	if *infOnly {
		pair(func() { r.inferenceGopir() }, func() { r.inferenceORT() })
		return
	}
	// GEMM: gopir, then OpenBLAS with 2 threads and with 1.
	sizes := make([]string, len(gemmSizes))
	for j, n := range gemmSizes {
		sizes[j] = strconv.Itoa(n)
	}
	pair(func() {
		r.goBench("kernels", "Gemm/n=("+strings.Join(sizes, "|")+")$", map[bool]string{true: "0.2s", false: "0.5s"}[*quick], "2,1", "gopir")
	}, func() {
		if !r.numpy {
			return
		}
		for _, th := range []string{"2", "1"} {
			env := []string{"OPENBLAS_CORETYPE=", "OPENBLAS_L2_SIZE=", "OPENBLAS_NUM_THREADS=" + th, "OMP_NUM_THREADS=" + th}
			out, err := r.cmd(env, *python, append([]string{"bench/numpy_gemm.py", "--seconds", map[bool]string{true: "0.2", false: "0.5"}[*quick]}, sizes...)...)
			if err != nil {
				r.fail["numpy"] = err.Error()
				continue
			}
			for _, l := range strings.Split(out, "\n") {
				if f := strings.Fields(l); len(f) == 3 && f[0] == "numpy" {
					if v, err := strconv.ParseFloat(f[2], 64); err == nil {
						r.record("openblas "+f[1]+" t"+th, v)
					}
				}
			}
		}
	})
	// Training steps and the per-op overhead: gopir, then PyTorch and
	// GoMLX.
	pair(func() {
		r.goBench("bench", "Step", bt, "2,1", "gopir")
		r.goBench("exec", "InterpreterOverhead$", bt, "2", "gopir")
	}, func() {
		if r.torch {
			// PyTorch with 2 threads and with 1, each with glibc's malloc
			// as installed and tuned (see mallocTuned); OpenBLAS (its
			// BLAS) with as many threads and its own kernel choice.
			for _, tuned := range []bool{false, true} {
				for _, th := range []string{"2", "1"} {
					env := []string{"OPENBLAS_CORETYPE=", "OPENBLAS_L2_SIZE=", "OPENBLAS_NUM_THREADS=" + th, "OMP_NUM_THREADS=" + th}
					args := []string{"bench/torch_step.py", "--threads", th, "--seconds", secs, "--warmup", "3"}
					if tuned {
						env = append(env, mallocTuned...)
						args = append(args, "--tag", "malloc")
					} else if th == "1" {
						// One thread: no idle OpenMP or OpenBLAS
						// threads spinning beside the loop.
						args = append(args, "--overhead", "10000")
					}
					r.peer(2, env, "torch", *python, args...)
				}
			}
		}
		if r.fail["gomlx"] == "" {
			r.peer(2, nil, "gomlx", filepath.Join(r.tmp, "gomlx-step"), "-seconds", "0", "-warmup", "1", "-min-steps", map[bool]string{true: "1", false: "2"}[*quick])
		}
	})
	// Inference of the exported ONNX models: gopir, then ONNX Runtime.
	pair(func() { r.inferenceGopir() }, func() { r.inferenceORT() })
}

func (r *runner) memory() []bench.MemRow {
	var rows []bench.MemRow
	for _, m := range memModels {
		row, err := bench.Memory(m, 3, threads)
		if err != nil {
			r.fail["mem "+m] = err.Error()
			progress("memory %s: %v", m, err)
			continue
		}
		rows = append(rows, row)
	}
	return rows
}

// cell formats a figure, "-" when missing.
func cell(v float64, ok bool, format string) string {
	if !ok {
		return "-"
	}
	return fmt.Sprintf(format, v)
}

// bytesStr writes n with thousands separators.
func bytesStr(n int64) string {
	s := strconv.FormatInt(n, 10)
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	return b.String()
}

func status(ok bool) string {
	if ok {
		return "met"
	}
	return "**not met**"
}

// best returns the better of the medians of key (a format with %d for
// the thread count) at 2 and 1 threads, and "BEST (2 thr A, 1 thr B)".
func (r *runner) best(key string, higher bool, format string) (float64, string, bool) {
	v2, ok2 := r.s.median(fmt.Sprintf(key, 2))
	v1, ok1 := r.s.median(fmt.Sprintf(key, 1))
	if !ok2 && !ok1 {
		return 0, "-", false
	}
	v := v2
	if !ok2 || (ok1 && (v1 > v2) == higher) {
		v = v1
	}
	return v, fmt.Sprintf(format+" (2 thr %s, 1 thr %s)", v, cell(v2, ok2, format), cell(v1, ok1, format)), true
}

func (r *runner) why(keys ...string) string {
	for _, k := range keys {
		if m := r.fail[k]; m != "" {
			return m
		}
	}
	return "no figure"
}

// table prints the one table of bench/run, in Markdown.
func (r *runner) table(mem []bench.MemRow) {
	var rows [][]string
	add := func(c ...string) { rows = append(rows, c) }

	// GEMM.
	for _, n := range gemmSizes {
		what := fmt.Sprintf("GEMM f32 n=%d (GFLOP/s)", n)
		g, gs, gok := r.best(fmt.Sprintf("gopir BenchmarkGemm/n=%d/t%%d GFLOP/s", n), true, "%.1f")
		if !gok {
			gs = "- (" + r.why("kernels") + ")"
		}
		o, os, ook := r.best(fmt.Sprintf("openblas %d t%%d", n), true, "%.1f")
		if !ook {
			add(what, gs, "OpenBLAS: "+r.why("numpy"), "-", "≥ 0.75", "-")
			continue
		}
		ratio, st := "-", "-"
		if gok {
			ratio, st = fmt.Sprintf("%.2f", g/o), status(g/o >= 0.75)
		}
		add(what, gs, "OpenBLAS "+os, ratio, "≥ 0.75", st)
	}

	// Training steps.
	goals := map[string]float64{"mlp": 3, "lenet": 1.5}
	for _, m := range []string{"mlp", "lenet"} {
		what := fmt.Sprintf("%s step, batch %d (ms)", m, bench.Batch[m])
		goal := fmt.Sprintf("≥ %g× faster", goals[m])
		g, gs, gok := r.best("gopir BenchmarkStep/"+m+"/t%d ms/step", false, "%.2f")
		if !gok {
			gs = "- (" + r.why("bench") + ")"
		}
		for _, cfg := range []struct{ tag, label string }{{"", "as installed"}, {"/malloc", "malloc tuned"}} {
			if t, ts, ok := r.best("torch "+m+"/t%d"+cfg.tag, false, "%.2f"); ok {
				ratio, st := "-", "-"
				if gok {
					ratio = fmt.Sprintf("%.3f (%.2f× faster)", g/t, t/g)
					st = status(t/g >= goals[m])
				}
				add(what, gs, "PyTorch, "+cfg.label+": "+ts, ratio, goal, st)
			} else {
				add(what, gs, "PyTorch: "+r.why("torch"), "-", goal, "-")
				break
			}
		}
		gc, gcok := r.s.median("gopir BenchmarkStep/" + m + "/t1 cpu-ms/step")
		tc, tcok := r.s.median("torch " + m + "/t1/malloc/cpu")
		if gcok && tcok {
			add(what+", CPU time, 1 thread", fmt.Sprintf("%.2f", gc), fmt.Sprintf("PyTorch, malloc tuned: %.2f", tc),
				fmt.Sprintf("%.3f (%.2f× faster)", gc/tc, tc/gc), goal, "(cross-check)")
		}
		g2, g2ok := r.s.median("gopir BenchmarkStep/" + m + "/t2 ms/step")
		if o, ok := r.s.median("gomlx " + m); ok {
			ratio, st := "-", "-"
			if g2ok {
				ratio = fmt.Sprintf("%.4f (%.0f× faster)", g2/o, o/g2)
				st = status(g2 < o)
			}
			add(what+", 2 threads", cell(g2, g2ok, "%.2f"), fmt.Sprintf("GoMLX %.1f", o), ratio, "faster than GoMLX", st)
		} else {
			add(what+", 2 threads", cell(g2, g2ok, "%.2f"), "GoMLX: "+r.why("gomlx "+m, "gomlx"), "-", "faster than GoMLX", "cannot compare")
		}
	}

	// Interpreter overhead.
	g, gok := r.s.median("gopir BenchmarkInterpreterOverhead/t2 ns/instr")
	gc, gcok := r.s.median("gopir BenchmarkInterpreterOverhead/t2 cpu-ns/instr")
	t, tok := r.s.median("torch overhead")
	tc, tcok := r.s.median("torch overhead-cpu")
	ref, ratio := "PyTorch eager: "+r.why("torch"), "-"
	if tok {
		ref = fmt.Sprintf("PyTorch eager %.0f ns/op", t)
		if tcok {
			ref += fmt.Sprintf(" (CPU %.0f)", tc)
		}
		if gok {
			ratio = fmt.Sprintf("%.3f", g/t)
		}
	}
	gs := cell(g, gok, "%.1f")
	if gcok {
		gs += fmt.Sprintf(" (CPU %.1f)", gc)
	}
	if !gok {
		gs = "- (" + r.why("exec") + ")"
	}
	add("interpreter, 10,000 scalar adds (ns/instr)", gs, ref, ratio, "≤ 150 ns/instr", map[bool]string{true: status(g <= 150), false: "-"}[gok])

	// Memory.
	for _, m := range mem {
		bound := fmt.Sprintf("liveness bound %s", bytesStr(m.Bound))
		var alt []string
		if m.RegionBound != m.Bound {
			alt = append(alt, fmt.Sprintf("%s holding captured values and conditions to the end of their if/while", bytesStr(m.RegionBound)))
		}
		if m.WorkspaceBound != m.RegionBound {
			alt = append(alt, fmt.Sprintf("%s with kernel workspaces too", bytesStr(m.WorkspaceBound)))
		}
		if len(alt) > 0 {
			bound += " (" + strings.Join(alt, "; ") + ")"
		}
		pb := float64(m.Peak) / float64(m.Bound)
		add(m.Model+" peak allocated in a step (B)", bytesStr(m.Peak), bound, fmt.Sprintf("%.4f", pb), "≤ 1.10", status(pb <= 1.10))
		add(m.Model+" steady state (B)", bytesStr(m.Steady),
			fmt.Sprintf("params + optimizer state %s (%d tensors, %s unrounded)", bytesStr(m.StoreRounded), m.StoreTensors, bytesStr(m.StoreBytes)),
			fmt.Sprintf("%.4f", float64(m.Steady)/float64(m.StoreRounded)), "equal", status(m.Steady == m.StoreRounded))
	}
	for _, m := range memModels {
		if e := r.fail["mem "+m]; e != "" {
			add(m+" memory", "-", e, "-", "-", "-")
		}
	}

	printHeader("measure", "gopir", "reference", "gopir / reference", "goal", "status")
	for _, row := range rows {
		printRow(row...)
	}
	fmt.Printf("\nFigures are medians over %d rounds of each round's figure: the median step (gopir, PyTorch, GoMLX), GFLOP/s over\n", *rounds)
	fmt.Println("all products of about 0.5 s (gopir, OpenBLAS), ns per op over 10,000 ops (median of 5 loops for PyTorch);")
	fmt.Println("each contender's figure is the better of its 2-thread and 1-thread runs (both shown), and ratios compare")
	fmt.Println("those; GoMLX runs with 2 threads only and is compared with gopir's 2-thread figure.")
	var spreads []string
	for _, m := range []string{"mlp", "lenet"} {
		for _, k := range [][2]string{
			{"gopir BenchmarkStep/" + m + "/t2 ms/step", "gopir " + m + " 2 thr"},
			{"gopir BenchmarkStep/" + m + "/t1 ms/step", "gopir " + m + " 1 thr"},
			{"torch " + m + "/t2/malloc", "PyTorch (malloc tuned) " + m + " 2 thr"},
			{"torch " + m + "/t1/malloc", "PyTorch (malloc tuned) " + m + " 1 thr"},
		} {
			if s := r.s.spread(k[0], "%.2f"); s != "" {
				spreads = append(spreads, k[1]+" "+s)
			}
		}
	}
	if len(spreads) > 0 {
		fmt.Println("Round-to-round range (ms): " + strings.Join(spreads, "; ") + ".")
	}
	for _, k := range []string{"gomlx mlp", "gomlx lenet"} {
		if e := r.fail[k]; e != "" {
			fmt.Printf("%s: %s\n", k, e)
		}
	}
}

// benchstat summarizes gopir's Go benchmarks over the rounds with
// golang.org/x/perf/cmd/benchstat, installed into the temporary directory
// from the module proxy; skipped if that fails.
func (r *runner) benchstat() {
	if len(r.goOut) == 0 {
		return
	}
	bin := filepath.Join(r.tmp, "bin")
	if _, err := r.cmd([]string{"GOBIN=" + bin, "GOFLAGS="}, "go", "install", "golang.org/x/perf/cmd/benchstat@latest"); err != nil {
		fmt.Printf("\n(benchstat unavailable: %v)\n", err)
		return
	}
	fmt.Println("\ngopir's Go benchmarks over the rounds (benchstat):")
	for _, pkg := range []string{"kernels", "bench", "exec", "inference"} {
		buf := r.goOut[pkg]
		if buf == nil {
			continue
		}
		f := filepath.Join(r.tmp, pkg+".txt")
		if err := os.WriteFile(f, buf.Bytes(), 0o644); err != nil {
			continue
		}
		out, err := r.cmd(nil, filepath.Join(bin, "benchstat"), f)
		if err != nil {
			fmt.Printf("(benchstat: %v)\n", err)
			continue
		}
		fmt.Println(strings.TrimRight(out, "\n"))
	}
}
