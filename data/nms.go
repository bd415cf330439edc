package data

import (
	"cmp"
	"slices"
)

// NMS is per-class non-maximum suppression: cand sorted by descending
// score (stable, so ties keep their order), cut to its best preTopK when
// preTopK > 0, then each prediction kept unless one already kept of its
// class overlaps it by IoU above iou, until keepTopK are kept. cand is
// sorted in place.
func NMS(cand []Prediction, iou float64, preTopK, keepTopK int) []Prediction {
	slices.SortStableFunc(cand, func(a, b Prediction) int { return cmp.Compare(b.Score, a.Score) })
	if preTopK > 0 {
		cand = cand[:min(len(cand), preTopK)]
	}
	var keep []Prediction
	for _, p := range cand {
		suppressed := slices.ContainsFunc(keep, func(q Prediction) bool {
			return q.Class == p.Class && IoU(p.Box, q.Box) > iou
		})
		if !suppressed {
			keep = append(keep, p)
			if len(keep) == keepTopK {
				break
			}
		}
	}
	return keep
}
