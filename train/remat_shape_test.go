package train_test

import (
	"testing"

	"github.com/gopir/gopir/train"
)

// lenet's split takes the shape that costs least in modelled time, not
// in FLOPs alone: at half its natural peak it keeps the second conv
// block's output, piece by piece, rather than recompute both blocks in
// wider pieces (32% of the step's FLOPs before, in 8 pieces of 8); at 70%
// it runs the first block in 4 pieces of 16 rather than keep its pool's
// output in 16 pieces of 4 for 3% fewer FLOPs. Either runs bit for bit
// (TestRematTrainsBitForBit).
func TestRematLenetSplitShape(t *testing.T) {
	cfg := train.Config{Model: "lenet", Seed: 5, Threads: 2}
	floor := floorOf(t, cfg)
	for _, c := range []struct {
		pct          int64
		maxRecompute float64 // of the step's FLOPs
		maxPieces    int
		kept         bool
	}{
		{50, 0.15, 16, true},
		{70, 0.15, 4, false},
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
