package main

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/gopir/gopir/exec"
	"github.com/gopir/gopir/remat"
)

// printRemat prints what gopir train --mem-limit would do to fit a step
// in limit: nothing (the step fits), or the recomputation and the plan of
// the rematerialized step.
func printRemat(out io.Writer, res *remat.Result, p *exec.Plan, limit int64, asJSON bool) error {
	if asJSON {
		type rec struct {
			Op        string `json:"op"`
			Values    string `json:"values"`
			Pos       string `json:"pos"`
			Flops     int64  `json:"flops"`
			Before    string `json:"before"`
			BeforePos string `json:"before_pos"`
			InIf      bool   `json:"in_if,omitempty"`
		}
		type loop struct {
			Pos     string   `json:"pos"`
			Every   int      `json:"every"`
			Carried []string `json:"carried"`
			Flops   int64    `json:"flops"`
		}
		m := map[string]any{"budget": limit, "planned_peak": p.Peak}
		if res != nil {
			var recs []rec
			for _, r := range res.Recomputed {
				recs = append(recs, rec{r.Op, r.Values, shortPos(r.Pos), r.Flops, r.Before, shortPos(r.BeforePos), r.InIf})
			}
			var loops []loop
			for _, c := range res.Checkpointed {
				loops = append(loops, loop{shortPos(c.Pos), c.Every, c.Carried, c.Flops})
			}
			m["natural_peak"], m["step_flops"], m["recomputed_flops"] = res.Natural, res.StepFlops, res.RecomputedFlops
			type split struct {
				Cut     string   `json:"cut"`
				Op      string   `json:"op"`
				Pos     string   `json:"pos"`
				Pieces  int      `json:"pieces"`
				Samples int      `json:"samples"`
				Fwd     int      `json:"forward_ops"`
				Bwd     int      `json:"backward_ops"`
				Flops   int64    `json:"flops"`
				Kept    []string `json:"kept,omitempty"`
				FwdPass int      `json:"forward_passes"`
				BwdPass int      `json:"backward_passes"`
			}
			var splits []split
			for _, s := range res.Splits {
				splits = append(splits, split{s.Cut, s.Op, shortPos(s.Pos), s.Pieces, s.Samples, s.ForwardOps, s.BackOps, s.Flops, s.Kept, s.ForwardPasses, s.BackPasses})
			}
			m["recomputed"], m["checkpointed"], m["splits"] = recs, loops, splits
			m["early_updates"], m["early_gradients"] = res.EarlyUpdates, res.EarlyGradients
		}
		line, err := json.Marshal(map[string]any{"remat": m})
		if err != nil {
			return err
		}
		_, err = fmt.Fprintln(out, string(line))
		return err
	}
	if res == nil {
		fmt.Fprintf(out, "the step fits in %s as it is: nothing to recompute\n", human(limit))
		return printPlan(out, p, false)
	}
	fmt.Fprintf(out, "natural peak: %s (%d bytes), over the budget of %s\n", human(res.Natural), res.Natural, human(limit))
	fmt.Fprintf(out, "rematerialized: %s (%d bytes), recomputing %.3g MFLOP, %.1f%% of the step's %.3g MFLOP\n",
		human(res.Peak), res.Peak, float64(res.RecomputedFlops)/1e6, 100*float64(res.RecomputedFlops)/float64(max(res.StepFlops, 1)), float64(res.StepFlops)/1e6)
	if len(res.Recomputed) > 0 {
		fmt.Fprintln(out, "recomputed in the backward pass:")
		for _, r := range res.Recomputed {
			where := "before"
			if r.InIf {
				where = "inside"
			}
			fmt.Fprintf(out, "  %-10s %-12s %-24s %8.3g MFLOP  %s %s (%s)\n", r.Values, r.Op, shortPos(r.Pos), float64(r.Flops)/1e6, where, r.Before, shortPos(r.BeforePos))
		}
	}
	for _, c := range res.Checkpointed {
		fmt.Fprintf(out, "loop %s: keeps every %s carried values (%v) instead of its tapes; the backward recomputes its trips from them (%.3g MFLOP)\n",
			shortPos(c.Pos), ordinal(c.Every), c.Carried, float64(c.Flops)/1e6)
	}
	for _, s := range res.Splits {
		kept := "only the cut"
		if len(s.Kept) > 0 {
			kept = fmt.Sprintf("the cut and the pieces of %s", strings.Join(s.Kept, ", "))
		}
		fmt.Fprintf(out, "split over the batch at %s (%s %s): %d pieces of %d samples; %d forward ops run piece by piece%s, keeping %s, then %d backward ops%s, each piece recomputing the forward values it reads (%.3g MFLOP)\n",
			s.Cut, s.Op, shortPos(s.Pos), s.Pieces, s.Samples, s.ForwardOps, passes(s.ForwardPasses), kept, s.BackOps, passes(s.BackPasses), float64(s.Flops)/1e6)
	}
	if res.EarlyUpdates > 0 {
		fmt.Fprintf(out, "%d updates run early, each right after the last op it must follow (what makes its gradient, the last read of its parameter)", res.EarlyUpdates)
		if res.EarlyGradients > 0 {
			fmt.Fprintf(out, ", %d ops making what only an update reads moved up with them", res.EarlyGradients)
		}
		fmt.Fprintln(out)
	}
	return printPlan(out, p, false)
}

// passes says in how many passes over the pieces a split runs, when
// batch norms (whose statistics are sums over the batch) make it more
// than one.
func passes(n int) string {
	if n <= 1 {
		return ""
	}
	return fmt.Sprintf(" in %d passes (batch norms' sums over the batch first)", n)
}

// ordinal says "trip's" for 1 and "2nd trip's", "11th trip's", ...
// otherwise.
func ordinal(k int) string {
	if k == 1 {
		return "trip's"
	}
	suffix := "th"
	if k%100 < 11 || k%100 > 13 {
		switch k % 10 {
		case 1:
			suffix = "st"
		case 2:
			suffix = "nd"
		case 3:
			suffix = "rd"
		}
	}
	return fmt.Sprintf("%d%s trip's", k, suffix)
}
