package kernels

import "slices"

// nmsBox is one box as NMS reads it: the corners of its
// extent along the two axes, each pair in ascending order.
type nmsBox[T float32 | float64] struct{ lo0, hi0, lo1, hi1 T }

// NMS selects boxes greedily for each batch item and class, as ONNX's
// NonMaxSuppression: boxes is [batches, spatial, 4] (two diagonal corners
// (a0, b0, a1, b1), in either order, or with center (c0, c1, w0, w1)
// centers and sizes), scores [batches, classes, spatial]. Among the boxes
// whose score is above scoreThreshold (when hasThreshold), highest score
// first (ties: lower index first), a box is selected unless it overlaps a
// box already selected with an intersection over union (computed in T)
// above iouThreshold, until maxOut boxes are. Boxes that do not overlap,
// or of which one has no area, never suppress each other. The result lists (batch, class, box) triples in that
// order.
func NMS[T float32 | float64](boxes, scores []T, batches, classes, spatial int, center bool, maxOut int64, iouThreshold, scoreThreshold T, hasThreshold bool) [][3]int64 {
	var out [][3]int64
	if maxOut <= 0 {
		return out
	}
	bs := make([]nmsBox[T], spatial)
	order := make([]int, 0, spatial)
	var picked []int
	for b := range batches {
		for i := range bs {
			v := boxes[(b*spatial+i)*4 : (b*spatial+i)*4+4]
			if center {
				bs[i] = nmsBox[T]{v[0] - v[2]/2, v[0] + v[2]/2, v[1] - v[3]/2, v[1] + v[3]/2}
			} else {
				bs[i] = nmsBox[T]{min(v[0], v[2]), max(v[0], v[2]), min(v[1], v[3]), max(v[1], v[3])}
			}
		}
		for c := range classes {
			sc := scores[(b*classes+c)*spatial : (b*classes+c+1)*spatial]
			order = order[:0]
			for i, s := range sc {
				if !hasThreshold || s > scoreThreshold {
					order = append(order, i)
				}
			}
			slices.SortStableFunc(order, func(i, j int) int {
				switch {
				case sc[i] > sc[j]:
					return -1
				case sc[i] < sc[j]:
					return 1
				}
				return 0
			})
			picked = picked[:0]
			for _, i := range order {
				if int64(len(picked)) == maxOut {
					break
				}
				keep := true
				for _, j := range picked {
					if nmsSuppresses(bs[i], bs[j], iouThreshold) {
						keep = false
						break
					}
				}
				if keep {
					picked = append(picked, i)
					out = append(out, [3]int64{int64(b), int64(c), int64(i)})
				}
			}
		}
	}
	return out
}

// nmsSuppresses reports whether boxes a and b overlap with an
// intersection over union above threshold.
func nmsSuppresses[T float32 | float64](a, b nmsBox[T], threshold T) bool {
	lo0, hi0 := max(a.lo0, b.lo0), min(a.hi0, b.hi0)
	lo1, hi1 := max(a.lo1, b.lo1), min(a.hi1, b.hi1)
	if hi0 <= lo0 || hi1 <= lo1 {
		return false
	}
	areaA := (a.hi0 - a.lo0) * (a.hi1 - a.lo1)
	areaB := (b.hi0 - b.lo0) * (b.hi1 - b.lo1)
	inter := (hi0 - lo0) * (hi1 - lo1)
	union := areaA + areaB - inter
	if areaA <= 0 || areaB <= 0 || union <= 0 {
		return false
	}
	return inter/union > threshold
}
