package train

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/schollz/progressbar/v3"
)

// Summary is what a finished run reports.
type Summary struct {
	Steps   int
	Last    StepRecord
	Metrics map[string]float64
}

// Run trains to the end, logging every cfg.LogEvery steps (and the last)
// to out, then evaluates. If ctx is cancelled it stops after the current
// step, writes the checkpoint if cfg.Save is set, and returns
// ErrInterrupted.
//
// In a data-parallel run only rank 0 logs, saves and evaluates (the
// Summary of the other ranks has no Metrics), and the ranks stop
// together: after each step they learn whether any of them was
// interrupted, and if so all return ErrInterrupted after the same step.
func (t *Trainer) Run(ctx context.Context, out io.Writer) (Summary, error) {
	var bar *progressbar.ProgressBar
	if t.cfg.Progress != nil && t.rank == 0 {
		bar = progressbar.NewOptions(t.cfg.total-t.step,
			progressbar.OptionSetWriter(t.cfg.Progress),
			progressbar.OptionSetDescription(t.cfg.Model),
			progressbar.OptionShowCount(),
			progressbar.OptionClearOnFinish(),
			progressbar.OptionThrottle(100_000_000))
	}
	if t.remat != nil && t.rank == 0 {
		if err := t.logRemat(out); err != nil {
			return Summary{}, err
		}
	}
	var sum Summary
	for !t.Done() {
		stop, err := t.stopTogether(ctx.Err() != nil)
		if err != nil {
			return sum, err
		}
		if stop {
			return sum, t.interrupted()
		}
		rec, err := t.Step(ctx)
		if err != nil {
			if ctx.Err() != nil && t.comm == nil {
				return sum, t.interrupted()
			}
			return sum, err
		}
		sum.Steps++
		sum.Last = rec
		if bar != nil {
			bar.Add(1)
		}
		if (rec.GlobalStep%t.cfg.LogEvery == 0 || t.Done()) && t.rank == 0 {
			if bar != nil {
				bar.Clear()
			}
			if err := t.log(out, rec); err != nil {
				return sum, err
			}
		}
	}
	if bar != nil {
		bar.Finish()
	}
	if t.rank != 0 {
		return sum, nil
	}
	if t.cfg.Save != "" {
		if err := t.saveOrRescue(t.cfg.Save); err != nil {
			return sum, err
		}
	}
	if t.evalBatch[1] > 0 {
		if err := t.logEvalBatch(out); err != nil {
			return sum, err
		}
	}
	metrics, err := t.Evaluate(ctx)
	if err != nil {
		if ctx.Err() != nil { // the checkpoint, if any, is written
			return sum, ErrInterrupted
		}
		return sum, err
	}
	sum.Metrics = metrics
	return sum, t.logEval(out, metrics)
}

func (t *Trainer) interrupted() error {
	if t.cfg.Save != "" && t.rank == 0 {
		if err := t.saveOrRescue(t.cfg.Save); err != nil {
			return fmt.Errorf("%w; saving the checkpoint failed: %v", ErrInterrupted, err)
		}
	}
	return ErrInterrupted
}

// log writes one step as the README shows it, or as JSON.
func (t *Trainer) log(out io.Writer, r StepRecord) error {
	if t.cfg.JSON {
		m := map[string]any{
			"epoch": r.Epoch, "step": r.Step, "loss": r.Loss,
			"mem_allocated": r.MemAllocated, "mem_reserved": r.MemReserved, "peak_allocated": r.PeakAllocated,
		}
		for k, v := range r.Extra {
			m[k] = v
		}
		line, err := json.Marshal(m)
		if err != nil {
			return err
		}
		_, err = fmt.Fprintln(out, string(line))
		return err
	}
	width := len(fmt.Sprint(t.spe))
	var extra strings.Builder
	keys := make([]string, 0, len(r.Extra))
	for k := range r.Extra {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		fmt.Fprintf(&extra, " %s: %g", k, r.Extra[k])
	}
	_, err := fmt.Fprintf(out, "Epoch: [%d] [%*d/%d] loss: %.4f mem_allocated: %d MB mem_reserved: %d MB%s\n",
		r.Epoch, width, r.Step, t.spe, r.Loss, r.MemAllocated>>20, r.MemReserved>>20, extra.String())
	return err
}

// logRemat writes the line that says the run was rematerialized: the
// natural peak, the budget, the planned peak and the work recomputed.
func (t *Trainer) logRemat(out io.Writer) error {
	res := t.remat
	if t.cfg.JSON {
		line, err := json.Marshal(map[string]any{"remat": map[string]any{
			"natural_peak": res.Natural, "budget": t.cfg.budget(), "planned_peak": res.Peak,
			"recomputed_flops": res.RecomputedFlops, "step_flops": res.StepFlops,
			"recomputed_ops": len(res.Recomputed), "checkpointed_loops": len(res.Checkpointed), "batch_splits": len(res.Splits),
		}})
		if err != nil {
			return err
		}
		_, err = fmt.Fprintln(out, string(line))
		return err
	}
	_, err := fmt.Fprintln(out, rematLine(res, t.cfg.budget()))
	return err
}

// logEvalBatch writes the line that says the memory limit shrank the
// evaluation batch.
func (t *Trainer) logEvalBatch(out io.Writer) error {
	def, n := t.evalBatch[0], t.evalBatch[1]
	if t.cfg.JSON {
		line, err := json.Marshal(map[string]any{"eval_batch": map[string]any{"default": def, "batch": n, "mem_limit": t.cfg.MemLimit}})
		if err != nil {
			return err
		}
		_, err = fmt.Fprintln(out, string(line))
		return err
	}
	_, err := fmt.Fprintf(out, "eval: batch %d instead of %d, to fit the memory limit of %s\n", n, def, mb(t.cfg.MemLimit))
	return err
}

func (t *Trainer) logEval(out io.Writer, metrics map[string]float64) error {
	if t.cfg.JSON {
		line, err := json.Marshal(map[string]any{"eval": metrics})
		if err != nil {
			return err
		}
		_, err = fmt.Fprintln(out, string(line))
		return err
	}
	keys := make([]string, 0, len(metrics))
	for k := range metrics {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var sb strings.Builder
	sb.WriteString("Eval:")
	for _, k := range keys {
		fmt.Fprintf(&sb, " %s: %.4f", k, metrics[k])
	}
	_, err := fmt.Fprintln(out, sb.String())
	return err
}
