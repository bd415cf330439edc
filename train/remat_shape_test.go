package train_test

import (
	"testing"

	"github.com/gopir/gopir/train"
)

// lenet's split takes the shape that costs least in modelled time (FLOPs
// and ops run), over its cuts, widths and kept values: at half its
// natural peak it keeps the second conv block's output, piece by piece,
// so that the backward pieces recompute the first block alone, in at most
// 8 pieces (it recomputed both blocks, 32% of the step's FLOPs, in 8
// pieces of 8 before); at 70% likewise in at most 4. Either runs bit for
// bit (TestRematTrainsBitForBit).
func TestRematLenetSplitShape(t *testing.T) {
	cfg := train.Config{Model: "lenet", Seed: 5, Threads: 2}
	floor := floorOf(t, cfg)
	for _, c := range []struct {
		pct          int64
		maxRecompute float64 // of the step's FLOPs
		maxPieces    int
		kept         bool
	}{
		{50, 0.15, 8, true},
		{70, 0.15, 4, true},
	} {
		cfg.PeakBudget = floor.Natural * c.pct / 100
		tr, err := train.New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		res := tr.Remat()
		tr.Close()
		if res == nil || len(res.Splits) != 1 {
			t.Fatalf("%d%%: %+v, want one split over the batch", c.pct, res)
		}
		s := res.Splits[0]
		frac := float64(res.RecomputedFlops) / float64(res.StepFlops)
		t.Logf("%d%%: %d pieces of %d, kept %v, %.1f%% of the step's FLOPs recomputed, peak %d of %d", c.pct, s.Pieces, s.Samples, s.Kept, 100*frac, res.Peak, cfg.PeakBudget)
		if frac > c.maxRecompute || s.Pieces > c.maxPieces || (len(s.Kept) > 0) != c.kept {
			t.Errorf("%d%%: %d pieces of %d samples keeping %v, recomputing %.1f%% of the step: want at most %.0f%% in at most %d pieces, keeping something %v", c.pct, s.Pieces, s.Samples, s.Kept, 100*frac, 100*c.maxRecompute, c.maxPieces, c.kept)
		}
	}
}
