package data

import (
	"cmp"
	"slices"
)

// Prediction is one detected box: the image it belongs to, its class, its
// confidence and (x0, y0, x1, y1) in pixels.
type Prediction struct {
	Image, Class int
	Score        float32
	Box          [4]float32
}

// GTBox is one ground-truth box, numbered like Prediction.
type GTBox struct {
	Image, Class int
	Box          [4]float32
}

// IoU is the intersection over union of two (x0, y0, x1, y1) boxes, with
// areas (x1-x0)·(y1-y0) (no +1 pixel convention); 0 when the union is empty.
func IoU(a, b [4]float32) float64 {
	iw := float64(min(a[2], b[2]) - max(a[0], b[0]))
	ih := float64(min(a[3], b[3]) - max(a[1], b[1]))
	if iw <= 0 || ih <= 0 {
		return 0
	}
	inter := iw * ih
	area := func(x [4]float32) float64 {
		return max(0, float64(x[2]-x[0])) * max(0, float64(x[3]-x[1]))
	}
	union := area(a) + area(b) - inter
	if union <= 0 {
		return 0
	}
	return inter / union
}

// MAP50 is the mean average precision at IoU 0.5, VOC style:
//
//   - per class, predictions are taken by decreasing score (ties in input
//     order); each is matched to the ground-truth box of the same image and
//     class with the highest IoU; it is a true positive when that IoU is
//     >= 0.5 and the box is not matched yet, otherwise a false positive (so
//     a duplicate of a found box counts against precision);
//   - AP is the area under the precision–recall curve with all-point
//     interpolation (precision made non-increasing from the right, summed
//     over every recall step);
//   - the mean is over the classes that have at least one ground-truth box;
//     predictions of other classes do not count. With no ground truth at
//     all the result is 0.
func MAP50(preds []Prediction, gts []GTBox) float64 {
	type key struct{ image, class int }
	gtBy := map[key][]int{} // indices into gts
	numGT := map[int]int{}
	for i, g := range gts {
		k := key{g.Image, g.Class}
		gtBy[k] = append(gtBy[k], i)
		numGT[g.Class]++
	}
	if len(numGT) == 0 {
		return 0
	}
	byClass := map[int][]Prediction{}
	for _, p := range preds {
		if numGT[p.Class] > 0 {
			byClass[p.Class] = append(byClass[p.Class], p)
		}
	}
	classes := make([]int, 0, len(numGT))
	for c := range numGT {
		classes = append(classes, c)
	}
	slices.Sort(classes) // a fixed summation order: the same result every run
	var sum float64
	for _, class := range classes {
		ngt := numGT[class]
		ps := byClass[class]
		slices.SortStableFunc(ps, func(a, b Prediction) int { return cmp.Compare(b.Score, a.Score) })
		matched := make([]bool, len(gts))
		tp := make([]bool, len(ps))
		for j, p := range ps {
			best, bestIoU := -1, 0.0
			for _, g := range gtBy[key{p.Image, class}] {
				if iou := IoU(p.Box, gts[g].Box); iou > bestIoU {
					best, bestIoU = g, iou
				}
			}
			if best >= 0 && bestIoU >= 0.5 && !matched[best] {
				matched[best], tp[j] = true, true
			}
		}
		sum += averagePrecision(tp, ngt)
	}
	return sum / float64(len(numGT))
}

// averagePrecision is the all-point interpolated AP of a ranked list of
// hits (true positives) against ngt ground-truth boxes.
func averagePrecision(tp []bool, ngt int) float64 {
	n := len(tp)
	recall := make([]float64, n)
	prec := make([]float64, n)
	hits := 0
	for i, t := range tp {
		if t {
			hits++
		}
		recall[i] = float64(hits) / float64(ngt)
		prec[i] = float64(hits) / float64(i+1)
	}
	for i := n - 2; i >= 0; i-- {
		prec[i] = max(prec[i], prec[i+1])
	}
	ap, prevRecall := 0.0, 0.0
	for i := range n {
		ap += (recall[i] - prevRecall) * prec[i]
		prevRecall = recall[i]
	}
	return ap
}

// SetMAP50 is the mAP@0.5 of a model over the whole of set: predict is
// called on the image indices of consecutive batches of at most batch
// images, in order, and its detections are scored against their ground
// truth by MAP50.
func SetMAP50(set *Detection, batch int, predict func(idx []int) ([]Prediction, error)) (float64, error) {
	var preds []Prediction
	var all []int
	for start := 0; start < set.Len(); start += batch {
		idx := make([]int, 0, batch)
		for i := start; i < min(start+batch, set.Len()); i++ {
			idx = append(idx, i)
		}
		all = append(all, idx...)
		p, err := predict(idx)
		if err != nil {
			return 0, err
		}
		preds = append(preds, p...)
	}
	return MAP50(preds, set.GroundTruth(all)), nil
}
