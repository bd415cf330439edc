package main

import (
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// Inference before and after: bench/run -inference -base REV times the
// inference rows of revision REV's bench binary and of the working tree's
// (gopir's BenchmarkONNXInference), with ONNX Runtime beside them, in
// rounds that rotate the three, on the working tree's exported models.

// compareInferenceWithBase is bench/run -inference -base REV.
func (r *runner) compareInferenceWithBase(start time.Time) {
	progress("building %s and the working tree", *base)
	desc, err := r.baseSetup(*base)
	if err != nil {
		r.removeAll()
		fatal(err)
	}
	r.bin["inference"] = filepath.Join(r.tmp, "bench.test")
	if _, err := r.cmd(nil, "go", "test", "-c", "-o", r.bin["inference"], "./bench"); err != nil {
		r.removeAll()
		fatal(err)
	}
	header := r.machine()
	r.buildORT()
	header += r.inferenceSetup()
	bt := "0.3s"
	if *quick {
		bt = "0.1s"
	}
	contenders := []func(){
		func() { r.goBench("base", "ONNXInference", bt, "2,1", "base") },
		func() { r.goBench("inference", "ONNXInference", bt, "2,1", "gopir") },
		func() { r.inferenceORT() },
	}
	for i := range *rounds {
		progress("round %d of %d", i+1, *rounds)
		for j := range contenders {
			contenders[(i+j)%len(contenders)]()
		}
	}
	fmt.Println()
	fmt.Print(header)
	r.baseInferenceTable(desc)
	fmt.Printf("\n(bench/run took %s)\n", time.Since(start).Round(time.Second))
}

// baseInferenceTable prints the before/after inference table.
func (r *runner) baseInferenceTable(desc string) {
	fmt.Printf("before: %s\nafter:  the working tree\n\n", desc)
	fmt.Println("Inference of the exported ONNX models: ms per inference (round-to-round range); CPU ms per inference with one thread.")
	fmt.Println()
	printHeader("model", "batch", "threads", "before (ms)", "after (ms)", "after / before", "ONNX Runtime (ms)", "after / ORT", "CPU before / after / ORT")
	for _, m := range r.inf {
		if m.absent != "" {
			fmt.Printf("| %s | - | - | - (%s) | | | | | |\n", m.name, m.absent)
			continue
		}
		for _, b := range m.batches {
			ob := b
			if !m.batched {
				ob = 0
			}
			for _, t := range infThreads {
				name := fmt.Sprintf("BenchmarkONNXInference/model=%s/batch=%d/t%d ", m.name, b, t)
				bv, bs, bok := r.withRange("base "+name+"ms/inference", "%.4g")
				av, as, aok := r.withRange("gopir "+name+"ms/inference", "%.4g")
				okey := fmt.Sprintf("ort %s/b%d/t%d", m.name, ob, t)
				ov, os, ook := r.ortTime(okey)
				for _, c := range []struct {
					ok bool
					s  *string
				}{{bok, &bs}, {aok, &as}, {ook, &os}} {
					if !c.ok {
						*c.s = "-"
					}
				}
				ratio := func(x, y float64, ok bool) string {
					if !ok {
						return "-"
					}
					return fmt.Sprintf("%.2f", x/y)
				}
				cpu := "-"
				if t == 1 {
					cpu = r.figures("base "+name+"cpu-ms/inference", "gopir "+name+"cpu-ms/inference", okey+" cpu")
				}
				fmt.Printf("| %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", m.name, strconv.Itoa(b), strconv.Itoa(t),
					bs, as, ratio(av, bv, aok && bok), strings.ReplaceAll(os, "|", "/"), ratio(av, ov, aok && ook), cpu)
			}
		}
	}
	if e := r.fail["ort"]; e != "" {
		fmt.Printf("\nONNX Runtime: %s.\n", e)
	}
	fmt.Printf("\nMedians over %d rounds; in each round the base's gopir, the working tree's and ORT run back to back, in\n", *rounds)
	fmt.Println("rotating order (see the inference table of bench/run -inference for how each is timed).")
}

// figures is the medians of keys, "/"-separated, each "-" where there is
// none (a contender that failed or did not run), never a made-up 0.
func (r *runner) figures(keys ...string) string {
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = "-"
		if v, ok := r.s.median(k); ok {
			parts[i] = fmt.Sprintf("%.4g", v)
		}
	}
	return strings.Join(parts, " / ")
}
