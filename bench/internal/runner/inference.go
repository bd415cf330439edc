package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/gopir/gopir/bench"
)

// The inference rows (issue 13): the models tools/onnx_export.py exported
// from PyTorch (onnx/testdata/models), run by gopir (BenchmarkONNXInference
// in bench/inference_test.go) and by ONNX Runtime (bench/peers/ort's
// ortbench) on the same batches, made by repeating the golden input rows,
// with 1 and 2 threads, side by side in every round.

// infThreads are the thread counts of the inference rows, in table order.
var infThreads = []int{1, 2}

// ORT's intra-op threads spin between ops by default
// (session.intra_op.allow_spinning). With one intra-op thread ORT makes no
// thread pool and the setting changes nothing. With two, which is faster
// depends on what else the machine runs: on this shared 2-vCPU machine
// spinning lost badly at some moments (resnet18ish batch 1: 10.6 ms
// against 5.9) and won at others, so every round times ORT's 2-thread rows
// both ways and each row takes the faster median (the table says which).

// infModel is one model of the inference rows.
type infModel struct {
	name    string
	dir     string // its golden directory
	batches []int  // the batches of its rows
	batched bool   // false: a fixed batch (ctrlflow), which ortbench times with -batch 0
	absent  string // why its .onnx file is not there, or ""
}

// inferenceSetup builds the list of models and returns the header lines
// about ONNX Runtime and the models.
func (r *runner) inferenceSetup() string {
	var b strings.Builder
	models := filepath.Join(r.root, "onnx", "testdata", "models")
	for _, name := range bench.InferenceModels {
		m := infModel{name: name, dir: filepath.Join(models, name)}
		man, err := bench.ReadManifest(models, name)
		if err != nil {
			r.fail["onnx "+name] = err.Error()
			progress("inference %s: %v", name, err)
			continue
		}
		m.batches, m.batched = man.Batches(), man.Batched()
		if _, err := os.Stat(man.ModelPath()); err != nil {
			m.absent = fmt.Sprintf("%s.onnx absent (git-ignored; /usr/bin/python3 tools/onnx_export.py --models %s writes it)", name, name)
			fmt.Fprintf(&b, "models:   %s\n", m.absent)
		}
		r.inf = append(r.inf, m)
	}
	switch {
	case r.ortVersion != "":
		fmt.Fprintf(&b, "ORT:      ONNX Runtime %s, CPU execution provider, through onnxruntime_go v1.27.0 (bench/peers/ort); %s;\n", r.ortVersion, r.ortLib)
		fmt.Fprintf(&b, "          N intra-op threads, 1 inter-op thread, sequential execution, all graph optimizations;\n")
		fmt.Fprintf(&b, "          2 threads: the faster of spinning intra-op threads (ORT's default) and not (allow_spinning=0)\n")
	case *noORT:
		fmt.Fprintf(&b, "ORT:      skipped (-no-ort)\n")
	default:
		fmt.Fprintf(&b, "ORT:      MISSING: %s; ORT cells are empty\n", r.fail["ort"])
	}
	return b.String()
}

// buildORT builds ortbench and checks that it finds the library.
func (r *runner) buildORT() {
	if *noORT {
		r.fail["ort"] = "skipped (-no-ort)"
		return
	}
	bin := filepath.Join(r.tmp, "ortbench")
	if _, err := r.cmd(nil, "go", "build", "-C", "bench/peers/ort", "-o", bin, "./cmd/ortbench"); err != nil {
		r.fail["ort"] = "cannot build bench/peers/ort: " + err.Error()
		progress("ORT %s", r.fail["ort"])
		return
	}
	out, err := r.cmd(nil, bin, "-version")
	if err != nil {
		if strings.Contains(err.Error(), "library not found") {
			r.fail["ort"] = "ORT not installed (bash bench/peers/ort/install.sh)"
		} else {
			r.fail["ort"] = "cannot load ONNX Runtime: " + err.Error()
		}
		progress("%s", r.fail["ort"])
		return
	}
	// "ort version VERSION LIBRARY"
	if f := strings.Fields(out); len(f) >= 4 && f[1] == "version" {
		r.ortVersion, r.ortLib = f[2], f[3]
	} else {
		r.fail["ort"] = fmt.Sprintf("unexpected ortbench -version output %q", strings.TrimSpace(out))
	}
}

// inferenceGopir runs BenchmarkONNXInference with 2 threads and with 1.
func (r *runner) inferenceGopir() {
	bt := "0.3s"
	if *quick {
		bt = "0.1s"
	}
	r.goBench("inference", "ONNXInference", bt, "2,1", "gopir")
}

// inferenceORT runs ortbench on each model, 2 threads and 1, one round.
func (r *runner) inferenceORT() {
	if r.fail["ort"] != "" {
		return
	}
	round, warmup := "300ms", "100ms"
	if *quick {
		round, warmup = "100ms", "50ms"
	}
	for _, m := range r.inf {
		if m.absent != "" {
			continue
		}
		batches := "0"
		if m.batched {
			var bs []string
			for _, b := range m.batches {
				bs = append(bs, strconv.Itoa(b))
			}
			batches = strings.Join(bs, ",")
		}
		args := []string{"-golden", m.dir, "-batch", batches, "-rounds", "1", "-round", round, "-warmup", warmup}
		r.peer(2, nil, "ort "+m.name, filepath.Join(r.tmp, "ortbench"), append(args, "-threads", "2,1")...)
		r.peer(2, nil, "ort "+m.name, filepath.Join(r.tmp, "ortbench"), append(args, "-threads", "2", "-no-spin", "-no-check")...)
	}
}

// withRange is the median of key with the round-to-round range.
func (r *runner) withRange(key, format string) (float64, string, bool) {
	v, ok := r.s.median(key)
	if !ok {
		return 0, "", false
	}
	s := fmt.Sprintf(format, v)
	if sp := r.s.spread(key, format); sp != "" {
		s += " (" + sp + ")"
	}
	return v, s, true
}

// ortTime is ORT's figure for key "ort MODEL/bB/tT" and its cell: with 2
// or more threads, the faster of the spinning and non-spinning medians,
// the cell saying which and giving the other.
func (r *runner) ortTime(key string) (float64, string, bool) {
	o, cell, ok := r.withRange(key, "%.4g")
	ns, nscell, nsok := r.withRange(key+"/no-spin", "%.4g")
	switch {
	case nsok && (!ok || ns < o):
		other := "-"
		if ok {
			other = fmt.Sprintf("%.4g", o)
		}
		return ns, nscell + ", no spin (spin " + other + ")", true
	case ok && nsok:
		cell += fmt.Sprintf(", spin (no spin %.4g)", ns)
	}
	return o, cell, ok
}

// inferenceTable prints the inference rows, in Markdown.
func (r *runner) inferenceTable() {
	fmt.Println()
	fmt.Println("Inference of the exported ONNX models: ms per inference (round-to-round range), gopir / ORT (below 1: gopir")
	fmt.Println("faster), and each one's largest |output − PyTorch's golden output| over the golden cases.")
	fmt.Println()
	printHeader("model", "batch", "threads", "gopir (ms)", "ONNX Runtime (ms)", "gopir / ORT", "CPU time, gopir / ORT", "gopir max abs err", "ORT max abs err")
	for _, m := range r.inf {
		if m.absent != "" {
			printRow(m.name, "-", "-", "- ("+m.absent+")", "-", "-", "-", "-", "-")
			continue
		}
		oerr := "-"
		if v, ok := r.s.median("ort " + m.name + "/max-abs-err"); ok {
			oerr = fmt.Sprintf("%.2g", v)
		} else if r.fail["ort"] == "" {
			oerr = "- (" + r.why("ort "+m.name+"/check/case0", "ort "+m.name) + ")"
		}
		for _, b := range m.batches {
			ob := b
			if !m.batched {
				ob = 0 // ortbench's "as they are"
			}
			for _, t := range infThreads {
				gk := fmt.Sprintf("gopir BenchmarkONNXInference/model=%s/batch=%d/t%d ", m.name, b, t)
				g, gs, gok := r.withRange(gk+"ms/inference", "%.4g")
				if !gok {
					gs = "- (" + r.why("inference") + ")"
				}
				gerr := "-"
				if v, ok := r.s.median(gk + "max-abs-err-nano"); ok {
					gerr = fmt.Sprintf("%.2g", v/1e9)
				}
				okey := fmt.Sprintf("ort %s/b%d/t%d", m.name, ob, t)
				o, ocell, ook := r.ortTime(okey)
				if !ook {
					ocell = "-"
					if r.fail["ort"] == "" { // else said once, below the table
						ocell = "- (" + r.why(okey, "ort "+m.name) + ")"
					}
				}
				ratio := "-"
				if gok && ook {
					ratio = fmt.Sprintf("%.2f", g/o)
				}
				// CPU time per inference, 1 thread: what each one's run
				// costs, whatever else the machine is doing.
				cpuRatio := "-"
				gc, gcok := r.s.median(gk + "cpu-ms/inference")
				oc, ocok := r.s.median(okey + " cpu")
				if t == 1 && gcok && ocok {
					cpuRatio = fmt.Sprintf("%.2f (%.4g / %.4g)", gc/oc, gc, oc)
				}
				printRow(m.name, strconv.Itoa(b), strconv.Itoa(t), gs, ocell, ratio, cpuRatio, gerr, oerr)
			}
		}
	}
	for _, name := range bench.InferenceModels {
		if e := r.fail["onnx "+name]; e != "" {
			printRow(name, "-", "-", "- ("+e+")", "-", "-", "-", "-", "-")
		}
	}
	if e := r.fail["ort"]; e != "" {
		fmt.Printf("\nONNX Runtime: %s.\n", e)
	}
	bt, round, warmup := "0.3", "0.3", "0.1"
	if *quick {
		bt, round, warmup = "0.1", "0.1", "0.05"
	}
	fmt.Printf("\nMedians over %d rounds. In each round gopir (BenchmarkONNXInference: about %s s per row after a warm-up\n", *rounds, bt)
	fmt.Printf("of at least one run and 0.05 s; its median run) and ORT (ortbench: %s s and at least 5 runs per row after a\n", round)
	fmt.Printf("warm-up of at least 3 runs and %s s; its median run) run back to back, in alternating order. Batches repeat\n", warmup)
	fmt.Println("the golden input rows; ctrlflow has a fixed batch of 2. ORT's 2-thread figure is the faster of spinning and")
	fmt.Println("non-spinning intra-op threads (both shown). With one thread, the CPU-time column compares process CPU time per")
	fmt.Println("inference (ms, mean over a round's runs; median over rounds): a cross-check that does not count the time another")
	fmt.Println("process holds the core. The errors are measured at the golden batch (2): gopir's with the row's thread count,")
	fmt.Println("ORT's with 2 threads.")
}
