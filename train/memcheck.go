package train

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/gopir/gopir/exec"
	"github.com/gopir/gopir/memory"
)

// LeakReport says how allocated memory moved between training steps.
type LeakReport struct {
	Model     string
	Steps     int
	Baseline  int64 // allocated bytes after the first step
	Allocated []int64
	// Leaked lists the buffers alive after the failing step that were not
	// alive after the first one, with the op and value that made them.
	Leaked  []memory.BlockInfo
	FailAt  int // 1-based step whose allocated bytes differed, 0 if none
	Message string
}

// OK reports whether allocated bytes never moved.
func (r *LeakReport) OK() bool { return r.FailAt == 0 }

func (r *LeakReport) Error() string { return r.Message }

// Memcheck trains cfg's model for steps steps with the executor's leak
// check on and compares the allocated bytes after every step (feeds and
// fetches released) with the first step's. The report names every buffer
// that survived when they differ.
func Memcheck(ctx context.Context, cfg Config, steps int, out io.Writer) (*LeakReport, error) {
	if steps < 2 {
		return nil, &SetupError{fmt.Errorf("--steps %d: memcheck needs at least 2 steps to compare", steps)}
	}
	cfg.Steps = steps
	cfg.CheckLeaks = true
	t, err := New(cfg)
	if err != nil {
		return nil, err
	}
	defer t.Close()
	rep := &LeakReport{Model: t.cfg.Model, Steps: steps}
	var base map[uint64]bool
	for i := 1; i <= steps; i++ {
		rec, err := t.Step(ctx)
		var le *exec.LeakError
		if errors.As(err, &le) {
			rep.FailAt, rep.Leaked = i, le.Buffers
			rep.Message = fmt.Sprintf("memcheck %s: step %d left buffers behind: %s", rep.Model, i, describeBlocks(le.Buffers))
			return rep, nil
		}
		if err != nil {
			return nil, err
		}
		rep.Allocated = append(rep.Allocated, rec.MemAllocated)
		if out != nil {
			fmt.Fprintf(out, "step %d: mem_allocated %d bytes\n", i, rec.MemAllocated)
		}
		if i == 1 {
			rep.Baseline = rec.MemAllocated
			base = map[uint64]bool{}
			for _, b := range t.alloc.Live() {
				base[b.ID] = true
			}
			continue
		}
		if rec.MemAllocated != rep.Baseline {
			rep.FailAt = i
			for _, b := range t.alloc.Live() {
				if !base[b.ID] {
					rep.Leaked = append(rep.Leaked, b)
				}
			}
			rep.Message = fmt.Sprintf("memcheck %s: allocated %d bytes after step %d, %d after step 1; surviving: %s",
				rep.Model, rec.MemAllocated, i, rep.Baseline, describeBlocks(rep.Leaked))
			return rep, nil
		}
	}
	rep.Message = fmt.Sprintf("memcheck %s: allocated %d bytes after each of %d steps", rep.Model, rep.Baseline, steps)
	return rep, nil
}

// describeBlocks names buffers by value, op and position, on one line.
func describeBlocks(bs []memory.BlockInfo) string {
	if len(bs) == 0 {
		return "no new buffers (the difference is in buffers that were already alive)"
	}
	var parts []string
	for i, b := range bs {
		if i == 8 {
			parts = append(parts, fmt.Sprintf("and %d more", len(bs)-i))
			break
		}
		t := b.Tag
		parts = append(parts, fmt.Sprintf("%s = %q at %s (%d bytes)", or(t.Value, "?"), or(t.Op, "?"), or(t.Pos, "?"), b.Size))
	}
	return strings.Join(parts, "; ")
}

func or(s, def string) string {
	if s == "" {
		return def
	}
	return s
}
