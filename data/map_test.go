package data

import (
	"errors"
	"math"
	"testing"
)

func box(x0, y0, x1, y1 float32) [4]float32 { return [4]float32{x0, y0, x1, y1} }

func near(a, b float64) bool { return math.Abs(a-b) < 1e-9 }

func TestIoU(t *testing.T) {
	for _, c := range []struct {
		a, b [4]float32
		want float64
	}{
		{box(0, 0, 10, 10), box(0, 0, 10, 10), 1},
		{box(0, 0, 10, 10), box(5, 0, 15, 10), 50.0 / 150},
		{box(0, 0, 10, 10), box(10, 0, 20, 10), 0}, // touching
		{box(0, 0, 10, 10), box(2, 2, 4, 4), 4.0 / 100},
		{box(0, 0, 0, 0), box(0, 0, 0, 0), 0},
		{box(5, 5, 0, 0), box(0, 0, 10, 10), 0}, // inverted box
	} {
		if got := IoU(c.a, c.b); !near(got, c.want) {
			t.Errorf("IoU(%v, %v) = %v, want %v", c.a, c.b, got, c.want)
		}
	}
}

func TestMAP50(t *testing.T) {
	gts := []GTBox{
		{Image: 0, Class: 0, Box: box(0, 0, 10, 10)},
		{Image: 0, Class: 1, Box: box(20, 20, 30, 30)},
		{Image: 1, Class: 0, Box: box(5, 5, 15, 15)},
		{Image: 2, Class: 2, Box: box(0, 0, 8, 8)},
	}
	perfect := []Prediction{
		{Image: 0, Class: 0, Score: 0.9, Box: box(0, 0, 10, 10)},
		{Image: 0, Class: 1, Score: 0.8, Box: box(20, 20, 30, 30)},
		{Image: 1, Class: 0, Score: 0.7, Box: box(5, 5, 15, 15)},
		{Image: 2, Class: 2, Score: 0.6, Box: box(0, 0, 8, 8)},
	}
	for _, c := range []struct {
		name  string
		preds []Prediction
		gts   []GTBox
		want  float64
	}{
		{"perfect", perfect, gts, 1},
		{"perfect, slightly off boxes", []Prediction{
			{Image: 0, Class: 0, Score: 0.9, Box: box(1, 0, 11, 10)}, // IoU 90/110
			{Image: 0, Class: 1, Score: 0.8, Box: box(20, 20, 30, 29)},
			{Image: 1, Class: 0, Score: 0.7, Box: box(5, 5, 15, 15)},
			{Image: 2, Class: 2, Score: 0.6, Box: box(0, 0, 8, 8)},
		}, gts, 1},
		{"no predictions", nil, gts, 0},
		{"all wrong", []Prediction{
			{Image: 0, Class: 1, Score: 0.9, Box: box(0, 0, 10, 10)},   // wrong class
			{Image: 1, Class: 0, Score: 0.9, Box: box(0, 0, 10, 10)},   // wrong image
			{Image: 0, Class: 0, Score: 0.9, Box: box(5, 0, 15, 10)},   // IoU 1/3
			{Image: 2, Class: 2, Score: 0.9, Box: box(20, 20, 28, 28)}, // elsewhere
		}, gts, 0},
		// Class 0 (2 boxes): ranked TP, FP, TP. Precision 1, 1/2, 2/3 at
		// recall 1/2, 1/2, 1; interpolated 1 up to recall 1/2 and 2/3 up
		// to 1: AP = 1/2·1 + 1/2·2/3 = 5/6. Class 1 (1 box) is found
		// behind one false positive: precision 0, 1/2 at recall 0, 1:
		// AP = 1/2. Class 2 (1 box) is missed: AP = 0. Class 3 has no
		// ground truth and does not count. mAP = (5/6 + 1/2 + 0)/3 = 4/9.
		{"partial", []Prediction{
			{Image: 0, Class: 0, Score: 0.9, Box: box(0, 0, 10, 10)},
			{Image: 1, Class: 0, Score: 0.8, Box: box(30, 30, 40, 40)},
			{Image: 1, Class: 0, Score: 0.7, Box: box(5, 5, 15, 15)},
			{Image: 0, Class: 1, Score: 0.95, Box: box(0, 0, 5, 5)},
			{Image: 0, Class: 1, Score: 0.5, Box: box(20, 20, 30, 30)},
			{Image: 2, Class: 3, Score: 0.99, Box: box(0, 0, 8, 8)},
		}, gts, 4.0 / 9},
		// A duplicate of a found box is a false positive: class 0 ranks
		// TP, FP(duplicate), TP: AP 5/6 as above; other classes perfect.
		{"duplicates", append([]Prediction{
			{Image: 0, Class: 0, Score: 0.85, Box: box(0, 0, 10, 10)},
		}, perfect...), gts, (5.0/6 + 1 + 1) / 3},
		// A duplicate ranked below every true positive costs nothing:
		// recall is already complete.
		{"low duplicate", append([]Prediction{
			{Image: 0, Class: 0, Score: 0.1, Box: box(0, 0, 10, 10)},
		}, perfect...), gts, 1},
		// Predictions on an image with no objects are false positives.
		{"empty image", append([]Prediction{
			{Image: 7, Class: 2, Score: 0.99, Box: box(0, 0, 8, 8)},
		}, perfect...), gts, (1 + 1 + 0.5) / 3},
		{"no ground truth", perfect, nil, 0},
		{"nothing", nil, nil, 0},
	} {
		if got := MAP50(c.preds, c.gts); !near(got, c.want) {
			t.Errorf("%s: mAP %v, want %v", c.name, got, c.want)
		}
	}
}

// TestMAP50Matching: a prediction matches its highest-IoU box; when that
// box is taken it is a false positive even if another box would do.
func TestMAP50Matching(t *testing.T) {
	gts := []GTBox{
		{Class: 0, Box: box(0, 0, 10, 10)},
		{Class: 0, Box: box(3, 0, 13, 10)},
	}
	preds := []Prediction{
		{Class: 0, Score: 0.9, Box: box(0, 0, 10, 10)}, // takes box 0
		{Class: 0, Score: 0.8, Box: box(1, 0, 11, 10)}, // best is box 0 again (90/110 vs 80/120): FP
		{Class: 0, Score: 0.7, Box: box(3, 0, 13, 10)}, // box 1
	}
	// TP, FP, TP over 2 boxes: 5/6.
	if got := MAP50(preds, gts); !near(got, 5.0/6) {
		t.Errorf("mAP %v, want 5/6", got)
	}
	// The input order of equal scores decides, and the input is not modified.
	tied := []Prediction{
		{Class: 0, Score: 0.5, Box: box(50, 50, 60, 60)},
		{Class: 0, Score: 0.5, Box: box(0, 0, 10, 10)},
	}
	// FP then TP over 2 boxes: precision 1/2 at recall 1/2: AP 1/4.
	if got := MAP50(tied, gts); !near(got, 0.25) {
		t.Errorf("tied: %v, want 1/4", got)
	}
	if tied[0].Box[0] != 50 {
		t.Error("MAP50 reordered its input")
	}
}

// TestMAP50Dataset: the ground truth of the synthetic set, predicted back
// exactly, scores 1, and a set with empty images included still does.
func TestMAP50Dataset(t *testing.T) {
	d := NewDetection(DetectionConfig{N: 64, BatchSize: 8, Seed: 4})
	gts := d.GroundTruth(identity(64))
	var preds []Prediction
	for _, g := range gts {
		preds = append(preds, Prediction{Image: g.Image, Class: g.Class, Score: 1, Box: g.Box})
	}
	if got := MAP50(preds, gts); !near(got, 1) {
		t.Errorf("exact predictions: %v", got)
	}
	if got := MAP50(preds[:len(preds)/2], gts); got <= 0.2 || got >= 0.8 {
		t.Errorf("half the predictions: %v", got)
	}
}

// TestSetMAP50: every image is predicted once, in batches of the given
// size, and predictions that repeat the ground truth score 1; dropping the
// last batch's detections scores less; an error stops the loop.
func TestSetMAP50(t *testing.T) {
	d := NewDetection(DetectionConfig{N: 50, Seed: 3})
	for _, batch := range []int{1, 7, 50, 64} {
		seen := 0
		truth := func(idx []int) ([]Prediction, error) {
			if len(idx) == 0 || idx[0] != seen || len(idx) > batch {
				t.Fatalf("batch %d: got images %v after %d", batch, idx, seen)
			}
			seen += len(idx)
			var out []Prediction
			for _, g := range d.GroundTruth(idx) {
				out = append(out, Prediction{Image: g.Image, Class: g.Class, Score: 1, Box: g.Box})
			}
			return out, nil
		}
		m, err := SetMAP50(d, batch, truth)
		if err != nil || m != 1 || seen != d.Len() {
			t.Fatalf("batch %d: mAP %v, %v, %d of %d images", batch, m, err, seen, d.Len())
		}
	}
	partial, err := SetMAP50(d, 10, func(idx []int) ([]Prediction, error) {
		if idx[0] >= 40 {
			return nil, nil
		}
		var out []Prediction
		for _, g := range d.GroundTruth(idx) {
			out = append(out, Prediction{Image: g.Image, Class: g.Class, Score: 1, Box: g.Box})
		}
		return out, nil
	})
	if err != nil || !(partial < 1) {
		t.Errorf("without the last batch's detections: mAP %v, %v", partial, err)
	}
	want := errors.New("boom")
	if _, err := SetMAP50(d, 10, func([]int) ([]Prediction, error) { return nil, want }); err != want {
		t.Errorf("err = %v, want the predictor's", err)
	}
}
