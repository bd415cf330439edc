package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/gopir/gopir/memory"
	"github.com/gopir/gopir/timeline"
	"github.com/gopir/gopir/train"
)

// memoryView records runs for --memory-timeline and --trace: it draws the
// recorded run that peaked highest beside the figures after every run,
// and streams every run into the trace.
type memoryView struct {
	timelinePath, format string
	rec                  timeline.Recorder
	trace                *timeline.TraceWriter
	traceFile            *os.File
	best                 *timeline.Run
	steps                []timeline.StepStat
	title                string
	unit                 string // what a recorded run is: "step" or "run"
	err                  error  // the first error writing the trace
}

type viewFlags struct{ timeline, trace string }

func (f *viewFlags) register(cmd *cobra.Command) {
	fl := cmd.Flags()
	fl.StringVar(&f.timeline, "memory-timeline", "", "draw the memory of the step that peaks highest and of every step to `FILE`.png or .svg")
	fl.StringVar(&f.trace, "trace", "", "write a Chrome trace (Perfetto, chrome://tracing) of every step to `FILE`.json")
}

// forRank gives rank r > 0 of a data-parallel job files of its own, so
// that the ranks do not write over each other: FILE.rankR.EXT for FILE.EXT
// (rank 0 keeps the names given).
func (f viewFlags) forRank(r int) viewFlags {
	name := func(path string) string {
		if path == "" || r == 0 {
			return path
		}
		ext := filepath.Ext(path)
		return fmt.Sprintf("%s.rank%d%s", strings.TrimSuffix(path, ext), r, ext)
	}
	return viewFlags{timeline: name(f.timeline), trace: name(f.trace)}
}

// open checks the flags and creates the trace file; nil when neither
// flag is given.
func (f viewFlags) open(title, unit string) (*memoryView, error) {
	if f.timeline == "" && f.trace == "" {
		return nil, nil
	}
	m := &memoryView{timelinePath: f.timeline, title: title, unit: unit}
	if f.timeline != "" {
		m.format = strings.TrimPrefix(strings.ToLower(filepath.Ext(f.timeline)), ".")
		if m.format != "png" && m.format != "svg" {
			return nil, badInputf("--memory-timeline %s: want a .png or .svg file", f.timeline)
		}
		if err := checkWritableDir(f.timeline); err != nil {
			return nil, badInputf("--memory-timeline %s: %v", f.timeline, err)
		}
	}
	if f.trace != "" {
		file, err := os.Create(f.trace)
		if err != nil {
			return nil, badInputf("--trace: %v", err)
		}
		m.traceFile, m.trace = file, timeline.NewTraceWriter(file)
	}
	return m, nil
}

// checkWritableDir says whether the directory of path exists, so that a
// long run does not end unable to write its picture.
func checkWritableDir(path string) error {
	dir := filepath.Dir(path)
	st, err := os.Stat(dir)
	if err != nil {
		return err
	}
	if !st.IsDir() {
		return fmt.Errorf("%s is not a directory", dir)
	}
	return nil
}

func (m *memoryView) begin(a *memory.Allocator, label string) { m.rec.Begin(a, label) }

// end finishes recording a run with the allocator's figures after it.
func (m *memoryView) end(stat timeline.StepStat) error {
	run := m.rec.End()
	if run == nil {
		return nil
	}
	m.steps = append(m.steps, stat)
	if m.best == nil || run.Peak() > m.best.Peak() {
		m.best = run
	}
	if m.trace != nil && m.err == nil {
		if err := m.trace.Add(run); err != nil {
			m.err = fmt.Errorf("--trace: %w", err)
		}
	}
	return m.err
}

// fail ends a run that failed: it is the one the picture shows, since
// where a run ran out of memory is what its user wants to see.
func (m *memoryView) fail() {
	if run := m.rec.End(); run != nil {
		run.Label += " (failed)"
		m.best = run
		if m.trace != nil && m.err == nil {
			m.err = m.trace.Add(run)
		}
	}
}

// finish writes the picture and ends the trace.
func (m *memoryView) finish() error {
	errs := []error{m.err}
	if m.trace != nil {
		if err := m.trace.Close(); err != nil {
			errs = append(errs, fmt.Errorf("--trace: %w", err))
		}
		if err := m.traceFile.Close(); err != nil {
			errs = append(errs, fmt.Errorf("--trace: %w", err))
		}
	}
	if m.timelinePath != "" && m.best != nil {
		if err := writeFileAtomic(m.timelinePath, func(f *os.File) error {
			return timeline.Draw(f, m.format, timeline.Picture{Title: m.title + ", " + m.best.Label, Run: m.best, Steps: m.steps, Unit: m.unit})
		}); err != nil {
			errs = append(errs, fmt.Errorf("--memory-timeline: %w", err))
		}
	}
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// discard closes and removes the trace of a run that never started.
func (m *memoryView) discard() {
	if m.traceFile != nil {
		m.traceFile.Close()
		os.Remove(m.traceFile.Name())
	}
}

// writeFileAtomic writes path through a temporary file in its directory.
func writeFileAtomic(path string, write func(*os.File) error) error {
	f, err := os.CreateTemp(filepath.Dir(path), ".gopir-*.tmp")
	if err != nil {
		return err
	}
	err = write(f)
	if err == nil {
		err = f.Chmod(0o644)
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(f.Name(), path)
	}
	if err != nil {
		os.Remove(f.Name())
	}
	return err
}

// trainView adapts a memoryView to training steps.
type trainView struct{ *memoryView }

func (v trainView) BeginStep(t *train.Trainer, step int) {
	v.rec.Phase = t.Phase
	v.begin(t.Allocator(), fmt.Sprintf("step %d", step+1))
}

func (v trainView) EndStep(t *train.Trainer, rec train.StepRecord, err error) {
	if err != nil {
		v.fail()
		return
	}
	v.end(timeline.StepStat{Step: rec.GlobalStep, Allocated: rec.MemAllocated, Reserved: rec.MemReserved, Peak: rec.PeakAllocated})
}
