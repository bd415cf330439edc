package ppyoloe

import (
	"github.com/gopir/gopir/ir"
	"github.com/gopir/gopir/ops"
)

// Loss settings of the design.
const (
	vflAlpha = 0.75 // varifocal weight of negatives: α·p^γ with γ = 2 (written p·p)
	wCls     = 1.0
	wIoU     = 2.5
	wDFL     = 0.5
	giouEps  = 1e-10
	// dflMax keeps a target distance below the last bin so that its two
	// neighbouring bins exist.
	dflMax = regMax - 0.01
)

// lossParts are the training loss and what is logged with it.
type lossParts struct {
	total, cls, iou, dfl, l1, positives *ir.Value
}

// lossInputs are the network's outputs and the anchors, computed before the
// loss's branches.
type lossInputs struct {
	cls, reg  *ir.Value // logits [B,L,C], distributions [B,L,4·bins]
	prob      *ir.Value // sigmoid(cls)
	boxesS    *ir.Value // decoded boxes [B,L,4] in strides
	points    *ir.Value // anchor points [L,2] in pixels
	stride    *ir.Value // [L,1]
	pointsS   *ir.Value // points / stride
	classes   int
	gtBoxes   *ir.Value // [B,n,4] pixels
	gtClasses *ir.Value // i64 [B,n], −1 padding
	numGTs    *ir.Value // i64 scalar: real boxes in the batch
	zero, one *ir.Value // scalars of the loss dtype
	dt        ir.DType
}

// loss builds the design's loss with its two data-dependent branches:
//
//	if num_gts > 0 {                         // the assigner's "no boxes" case
//	    assign targets; varifocal loss / Σ assigned scores
//	    if num_pos > 0 {                     // the box loss's "no positives" case
//	        GIoU and DFL on positive anchors, weighted by their scores, / Σ scores
//	    } else { 0, 0 }
//	} else {
//	    varifocal loss against all-background targets; 0, 0
//	}
//
// total = 1·cls + 2.5·iou + 0.5·dfl; l1 (mean |box − target| over positive
// sides, in strides) is logged only.
func loss(b *ir.Builder, in lossInputs) lossParts {
	hasGT := ops.GreaterThan(b, in.numGTs, ops.Full(b, ir.I64, 0))
	r := b.If(hasGT, func(b *ir.Builder) []*ir.Value {
		t := assign(b, ops.StopGradient(b, in.prob), ops.Multiply(b, ops.StopGradient(b, in.boxesS), in.stride),
			in.points, in.gtBoxes, in.gtClasses, in.classes)
		aBoxesS := ops.Divide(b, t.boxes, in.stride)
		onehot := ops.Slice(b, ops.OneHot(b, t.labels, in.classes+1, in.dt), []int{2}, []int{0}, []int{in.classes})
		ssum := ops.Maximum(b, ops.ReduceSum(b, t.scores, nil, false), in.one)
		lCls := ops.Divide(b, varifocal(b, in.cls, in.prob, t.scores, onehot), ssum)
		pos := ops.Cast(b, ops.NotEqual(b, t.labels, ops.Full(b, ir.I64, float64(in.classes))), in.dt) // [B,L]
		numPos := ops.ReduceSum(b, pos, nil, false)
		box := b.If(ops.GreaterThan(b, numPos, in.zero), func(b *ir.Builder) []*ir.Value {
			iou, dfl, l1 := boxLoss(b, in, aBoxesS, t.scores, pos, numPos, ssum)
			return []*ir.Value{iou, dfl, l1}
		}, func(b *ir.Builder) []*ir.Value {
			return []*ir.Value{in.zero, in.zero, in.zero}
		})
		return []*ir.Value{lCls, box[0], box[1], box[2], numPos}
	}, func(b *ir.Builder) []*ir.Value {
		zeros := ops.FullLike(b, in.cls, 0, in.dt)
		return []*ir.Value{varifocal(b, in.cls, in.prob, zeros, zeros), in.zero, in.zero, in.zero, in.zero}
	})
	total := ops.Add(b, ops.Add(b, ops.Scale(b, r[0], wCls, 0), ops.Scale(b, r[1], wIoU, 0)), ops.Scale(b, r[2], wDFL, 0))
	return lossParts{total: total, cls: r[0], iou: r[1], dfl: r[2], l1: r[3], positives: r[4]}
}

// varifocal is the summed varifocal loss of logits against soft targets q:
// BCE(sigmoid(logits), q) weighted by α·p²·(1 − label) + q·label, p =
// prob = sigmoid(logits); the weight is differentiated too (it is an
// ordinary product in the design).
func varifocal(b *ir.Builder, logits, prob, q, label *ir.Value) *ir.Value {
	neg := ops.Multiply(b, ops.Scale(b, ops.Multiply(b, prob, prob), vflAlpha, 0), ops.Scale(b, label, -1, 1))
	w := ops.Add(b, neg, ops.Multiply(b, q, label))
	return ops.ReduceSum(b, ops.Multiply(b, w, ops.BinaryCrossEntropyWithLogits(b, logits, q)), nil, false)
}

// boxLoss is the box part of the loss on positive anchors (pos [B,L] 0/1),
// each weighted by the sum of its soft scores: GIoU loss and DFL, both
// divided by ssum, and the L1 distance of the sides (logged).
func boxLoss(b *ir.Builder, in lossInputs, aBoxesS, scores, pos, numPos, ssum *ir.Value) (iou, dfl, l1 *ir.Value) {
	weight := ops.ReduceSum(b, scores, []int{2}, false) // [B,L]
	perSide := ops.ReduceSum(b, ops.Abs(b, ops.Subtract(b, in.boxesS, aBoxesS)), []int{2}, false)
	l1 = ops.Divide(b, ops.ReduceSum(b, ops.Multiply(b, perSide, pos), nil, false), ops.Scale(b, numPos, 4, 0))
	g := ops.Scale(b, giou(b, in.boxesS, aBoxesS), -1, 1)
	iou = ops.Divide(b, ops.ReduceSum(b, ops.Multiply(b, g, weight), nil, false), ssum)
	lt, rb := splitPairs(b, aBoxesS)
	target := ops.Concat(b, -1, ops.Subtract(b, in.pointsS, lt), ops.Subtract(b, rb, in.pointsS))
	target = ops.Clip(b, target, 0, dflMax)
	dfl = ops.Divide(b, ops.ReduceSum(b, ops.Multiply(b, distributionFocal(b, in.reg, target), weight), nil, false), ssum)
	return iou, dfl, l1
}

// giou is the generalized IoU of boxes p and t, [..., 4] each → [...].
func giou(b *ir.Builder, p, t *ir.Value) *ir.Value {
	ps := ops.Split(b, p, -1, 1, 1, 1, 1)
	ts := ops.Split(b, t, -1, 1, 1, 1, 1)
	zero := ops.Full(b, p.Type().DType, 0)
	sub, mul := ops.Subtract, ops.Multiply
	ap := mul(b, sub(b, ps[2], ps[0]), sub(b, ps[3], ps[1]))
	at := mul(b, sub(b, ts[2], ts[0]), sub(b, ts[3], ts[1]))
	w := ops.Maximum(b, sub(b, ops.Minimum(b, ps[2], ts[2]), ops.Maximum(b, ps[0], ts[0])), zero)
	h := ops.Maximum(b, sub(b, ops.Minimum(b, ps[3], ts[3]), ops.Maximum(b, ps[1], ts[1])), zero)
	overlap := mul(b, w, h)
	union := ops.Scale(b, sub(b, ops.Add(b, ap, at), overlap), 1, giouEps)
	iou := ops.Divide(b, overlap, union)
	cw := sub(b, ops.Maximum(b, ps[2], ts[2]), ops.Minimum(b, ps[0], ts[0]))
	ch := sub(b, ops.Maximum(b, ps[3], ts[3]), ops.Minimum(b, ps[1], ts[1]))
	areaC := ops.Scale(b, mul(b, cw, ch), 1, giouEps)
	return ops.Squeeze(b, sub(b, iou, ops.Divide(b, sub(b, areaC, union), areaC)), -1)
}

// distributionFocal is the DFL per anchor [B,L]: for each side, the
// cross-entropy of its distribution with the two bins around the target
// distance t, weighted by closeness (left·(⌊t⌋+1−t) + right·(t−⌊t⌋)),
// averaged over the four sides. target [B,L,4] in strides, within
// [0, dflMax].
func distributionFocal(b *ir.Builder, reg, target *ir.Value) *ir.Value {
	dt := reg.Type().DType
	l := reg.Type().Dims[1]
	logp := ops.LogSoftmax(b, ops.Reshape(b, reg, -1, l, 4, bins), -1)
	left := ops.Cast(b, target, ir.I64) // truncation = floor, target >= 0
	right := ops.Add(b, left, ops.Full(b, ir.I64, 1))
	wl := ops.Subtract(b, ops.Cast(b, right, dt), target)
	wr := ops.Scale(b, wl, -1, 1)
	ll := ops.Squeeze(b, ops.TakeAlongAxis(b, logp, ops.Unsqueeze(b, left, 3), 3), 3)
	lr := ops.Squeeze(b, ops.TakeAlongAxis(b, logp, ops.Unsqueeze(b, right, 3), 3), 3)
	ce := ops.Neg(b, ops.Add(b, ops.Multiply(b, ll, wl), ops.Multiply(b, lr, wr)))
	return ops.ReduceMean(b, ce, []int{2}, false)
}
