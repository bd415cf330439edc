package ppyoloe

import (
	"github.com/gopir/gopir/ir"
	"github.com/gopir/gopir/ops"
)

// Task-aligned assigner settings of the design. The alignment metric is
// score^α · IoU^β with α = 1 and β = 6, computed as score·((IoU²·IoU²)·IoU²)
// (the twin does the same products).
const (
	assignTopK = 13   // candidate anchors per ground-truth box
	assignEps  = 1e-9 // IoU and inside-the-box tolerance, metric normalisation
)

// targets are the assigner's results for every anchor.
type targets struct {
	labels *ir.Value // i64 [B,L]: the assigned class, or classes (background)
	boxes  *ir.Value // [B,L,4]: the assigned box in pixels (an arbitrary one where none)
	scores *ir.Value // [B,L,C]: the soft target, nonzero only at the assigned class
}

// assign is the task-aligned assigner, on predictions that carry no
// gradient: scores [B,L,C] (probabilities), boxes [B,L,4] in pixels,
// anchor points [L,2] in pixels, ground truth gtBoxes [B,n,4] and
// gtClasses i64 [B,n] (−1 marks padding).
//
// For each real box, the anchors whose point lies inside it are ranked by
// the alignment metric score(class)·IoU⁶ and the top assignTopK become its
// candidates (equal metrics: the lower anchor first). An anchor that is a
// candidate of several boxes goes to the box it overlaps most (the first
// such box on a tie). An assigned anchor's soft score is its metric divided
// by the best metric among the box's anchors, times the best IoU among
// them.
func assign(b *ir.Builder, scores, boxes, points, gtBoxes, gtClasses *ir.Value, classes int) targets {
	dt := scores.Type().DType
	l := scores.Type().Dims[1]
	n := gtBoxes.Type().Dims[1]
	zero := ops.Full(b, dt, 0)
	valid := ops.Unsqueeze(b, ops.GreaterEqual(b, gtClasses, ops.Full(b, ir.I64, 0)), 2) // [B,n,1]
	validF := ops.Cast(b, valid, dt)
	labels := ops.Maximum(b, gtClasses, ops.Full(b, ir.I64, 0)) // padding reads class 0; masked below

	ious := pairwiseIoU(b, gtBoxes, boxes) // [B,n,L]
	cidx := ops.Expand(b, ops.Unsqueeze(b, labels, 2), -1, n, l)
	clsScores := ops.TakeAlongAxis(b, ops.Transpose(b, scores, 0, 2, 1), cidx, 1) // [B,n,L]
	i2 := ops.Multiply(b, ious, ious)
	metrics := ops.Multiply(b, clsScores, ops.Multiply(b, ops.Multiply(b, i2, i2), i2))
	inside := ops.Cast(b, pointsInside(b, points, gtBoxes), dt) // [B,n,L]

	// Top-k candidates per box. A padding box's candidates are all anchor
	// 0, counted k times, and the count > 1 rule drops them.
	_, idx := ops.TopK(b, ops.Multiply(b, metrics, inside), assignTopK, -1, true) // [B,n,k]
	idx = ops.Where(b, valid, idx, ops.Full(b, ir.I64, 0))
	count := ops.ScatterAddAlongAxis(b, ops.FullLike(b, idx, 1, dt), idx, nil, 2, l) // [B,n,L]
	inTopK := ops.Where(b, ops.GreaterThan(b, count, ops.Full(b, dt, 1)), zero, count)
	pos := ops.Multiply(b, ops.Multiply(b, inTopK, inside), validF)

	// An anchor claimed by several boxes goes to the one of highest IoU.
	multi := ops.GreaterThan(b, ops.ReduceSum(b, pos, []int{1}, true), ops.Full(b, dt, 1)) // [B,1,L]
	best := ops.Transpose(b, ops.OneHot(b, ops.Argmax(b, ious, 1, false), n, dt), 0, 2, 1)
	pos = ops.Where(b, multi, best, pos)
	assigned := ops.GreaterThan(b, ops.ReduceSum(b, pos, []int{1}, false), zero) // [B,L]

	gtIndex := ops.Argmax(b, pos, 1, false) // [B,L]
	aLabels := ops.TakeAlongAxis(b, labels, gtIndex, 1)
	aLabels = ops.Where(b, assigned, aLabels, ops.Full(b, ir.I64, float64(classes)))
	bidx := ops.Expand(b, ops.Unsqueeze(b, gtIndex, 2), -1, l, 4)
	aBoxes := ops.TakeAlongAxis(b, gtBoxes, bidx, 1) // [B,L,4]

	// soft scores: each box's metrics rescaled so that its best anchor
	// scores its best IoU
	metrics = ops.Multiply(b, metrics, pos)
	maxMetric := ops.ReduceMax(b, metrics, []int{2}, true)                  // [B,n,1]
	maxIoU := ops.ReduceMax(b, ops.Multiply(b, ious, pos), []int{2}, true)  // [B,n,1]
	norm := ops.Divide(b, metrics, ops.Scale(b, maxMetric, 1, assignEps))   // [B,n,L]
	norm = ops.ReduceMax(b, ops.Multiply(b, norm, maxIoU), []int{1}, false) // [B,L]
	onehot := ops.Slice(b, ops.OneHot(b, aLabels, classes+1, dt), []int{2}, []int{0}, []int{classes})
	aScores := ops.Multiply(b, onehot, ops.Unsqueeze(b, norm, 2))
	return targets{labels: aLabels, boxes: aBoxes, scores: aScores}
}

// pairwiseIoU is the IoU of every box of a [B,n,4] with every box of p
// [B,L,4]: [B,n,L]; assignEps keeps the union positive.
func pairwiseIoU(b *ir.Builder, g, p *ir.Value) *ir.Value {
	g1, g2 := splitPairs(b, ops.Unsqueeze(b, g, 2)) // [B,n,1,2]
	p1, p2 := splitPairs(b, ops.Unsqueeze(b, p, 1)) // [B,1,L,2]
	zero := ops.Full(b, g.Type().DType, 0)
	wh := ops.Maximum(b, ops.Subtract(b, ops.Minimum(b, g2, p2), ops.Maximum(b, g1, p1)), zero)
	overlap := prodPair(b, wh)
	ag := prodPair(b, ops.Maximum(b, ops.Subtract(b, g2, g1), zero))
	ap := prodPair(b, ops.Maximum(b, ops.Subtract(b, p2, p1), zero))
	union := ops.Scale(b, ops.Subtract(b, ops.Add(b, ag, ap), overlap), 1, assignEps)
	return ops.Divide(b, overlap, union)
}

// prodPair multiplies the two entries of the last dim [..., 2] → [...].
func prodPair(b *ir.Builder, x *ir.Value) *ir.Value {
	s := ops.Split(b, x, -1, 1, 1)
	return ops.Squeeze(b, ops.Multiply(b, s[0], s[1]), -1)
}

// pointsInside says, for every box of gt [B,n,4] and point of points
// [L,2], whether the point is inside the box by more than assignEps on
// every side: i1 [B,n,L].
func pointsInside(b *ir.Builder, points, gt *ir.Value) *ir.Value {
	xy := ops.Split(b, ops.Transpose(b, points, 1, 0), 0, 1, 1) // 2 × [1,L]
	side := ops.Split(b, gt, -1, 1, 1, 1, 1)                    // 4 × [B,n,1]
	lt := ops.Minimum(b, ops.Subtract(b, xy[0], side[0]), ops.Subtract(b, xy[1], side[1]))
	rb := ops.Minimum(b, ops.Subtract(b, side[2], xy[0]), ops.Subtract(b, side[3], xy[1]))
	return ops.GreaterThan(b, ops.Minimum(b, lt, rb), ops.Full(b, points.Type().DType, assignEps))
}
