package models

import (
	"cmp"
	"fmt"

	"github.com/gopir/gopir/data"
	"github.com/gopir/gopir/ir"
	"github.com/gopir/gopir/memory"
	"github.com/gopir/gopir/nn"
	"github.com/gopir/gopir/ops"
	"github.com/gopir/gopir/tensor"
)

// tinydet is a small anchor-free detector in the spirit of PP-YOLOE / FCOS
// on the synthetic detection set (data.NewDetection): 3×32×32 images with
// 0..3 boxes of 3 classes.
//
// Network: five 3×3 conv + batch norm + ReLU layers (16, 32s2, 32, 64s2,
// 64 channels; "s2" halves the resolution) bring the image to an 8×8 grid
// of stride 4, a 3×3 head conv (64) follows, and a per-cell linear layer
// predicts C class logits, one objectness logit and four distances
// (left, top, right, bottom) from the cell centre to the box sides, as
// softplus(raw)·stride pixels.
//
// Loss: the training program holds
//
//	if num_gts > 0 {
//	    assign targets; objectness BCE + class CE + L1 + GIoU on positives
//	} else {
//	    objectness BCE towards 0 on every cell
//	}
//
// as an IR `if` op, the condition computed in the program from the
// "num_gts" feed. Assignment (tinydetAssign) is done with ops: a cell is
// positive for a ground-truth box when the cell centre lies strictly inside
// the box, and among several such boxes the one of smallest area wins
// (FCOS). Padding boxes (class −1) are masked out.
//
// Feeds: "image" f32 [B,3,32,32], "gt_boxes" f32 [B,M,4] (x0,y0,x1,y1 in
// pixels), "gt_classes" i64 [B,M] (−1 padding), "num_gts" i64 scalar. The
// evaluation program takes "image" only and fetches "box" [B,64,4]
// (decoded, pixels), "obj" [B,64] (probability) and "cls" [B,64,C]
// (softmax probabilities); Evaluate decodes them with per-class NMS and
// scores mAP@0.5 on a held-out set.
type tinydet struct {
	train   *data.Detection
	sampler *data.DetSampler
	test    *data.Detection

	epoch   int     // epoch whose batches are cached
	batches [][]int // sampler.Epoch(epoch), nil before the first call

	rank, ranks int // this rank's shard of each batch (DataConfig)
	evalBatch   int // Evaluate's batch, 0 for tinydetEvalBatch
}

// EvalBatch and SetEvalBatch let a memory limit shrink the evaluation
// batch (EvalBatcher): the network runs each image on its own (batch
// norm on its running statistics) and mAP is taken over the whole set.
func (d *tinydet) EvalBatch() int     { return cmp.Or(d.evalBatch, tinydetEvalBatch) }
func (d *tinydet) SetEvalBatch(n int) { d.evalBatch = n }

// Sizes of the tinydet model and its data.
const (
	tinydetSize     = 32 // image side in pixels
	tinydetStride   = 4  // pixels per grid cell
	tinydetGrid     = tinydetSize / tinydetStride
	tinydetCells    = tinydetGrid * tinydetGrid
	tinydetClasses  = data.DefaultDetClasses
	tinydetMaxBoxes = data.DefaultDetMaxBoxes

	// Data sets: the training set is fixed; the run seed shuffles it.
	tinydetTrainN    = 2048
	tinydetTrainSeed = 1
	tinydetTestN     = 256
	tinydetTestSeed  = 1001
	tinydetEvalBatch = 64

	// Loss weights.
	tinydetWObj  = 1.0
	tinydetWCls  = 1.0
	tinydetWL1   = 0.5
	tinydetWGIoU = 2.0
	// tinydetObjPrior shifts the objectness logit so that training starts
	// from a low object probability (sigmoid(−4) ≈ 0.018), as detectors
	// initialize the bias of that layer.
	tinydetObjPrior = -4.0
	// tinydetNoBox is the assignment cost of a cell outside a box.
	tinydetNoBox = 1e8
)

func init() { Register("tinydet", func() Task { return &tinydet{} }) }

func (d *tinydet) Name() string { return "tinydet" }

func (d *tinydet) Defaults() Defaults {
	return Defaults{
		Steps:       tinydetDefaultSteps,
		Batch:       32,
		LR:          0.003,
		Optimizer:   "adamw",
		WeightDecay: 1e-4,
		ClipNorm:    10,
		Schedule:    "cosine",
		WarmupSteps: 50,
	}
}

const tinydetDefaultSteps = 600

func (d *tinydet) Load(cfg DataConfig) error {
	if cfg.Batch < 1 {
		return fmt.Errorf("tinydet: batch %d, want at least 1", cfg.Batch)
	}
	d.train = data.NewDetection(data.DetectionConfig{N: tinydetTrainN, BatchSize: cfg.Batch, Seed: tinydetTrainSeed})
	d.sampler = d.train.Sampler(cfg.Seed, true, true)
	if d.sampler.Steps() < 1 {
		return fmt.Errorf("tinydet: batch %d is larger than the %d training images", cfg.Batch, tinydetTrainN)
	}
	d.test = data.NewDetection(data.DetectionConfig{N: tinydetTestN, BatchSize: tinydetEvalBatch, EmptyBatchEvery: -1, Seed: tinydetTestSeed})
	d.batches = nil
	d.rank, d.ranks = cfg.Rank, cfg.Ranks
	return nil
}

func (d *tinydet) StepsPerEpoch() int {
	if d.sampler == nil {
		return 0
	}
	return d.sampler.Steps()
}

func (d *tinydet) TrainFeeds(a *memory.Allocator, epoch, step int) (Feeds, error) {
	if d.sampler == nil {
		return Feeds{}, fmt.Errorf("tinydet: TrainFeeds before Load")
	}
	if d.batches == nil || d.epoch != epoch {
		d.batches, d.epoch = d.sampler.Epoch(epoch), epoch
	}
	if step < 0 || step >= len(d.batches) {
		return Feeds{}, fmt.Errorf("tinydet: step %d out of range [0, %d)", step, len(d.batches))
	}
	idx, err := Shard(d.batches[step], d.rank, d.ranks)
	if err != nil {
		return Feeds{}, fmt.Errorf("tinydet: %w", err)
	}
	bt, err := d.train.Batch(a, idx)
	if err != nil {
		return Feeds{}, err
	}
	n, err := tensor.Scalar(a, tensor.I64, float64(bt.NumGTs))
	if err != nil {
		bt.Release()
		return Feeds{}, err
	}
	return Feeds{
		Tensors: map[string]*tensor.Tensor{
			"image": bt.Images, "gt_boxes": bt.Boxes, "gt_classes": bt.Classes, "num_gts": n,
		},
		Info: map[string]float64{"num_gts": float64(bt.NumGTs)},
	}, nil
}

// Build appends the network and, when training, the loss with its `if`.
func (d *tinydet) Build(b *ir.Builder, m *nn.Module) (Outputs, error) {
	img := floatFeed(b, m, "image", -1, 3, tinydetSize, tinydetSize)
	cls, obj, ltrb := tinydetNetwork(b, m, img)
	centres := tinydetCentres4(b, m.DType)
	box := ops.Add(b, centres, ops.Multiply(b, ltrb, tinydetSigns(b, m.DType))) // [B,64,4]
	if !m.Training {
		fetches := map[string]*ir.Value{
			"box": box,
			"obj": ops.Sigmoid(b, obj),
			"cls": ops.Softmax(b, cls, -1),
		}
		asFloat32(b, m, fetches)
		return Outputs{Fetches: fetches}, nil
	}
	gtBoxes := floatFeed(b, m, "gt_boxes", -1, tinydetMaxBoxes, 4)
	gtClasses := ops.Data(b, "gt_classes", ir.I64, -1, tinydetMaxBoxes)
	numGTs := ops.Data(b, "num_gts", ir.I64)
	hasGT := ops.GreaterThan(b, numGTs, ops.Full(b, ir.I64, 0))
	if m.Replicas > 1 {
		return tinydetReplicatedLoss(b, m.Replicas, img, numGTs, hasGT, gtBoxes, gtClasses, cls, obj, ltrb, box)
	}
	res := b.If(hasGT, func(b *ir.Builder) []*ir.Value {
		a := tinydetAssign(b, gtBoxes, gtClasses)
		l := tinydetPositiveLoss(b, a, cls, obj, ltrb, box)
		return []*ir.Value{l.total, l.positives}
	}, func(b *ir.Builder) []*ir.Value {
		return []*ir.Value{tinydetBackgroundLoss(b, obj), ops.Full(b, m.DType, 0)}
	})
	if err := b.Err(); err != nil {
		return Outputs{}, err
	}
	return Outputs{Loss: res[0], Fetches: map[string]*ir.Value{"positives": res[1]}}, nil
}

// tinydetNetwork returns the head's outputs per grid cell k = row·8+col:
// class logits [B,64,C], objectness logits [B,64] and distances to the box
// sides [B,64,4] in pixels (all positive).
func tinydetNetwork(b *ir.Builder, m *nn.Module, img *ir.Value) (cls, obj, ltrb *ir.Value) {
	x := img
	for _, l := range []struct {
		name        string
		out, stride int
	}{
		{"stem", 16, 1}, {"s1a", 32, 2}, {"s1b", 32, 1}, {"s2a", 64, 2}, {"s2b", 64, 1}, {"head", 64, 1},
	} {
		x = m.Conv2D(b, l.name+".conv", x, l.out, 3, nn.ConvOpts{Stride: l.stride, Pad: 1, NoBias: true})
		x = ops.Relu(b, m.BatchNorm(b, l.name+".bn", x))
	}
	ch := x.Type().Dims[1]
	x = ops.Transpose(b, ops.Reshape(b, x, -1, ch, tinydetCells), 0, 2, 1) // [B,64,ch]
	out := m.Linear(b, "pred", x, tinydetClasses+5)                        // [B,64,C+5]
	parts := ops.Split(b, out, 2, tinydetClasses, 1, 4)
	cls = parts[0]
	obj = ops.Scale(b, ops.Reshape(b, parts[1], -1, tinydetCells), 1, tinydetObjPrior)
	ltrb = ops.Scale(b, ops.Softplus(b, parts[2]), tinydetStride, 0)
	return cls, obj, ltrb
}

// tinydetCellCentres returns the x and y pixel coordinates of the grid cell
// centres, [64] each, cell k = row·8+col.
func tinydetCellCentres(b *ir.Builder, dt ir.DType) (cx, cy *ir.Value) {
	half := float64(tinydetStride) / 2
	ax := ops.Arange(b, dt, half, tinydetSize, tinydetStride) // [8]
	zeros := ops.Full(b, dt, 0, tinydetGrid, tinydetGrid)
	cx = ops.Reshape(b, ops.Add(b, ops.Reshape(b, ax, 1, tinydetGrid), zeros), tinydetCells)
	cy = ops.Reshape(b, ops.Add(b, ops.Reshape(b, ax, tinydetGrid, 1), zeros), tinydetCells)
	return cx, cy
}

// tinydetCentres4 is [64,4] holding (cx, cy, cx, cy) per cell.
func tinydetCentres4(b *ir.Builder, dt ir.DType) *ir.Value {
	cx, cy := tinydetCellCentres(b, dt)
	cx = ops.Reshape(b, cx, tinydetCells, 1)
	cy = ops.Reshape(b, cy, tinydetCells, 1)
	return ops.Concat(b, 1, cx, cy, cx, cy)
}

// tinydetSigns is [4] = (−1, −1, 1, 1): box = centre + ltrb·signs.
func tinydetSigns(b *ir.Builder, dt ir.DType) *ir.Value {
	m, p := ops.Full(b, dt, -1, 2), ops.Full(b, dt, 1, 2)
	return ops.Concat(b, 0, m, p)
}

// tinydetTargets is the result of target assignment.
type tinydetTargets struct {
	pos    *ir.Value // i1 [B,64]: the cell has a box
	posF   *ir.Value // f32 [B,64]: pos as 0/1
	box    *ir.Value // f32 [B,64,4]: the assigned box (meaningless where !pos)
	labels *ir.Value // i64 [B,64]: the assigned class, −100 where !pos
	index  *ir.Value // i64 [B,64]: the assigned box's slot in [0, M)
}

// tinydetAssign assigns ground truth to grid cells with ops: cell k is
// positive for box j when its centre lies strictly inside the box and the
// box is real (class >= 0); among several boxes the smallest area wins (the
// lower slot on a tie).
func tinydetAssign(b *ir.Builder, gtBoxes, gtClasses *ir.Value) tinydetTargets {
	m, dt := gtBoxes.Type().Dims[1], gtBoxes.Type().DType
	cx, cy := tinydetCellCentres(b, dt)
	cx = ops.Reshape(b, cx, 1, tinydetCells, 1)
	cy = ops.Reshape(b, cy, 1, tinydetCells, 1)
	sides := ops.Split(b, ops.Transpose(b, gtBoxes, 0, 2, 1), 1, 1, 1, 1, 1) // 4 × [B,1,M]
	x0, y0, x1, y1 := sides[0], sides[1], sides[2], sides[3]
	l, t := ops.Subtract(b, cx, x0), ops.Subtract(b, cy, y0) // [B,64,M]
	r, bt := ops.Subtract(b, x1, cx), ops.Subtract(b, y1, cy)
	inside := ops.GreaterThan(b, ops.Minimum(b, ops.Minimum(b, l, t), ops.Minimum(b, r, bt)), ops.Full(b, dt, 0))
	valid := ops.GreaterEqual(b, ops.Unsqueeze(b, gtClasses, 1), ops.Full(b, ir.I64, 0)) // [B,1,M]
	inside = ops.LogicalAnd(b, inside, valid)
	area := ops.Multiply(b, ops.Subtract(b, x1, x0), ops.Subtract(b, y1, y0)) // [B,1,M]
	cost := ops.Where(b, inside, area, ops.Full(b, dt, tinydetNoBox))         // [B,64,M]
	index := ops.Argmax(b, ops.Neg(b, cost), 2, false)                        // [B,64]
	pos := ops.LessThan(b, ops.ReduceMin(b, cost, []int{2}, false), ops.Full(b, dt, tinydetNoBox/2))
	sel := ops.OneHot(b, index, m, dt)               // [B,64,M]
	box := ops.Matmul(b, sel, gtBoxes, false, false) // [B,64,4]
	clsF := ops.Unsqueeze(b, ops.Cast(b, gtClasses, dt), 2)
	cls := ops.Cast(b, ops.Squeeze(b, ops.Matmul(b, sel, clsF, false, false), 2), ir.I64)
	labels := ops.Where(b, pos, cls, ops.Full(b, ir.I64, -100))
	return tinydetTargets{pos: pos, posF: ops.Cast(b, pos, dt), box: box, labels: labels, index: index}
}

// tinydetGIoU is the generalized IoU of boxes p and t, [..., 4] each
// (x0, y0, x1, y1), over the last axis; eps keeps the divisions finite for
// empty boxes.
func tinydetGIoU(b *ir.Builder, p, t *ir.Value) *ir.Value {
	const eps = 1e-6
	dt := p.Type().DType
	ps := ops.Split(b, p, -1, 1, 1, 1, 1)
	ts := ops.Split(b, t, -1, 1, 1, 1, 1)
	zero := ops.Full(b, dt, 0)
	iw := ops.Maximum(b, ops.Subtract(b, ops.Minimum(b, ps[2], ts[2]), ops.Maximum(b, ps[0], ts[0])), zero)
	ih := ops.Maximum(b, ops.Subtract(b, ops.Minimum(b, ps[3], ts[3]), ops.Maximum(b, ps[1], ts[1])), zero)
	inter := ops.Multiply(b, iw, ih)
	areaP := ops.Multiply(b, ops.Subtract(b, ps[2], ps[0]), ops.Subtract(b, ps[3], ps[1]))
	areaT := ops.Multiply(b, ops.Subtract(b, ts[2], ts[0]), ops.Subtract(b, ts[3], ts[1]))
	union := ops.Scale(b, ops.Subtract(b, ops.Add(b, areaP, areaT), inter), 1, eps)
	iou := ops.Divide(b, inter, union)
	ew := ops.Subtract(b, ops.Maximum(b, ps[2], ts[2]), ops.Minimum(b, ps[0], ts[0]))
	eh := ops.Subtract(b, ops.Maximum(b, ps[3], ts[3]), ops.Minimum(b, ps[1], ts[1]))
	enclose := ops.Scale(b, ops.Multiply(b, ew, eh), 1, eps)
	giou := ops.Subtract(b, iou, ops.Divide(b, ops.Subtract(b, enclose, union), enclose))
	return ops.Squeeze(b, giou, -1)
}

// tinydetLoss holds the parts of the positive-branch loss.
type tinydetLoss struct {
	total, obj, cls, l1, giou, positives *ir.Value
}

// tinydetPositiveLoss is the loss of a batch with ground truth: objectness
// BCE on every cell, softmax CE on positive cells, L1 on the side distances
// (in strides) and 1−GIoU on positive cells, each normalized by the number
// of positive cells (at least 1).
func tinydetPositiveLoss(b *ir.Builder, a tinydetTargets, cls, obj, ltrb, box *ir.Value) tinydetLoss {
	npos := ops.ReduceSum(b, a.posF, nil, false)
	norm := ops.Maximum(b, npos, ops.Full(b, npos.Type().DType, 1))
	s := tinydetPositiveSums(b, a, cls, obj, ltrb, box)
	perPos := func(x *ir.Value) *ir.Value { return ops.Divide(b, x, norm) }
	lObj, lCls, lL1, lG := perPos(s[0]), perPos(s[1]), perPos(s[2]), perPos(s[3])

	total := ops.Add(b,
		ops.Add(b, ops.Scale(b, lObj, tinydetWObj, 0), ops.Scale(b, lCls, tinydetWCls, 0)),
		ops.Add(b, ops.Scale(b, lL1, tinydetWL1, 0), ops.Scale(b, lG, tinydetWGIoU, 0)))
	return tinydetLoss{total: total, obj: lObj, cls: lCls, l1: lL1, giou: lG, positives: npos}
}

// tinydetPositiveSums returns the sums over the batch of the terms of the
// positive-branch loss, not yet normalized: objectness BCE, class CE, L1
// and 1−GIoU (the last three on positive cells only).
func tinydetPositiveSums(b *ir.Builder, a tinydetTargets, cls, obj, ltrb, box *ir.Value) [4]*ir.Value {
	sum := func(x *ir.Value) *ir.Value { return ops.ReduceSum(b, x, nil, false) }
	sObj := sum(ops.BinaryCrossEntropyWithLogits(b, obj, a.posF))
	ce, _ := ops.CrossEntropyWithSoftmax(b, cls, a.labels, -1, -100)
	sCls := sum(ce)
	// target side distances, in strides
	dt := box.Type().DType
	tltrb := ops.Multiply(b, ops.Subtract(b, a.box, tinydetCentres4(b, dt)), tinydetSigns(b, dt))
	diff := ops.Abs(b, ops.Subtract(b, ltrb, tltrb))
	sL1 := sum(ops.Scale(b, ops.Multiply(b, ops.ReduceSum(b, diff, []int{2}, false), a.posF), 1.0/tinydetStride, 0))
	g := tinydetGIoU(b, box, a.box)
	sG := sum(ops.Multiply(b, ops.Scale(b, g, -1, 1), a.posF))
	return [4]*ir.Value{sObj, sCls, sL1, sG}
}

// tinydetReplicatedLoss is the loss of one rank of a data-parallel job of
// n ranks, each with a shard of the global batch. The loss of the whole
// batch is Σ/D: Σ, the weighted sum of the loss terms over every image,
// adds up over the ranks; the normalizer D is max(positives, 1) if the
// whole batch has a box, else its image count times tinydetBgNorm. Each
// rank computes its part of Σ in the branch its shard takes (a shard
// without boxes contributes only objectness BCE towards 0, which is what
// the positive branch gives for such images), the normalizer from the
// counts summed over the ranks (all_reduce, which carries no gradient
// here), and returns n·Σ_rank/D: the mean over the ranks, which the
// gradient averaging and the logged loss take, is then the loss of the
// global batch, as one process training on it would compute it. The
// extra fetch "positives" is the global batch's.
func tinydetReplicatedLoss(b *ir.Builder, n int, img, numGTs, hasGT, gtBoxes, gtClasses, cls, obj, ltrb, box *ir.Value) (Outputs, error) {
	dt := obj.Type().DType
	res := b.If(hasGT, func(b *ir.Builder) []*ir.Value {
		a := tinydetAssign(b, gtBoxes, gtClasses)
		s := tinydetPositiveSums(b, a, cls, obj, ltrb, box)
		total := ops.Add(b,
			ops.Add(b, ops.Scale(b, s[0], tinydetWObj, 0), ops.Scale(b, s[1], tinydetWCls, 0)),
			ops.Add(b, ops.Scale(b, s[2], tinydetWL1, 0), ops.Scale(b, s[3], tinydetWGIoU, 0)))
		return []*ir.Value{total, ops.ReduceSum(b, a.posF, nil, false)}
	}, func(b *ir.Builder) []*ir.Value {
		bce := ops.BinaryCrossEntropyWithLogits(b, obj, ops.FullLike(b, obj, 0, dt))
		return []*ir.Value{ops.Scale(b, ops.ReduceSum(b, bce, nil, false), tinydetWObj, 0), ops.Full(b, dt, 0)}
	})
	images := ops.Cast(b, ops.Slice(b, ops.Shape(b, img), []int{0}, []int{0}, []int{1}), dt) // [1]
	counts := ops.Concat(b, 0, ops.Reshape(b, ops.Cast(b, numGTs, dt), 1), ops.Reshape(b, res[1], 1), images)
	counts = ops.AllReduce(b, counts, false) // [boxes, positives, images] of the global batch
	parts := ops.Split(b, counts, 0, 1, 1, 1)
	gts, pos, imgs := ops.Reshape(b, parts[0]), ops.Reshape(b, parts[1]), ops.Reshape(b, parts[2])
	norm := ops.Where(b, ops.GreaterThan(b, gts, ops.Full(b, dt, 0)),
		ops.Maximum(b, pos, ops.Full(b, dt, 1)),
		ops.Scale(b, imgs, tinydetBgNorm, 0))
	loss := ops.Divide(b, ops.Scale(b, res[0], float64(n), 0), norm)
	if err := b.Err(); err != nil {
		return Outputs{}, err
	}
	return Outputs{Loss: loss, Fetches: map[string]*ir.Value{"positives": pos}}, nil
}

// tinydetBackgroundLoss is the loss of a batch without ground truth:
// objectness BCE towards 0 on every cell, summed and divided by the batch
// size times tinydetBgNorm (about the number of positive cells per image in
// an ordinary batch, so that a background cell weighs as it does there).
func tinydetBackgroundLoss(b *ir.Builder, obj *ir.Value) *ir.Value {
	bce := ops.BinaryCrossEntropyWithLogits(b, obj, ops.FullLike(b, obj, 0, obj.Type().DType))
	per := ops.ReduceMean(b, ops.ReduceSum(b, bce, []int{1}, false), nil, false) // per image
	return ops.Scale(b, per, tinydetWObj/tinydetBgNorm, 0)
}

// tinydetBgNorm is the typical number of positive cells per image.
const tinydetBgNorm = 6.0
