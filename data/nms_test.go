package data

import (
	"slices"
	"testing"
)

func TestNMS(t *testing.T) {
	box := func(x float32) [4]float32 { return [4]float32{x, 0, x + 10, 10} }
	p := func(class int, score, x float32) Prediction {
		return Prediction{Class: class, Score: score, Box: box(x)}
	}
	for _, tc := range []struct {
		name          string
		cand          []Prediction
		pre, keepTopK int
		want          []Prediction
	}{
		{"overlap of one class suppressed", []Prediction{p(0, 0.5, 1), p(0, 0.9, 0)}, 0, 10, []Prediction{p(0, 0.9, 0)}},
		{"other class kept", []Prediction{p(1, 0.5, 1), p(0, 0.9, 0)}, 0, 10, []Prediction{p(0, 0.9, 0), p(1, 0.5, 1)}},
		{"far box kept", []Prediction{p(0, 0.5, 50), p(0, 0.9, 0)}, 0, 10, []Prediction{p(0, 0.9, 0), p(0, 0.5, 50)}},
		{"keepTopK", []Prediction{p(0, 0.5, 50), p(0, 0.9, 0), p(0, 0.7, 100)}, 0, 2, []Prediction{p(0, 0.9, 0), p(0, 0.7, 100)}},
		{"preTopK cuts before suppression", []Prediction{p(0, 0.5, 50), p(0, 0.9, 0), p(0, 0.8, 1)}, 2, 10, []Prediction{p(0, 0.9, 0)}},
		{"ties keep their order", []Prediction{p(0, 0.5, 50), p(1, 0.5, 0)}, 0, 10, []Prediction{p(0, 0.5, 50), p(1, 0.5, 0)}},
		{"empty", nil, 5, 5, nil},
	} {
		if got := NMS(slices.Clone(tc.cand), 0.5, tc.pre, tc.keepTopK); !slices.Equal(got, tc.want) {
			t.Errorf("%s: got %v, want %v", tc.name, got, tc.want)
		}
	}
}
