package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/gopir/gopir/bench"
)

// The detector rows (bench/run -det, issue 17): ppyoloe_s's training step
// at batch 8, 320×320, 2 threads, against its PyTorch twin
// (bench/peers/ppyoloe/step.py) on the same batch from the same weights;
// the peak memory of a step; and inference of the deployed network at batch
// 1 and 8, one thread and two, against ONNX Runtime on the twin's export of
// the same network (issue 16's bars). With -inference, only the inference
// rows.

// detInferenceThreads are the thread counts of the detector's inference
// rows, in the order they run.
var detInferenceThreads = []int{2, 1}

// detRun is bench/run -det.
func (r *runner) detRun(header string, start time.Time) {
	header += r.detSetup()
	for i := range *rounds {
		progress("round %d of %d", i+1, *rounds)
		r.detRound(i%2 == 1)
	}
	if !*infOnly {
		progress("memory")
		r.detMemory()
	}
	fmt.Println()
	fmt.Print(header)
	fmt.Println()
	r.detTable()
	fmt.Printf("\n(bench/run took %s)\n", time.Since(start).Round(time.Second))
}

// detStepBenchtime is BenchmarkDetStep's -benchtime: a step takes seconds.
const detStepBenchtime = "3x"

// detSetup writes the batch and the initial weights (gopir feeds) and the
// twin's ONNX export, and returns the header lines.
func (r *runner) detSetup() string {
	dir := filepath.Join(r.tmp, "det")
	r.detDir = dir
	weights := filepath.Join(dir, "weights.safetensors")
	if _, err := r.cmd(nil, "go", "run", "./cmd/gopir", "feeds", "--model", bench.DetModel, "--batch", fmt.Sprint(bench.DetBatch),
		"--steps", "0", "--out", dir, "--weights", weights); err != nil {
		r.fail["det feeds"] = err.Error()
		progress("detector: %v", err)
		return ""
	}
	if !r.torch {
		return ""
	}
	if _, err := r.cmd(nil, *python, "bench/peers/ppyoloe/export.py", "--weights", weights,
		"--image", filepath.Join(dir, "step0", "image.npy"), "--out", filepath.Join(dir, "onnx")); err != nil {
		r.fail["det onnx"] = "export failed: " + err.Error()
		progress("detector: %v", err)
	}
	ort := "ORT:      " + r.fail["ort"] + "\n"
	if r.ortVersion != "" {
		ort = fmt.Sprintf("ORT:      ONNX Runtime %s, CPU execution provider, 1 and 2 intra-op threads (2: the faster of spinning, its default, and not; bench/peers/ort); %s\n", r.ortVersion, r.ortLib)
	}
	return ort + fmt.Sprintf("detector: %s, batch %d, 320×320, its training batch 0 and initial weights (seed 0) for both; PyTorch: bench/peers/ppyoloe\n", bench.DetModel, bench.DetBatch)
}

// detRound times gopir and its peers once, in alternating order.
func (r *runner) detRound(reverse bool) {
	secs := map[bool]string{true: "1", false: "20"}[*quick]
	var ts []string
	for _, t := range detInferenceThreads {
		ts = append(ts, strconv.Itoa(t))
	}
	threads := strings.Join(ts, ",")
	gopir := func() {
		if !*infOnly {
			r.goBench("bench", "DetStep$", map[bool]string{true: "1x", false: detStepBenchtime}[*quick], "2", "gopir")
		}
		bt := map[bool]string{true: "2x", false: "5x"}[*quick]
		r.goBench("bench", "DetInference/compile=optimized", bt, threads, "gopir")
		r.goBench("bench", "DetInference/compile=plain", bt, "2", "gopir")
	}
	peers := func() {
		if r.torch && r.fail["det feeds"] == "" && !*infOnly {
			for _, tuned := range []bool{true, false} {
				env := []string{"OPENBLAS_CORETYPE=", "OPENBLAS_L2_SIZE=", "OPENBLAS_NUM_THREADS=2", "OMP_NUM_THREADS=2"}
				args := []string{"bench/peers/ppyoloe/step.py", "--feeds", filepath.Join(r.detDir, "step0"),
					"--weights", filepath.Join(r.detDir, "weights.safetensors"), "--threads", "2", "--seconds", secs, "--warmup", "2"}
				if tuned {
					env = append(env, mallocTuned...)
					args = append(args, "--tag", "malloc")
				}
				r.peer(2, env, "torch", *python, args...)
			}
		}
		if r.fail["ort"] == "" && r.fail["det onnx"] == "" && r.torch {
			onnx := filepath.Join(r.detDir, "onnx")
			r.peer(2, nil, "ort det", filepath.Join(r.tmp, "ortbench"), "-model", filepath.Join(onnx, "ppyoloe_s.onnx"),
				"-in", "image="+filepath.Join(onnx, "image.npy"), "-want", "scores="+filepath.Join(onnx, "scores.npy"),
				"-want", "boxes="+filepath.Join(onnx, "boxes.npy"), "-batch", "1,8", "-threads", threads)
			// As in the inference rows, ORT's 2-thread figure is the
			// faster of spinning intra-op threads and not (detORT).
			r.peer(2, nil, "ort det", filepath.Join(r.tmp, "ortbench"), "-model", filepath.Join(onnx, "ppyoloe_s.onnx"),
				"-in", "image="+filepath.Join(onnx, "image.npy"), "-batch", "1,8", "-threads", "2", "-no-spin", "-no-check")
		}
	}
	if reverse {
		peers()
		gopir()
		return
	}
	gopir()
	peers()
}

// detMemory runs the twin's profiled step (PyTorch's memory figures; gopir's
// peak comes with BenchmarkDetStep).
func (r *runner) detMemory() {
	if !r.torch || r.fail["det feeds"] != "" {
		return
	}
	env := append([]string{"OPENBLAS_CORETYPE=", "OPENBLAS_L2_SIZE=", "OPENBLAS_NUM_THREADS=2", "OMP_NUM_THREADS=2"}, mallocTuned...)
	r.peer(2, env, "torch", *python, "bench/peers/ppyoloe/step.py", "--feeds", filepath.Join(r.detDir, "step0"),
		"--weights", filepath.Join(r.detDir, "weights.safetensors"), "--threads", "2", "--seconds", "0", "--min-steps", "1",
		"--warmup", "2", "--tag", "mem", "--memory")
}

// detTable prints the detector's rows.
func (r *runner) detTable() {
	var rows [][]string
	add := func(c ...string) { rows = append(rows, c) }
	gkey := "gopir BenchmarkDetStep/t2 "
	if !*infOnly {
		r.detStepRows(gkey, add)
		r.detMemoryRows(gkey, add)
	}
	r.detInferenceRows(add)
	printHeader("measure", "gopir", "reference", "gopir / reference", "goal", "status")
	for _, row := range rows {
		printRow(row...)
	}
	inferences := map[bool]string{true: "2", false: "5"}[*quick]
	if *infOnly {
		fmt.Printf("\nMedians over %d rounds (gopir: the median of %s inferences after one per round; ONNX Runtime: ortbench's\n", *rounds, inferences)
		fmt.Println("median). The goal (issue 16) is gopir ≤ ORT in wall time at each batch and thread count.")
	} else {
		fmt.Printf("\nMedians over %d rounds (gopir: the median of %s steps after %d warm-up steps per round, and of %s inferences\n", *rounds, detStepBenchtime, 2, inferences)
		fmt.Println("after one; PyTorch: the median step of at least 20 s after 2 warm-up steps; ONNX Runtime: ortbench's median). The peak")
		fmt.Println("is gopir's allocator peak during a step (parameters, AdamW state, batch and all intermediates); the goal compares it")
		fmt.Println("with each PyTorch figure. The inference goal (issue 16) is gopir ≤ ORT in wall time at each batch and thread count.")
	}
	var spreads []string
	for _, k := range [][2]string{{gkey + "ms/step", "gopir"}, {"torch ppyoloe_s/t2/malloc", "PyTorch (malloc tuned)"}} {
		if s := r.s.spread(k[0], "%.0f"); s != "" {
			spreads = append(spreads, k[1]+" "+s)
		}
	}
	if len(spreads) > 0 {
		fmt.Println("Round-to-round range of the step (ms): " + strings.Join(spreads, "; ") + ".")
	}
	if e := r.fail["ort det"]; e != "" {
		fmt.Fprintln(os.Stdout, "ONNX Runtime: "+e)
	}
}

// detStepRows adds the training step's rows against PyTorch.
func (r *runner) detStepRows(gkey string, add func(...string)) {
	g, gok := r.s.median(gkey + "ms/step")
	gc, gcok := r.s.median(gkey + "cpu-ms/step")
	gs := cell(g, gok, "%.0f")
	if gcok {
		gs += fmt.Sprintf(" (CPU %.0f)", gc)
	}
	if !gok {
		gs = "- (" + r.why("bench") + ")"
	}
	what := fmt.Sprintf("%s step, batch %d, 320×320, 2 threads (ms)", bench.DetModel, bench.DetBatch)
	for _, c := range []struct{ tag, label string }{{"/malloc", "malloc tuned"}, {"", "as installed"}} {
		t, ok := r.s.median("torch ppyoloe_s/t2" + c.tag)
		if !ok {
			add(what, gs, "PyTorch: "+r.why("torch"), "-", "≤ 0.8", "-")
			break
		}
		ts := fmt.Sprintf("PyTorch, %s: %.0f", c.label, t)
		if tc, ok := r.s.median("torch ppyoloe_s/t2" + c.tag + "/cpu"); ok {
			ts += fmt.Sprintf(" (CPU %.0f)", tc)
		}
		ratio, st := "-", "-"
		if gok {
			ratio, st = fmt.Sprintf("%.3f", g/t), status(g/t <= 0.8)
		}
		add(what, gs, ts, ratio, "≤ 0.8", st)
	}
	if tc, ok := r.s.median("torch ppyoloe_s/t2/malloc/cpu"); ok && gcok {
		add(what+", CPU time", fmt.Sprintf("%.0f", gc), fmt.Sprintf("PyTorch, malloc tuned: %.0f", tc), fmt.Sprintf("%.3f", gc/tc), "≤ 0.8", "(cross-check)")
	}
}

// detMemoryRows adds the peak memory of a step against PyTorch's.
func (r *runner) detMemoryRows(gkey string, add func(...string)) {
	peak, pok := r.s.median(gkey + "peak-B")
	for _, m := range []struct{ key, label string }{
		{"torch ppyoloe_s/mem/profiler", "PyTorch, profiler: live tensors at the start + the highest running sum of allocations"},
		{"torch ppyoloe_s/mem/rss", "PyTorch, peak RSS − RSS before the first step (malloc tuned)"},
	} {
		t, ok := r.s.median(m.key)
		if !ok || !pok {
			add(bench.DetModel+" peak memory of a step (B)", cell(peak, pok, "%.0f"), m.label+": "+r.why("torch"), "-", "lower", "-")
			continue
		}
		add(bench.DetModel+" peak memory of a step (B)", bytesStr(int64(peak))+" (peak_allocated)", m.label+" "+bytesStr(int64(t)),
			fmt.Sprintf("%.3f", peak/t), "lower", status(peak < t))
	}
}

// detInferenceRows adds the deployed network's inference: optimized at
// each thread count against ORT (issue 16's bars), and compiled plainly
// at 2 threads for comparison.
func (r *runner) detInferenceRows(add func(...string)) {
	type row struct {
		compile, label string
		threads        int
		bar            bool
	}
	var want []row
	for _, t := range []int{1, 2} { // the table's order
		want = append(want, row{"optimized", "optimized as gopir run does", t, true})
	}
	want = append(want, row{"plain", "compiled plainly", 2, false})
	for _, c := range want {
		for _, b := range []int{1, 8} {
			key := fmt.Sprintf("gopir BenchmarkDetInference/compile=%s/b=%d/t%d ", c.compile, b, c.threads)
			g, gok := r.s.median(key + "ms/inference")
			gc, gcok := r.s.median(key + "cpu-ms/inference")
			gs := cell(g, gok, "%.1f")
			if gcok {
				gs += fmt.Sprintf(" (CPU %.1f)", gc)
			}
			if !gok {
				gs = "- (" + r.why("bench") + ")"
			}
			what := fmt.Sprintf("%s inference (deployed, %s), batch %d, %d thread%s (ms)", bench.DetModel, c.label, b, c.threads,
				map[bool]string{true: "", false: "s"}[c.threads == 1])
			goal, st := "(measured)", "-"
			if c.bar {
				goal = "≤ 1.0"
			}
			o, oc, ocok, how, ook := r.detORT(fmt.Sprintf("ort ppyoloe_s/b%d/t%d", b, c.threads))
			if !ook {
				add(what, gs, "ONNX Runtime: "+r.why("ort det", "det onnx", "ort"), "-", goal, "-")
				continue
			}
			os := fmt.Sprintf("ONNX Runtime %.1f", o)
			if ocok {
				os += fmt.Sprintf(" (CPU %.1f)", oc)
			}
			os += how
			ratio := "-"
			if gok {
				ratio = fmt.Sprintf("%.2f", g/o)
				if gcok && ocok {
					ratio += fmt.Sprintf(" (CPU %.2f)", gc/oc)
				}
				if c.bar {
					st = status(g/o <= 1)
				}
			}
			add(what, gs, os, ratio, goal, st)
		}
	}
}

// detORT is ORT's figure for key ("ort ppyoloe_s/bB/tT") with its CPU
// time: the faster of spinning intra-op threads and not (key/no-spin)
// where both ran, how says which and gives the other.
func (r *runner) detORT(key string) (ms, cpu float64, cpuOK bool, how string, ok bool) {
	o, ook := r.s.median(key)
	ns, nsok := r.s.median(key + "/no-spin")
	switch {
	case nsok && (!ook || ns < o):
		cpu, cpuOK = r.s.median(key + "/no-spin cpu")
		how = ", no spin"
		if ook {
			how += fmt.Sprintf(" (spin %.1f)", o)
		}
		return ns, cpu, cpuOK, how, true
	case ook:
		cpu, cpuOK = r.s.median(key + " cpu")
		if nsok {
			how = fmt.Sprintf(", spin (no spin %.1f)", ns)
		}
		return o, cpu, cpuOK, how, true
	}
	return 0, 0, false, "", false
}
