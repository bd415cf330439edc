package ppyoloe

import (
	"cmp"
	"fmt"

	"github.com/gopir/gopir/data"
	"github.com/gopir/gopir/ir"
	"github.com/gopir/gopir/memory"
	"github.com/gopir/gopir/models"
	"github.com/gopir/gopir/nn"
	"github.com/gopir/gopir/ops"
	"github.com/gopir/gopir/tensor"
)

// Name is the model's name in the zoo.
const Name = "ppyoloe_s"

// Data settings.
const (
	DefaultImageSize = 320
	numClasses       = 6  // every shape of the synthetic set
	maxBoxes         = 20 // objects per image: 1..maxBoxes, or none
	// About 15% of the images have no object: every 8th batch holds only
	// such images (so that the loss's no-object branch runs), and 3% of the
	// others.
	emptyBatchEvery = 8
	emptyFraction   = 0.03

	trainN    = 4096
	trainSeed = 1
	testN     = 256
	testSeed  = 1001
	evalBatch = 8
)

// objectSides returns the range of object sides for a size×size image:
// from size/25 (at least 4) to 0.3·size pixels, 12 to 96 at 320.
func objectSides(size int) (lo, hi int) {
	lo = max(4, size/25)
	return lo, max(lo, size*3/10)
}

// dataConfig returns the synthetic detection set of the task for size×size
// images, n images from seed, laid out for batches of batch.
func dataConfig(size, n, batch int, seed int64) data.DetectionConfig {
	lo, hi := objectSides(size)
	return data.DetectionConfig{
		N: n, H: size, W: size, NumClasses: numClasses, MaxBoxes: maxBoxes,
		MinObject: lo, MaxObject: hi, EmptyFraction: emptyFraction, EmptyBatchEvery: emptyBatchEvery,
		BatchSize: batch, Seed: seed,
	}
}

// task is ppyoloe_s: the network, its loss and the synthetic data.
type task struct {
	size   int  // image side, a multiple of 32
	deploy bool // build the inference form (see net.deploy)
	// batch is the training program's batch size; 0 leaves it dynamic.
	batch int

	train   *data.Detection
	sampler *data.DetSampler
	test    *data.Detection

	epoch   int
	batches [][]int // sampler.Epoch(epoch), nil before the first call

	evalBatchSize int // Evaluate's batch, 0 for evalBatch
}

// EvalBatch and SetEvalBatch let a memory limit shrink the evaluation
// batch (models.EvalBatcher): the network runs each image on its own
// (batch norm on its running statistics) and mAP is taken over the whole
// set.
func (d *task) EvalBatch() int     { return cmp.Or(d.evalBatchSize, evalBatch) }
func (d *task) SetEvalBatch(n int) { d.evalBatchSize = n }

func init() { models.Register(Name, func() models.Task { return &task{size: DefaultImageSize} }) }

func (d *task) Name() string { return Name }

func (d *task) Defaults() models.Defaults {
	return models.Defaults{
		Steps:       defaultSteps,
		Batch:       8,
		LR:          0.001,
		Optimizer:   "adamw",
		WeightDecay: 5e-4,
		ClipNorm:    10,
		Schedule:    "cosine",
		WarmupSteps: 20,
	}
}

// defaultSteps keeps `gopir train --model ppyoloe_s` within minutes; the
// accuracy run (README) trains longer.
const defaultSteps = 40

// SetImageSize sets the image side (gopir train --image-size): a multiple
// of 32 (the coarsest level's stride) between 32 and 1024.
func (d *task) SetImageSize(side int) error {
	if side < 32 || side > 1024 || side%32 != 0 {
		return fmt.Errorf("%s: image size %d, want a multiple of 32 in [32, 1024]", Name, side)
	}
	d.size = side
	return nil
}

// SetBatch fixes the training program's batch size (models.FixedBatch):
// with a dynamic one, the gradients of the residual and RepVGG additions
// would keep their operands alive until the backward just for their shapes.
func (d *task) SetBatch(n int) { d.batch = n }

// SetDeploy makes Build append the inference form of the evaluation
// program (every RepVGG block and batch norm folded into a convolution);
// see Reparameterize.
func (d *task) SetDeploy(on bool) { d.deploy = on }

func (d *task) Load(cfg models.DataConfig) error {
	if cfg.Batch < 1 {
		return fmt.Errorf("%s: batch %d, want at least 1", Name, cfg.Batch)
	}
	d.train = data.NewDetection(dataConfig(d.size, trainN, cfg.Batch, trainSeed))
	d.sampler = d.train.Sampler(cfg.Seed, true, true)
	if d.sampler.Steps() < 1 {
		return fmt.Errorf("%s: batch %d is larger than the %d training images", Name, cfg.Batch, trainN)
	}
	test := dataConfig(d.size, testN, evalBatch, testSeed)
	test.EmptyBatchEvery = -1
	d.test = data.NewDetection(test)
	d.batches = nil
	return nil
}

func (d *task) StepsPerEpoch() int {
	if d.sampler == nil {
		return 0
	}
	return d.sampler.Steps()
}

func (d *task) TrainFeeds(a *memory.Allocator, epoch, step int) (models.Feeds, error) {
	if d.sampler == nil {
		return models.Feeds{}, fmt.Errorf("%s: TrainFeeds before Load", Name)
	}
	if d.batches == nil || d.epoch != epoch {
		d.batches, d.epoch = d.sampler.Epoch(epoch), epoch
	}
	if step < 0 || step >= len(d.batches) {
		return models.Feeds{}, fmt.Errorf("%s: step %d out of range [0, %d)", Name, step, len(d.batches))
	}
	bt, err := d.train.Batch(a, d.batches[step])
	if err != nil {
		return models.Feeds{}, err
	}
	return feedsOf(a, bt)
}

// feedsOf turns a batch into the training program's feeds, taking over its
// tensors.
func feedsOf(a *memory.Allocator, bt *data.DetBatch) (models.Feeds, error) {
	n, err := tensor.Scalar(a, tensor.I64, float64(bt.NumGTs))
	if err != nil {
		bt.Release()
		return models.Feeds{}, err
	}
	return models.Feeds{
		Tensors: map[string]*tensor.Tensor{
			"image": bt.Images, "gt_boxes": bt.Boxes, "gt_classes": bt.Classes, "num_gts": n,
		},
		Info: map[string]float64{"num_gts": float64(bt.NumGTs)},
	}, nil
}

// Build appends the network and, when training, the loss with its
// branches. The evaluation program fetches "scores" [B,L,C] (class
// probabilities) and "boxes" [B,L,4] (pixels); the training program logs
// the loss's parts and the number of positive anchors.
func (d *task) Build(b *ir.Builder, m *nn.Module) (models.Outputs, error) {
	if d.deploy && m.Training {
		return models.Outputs{}, fmt.Errorf("%s: the deployed form is for evaluation only", Name)
	}
	batch := -1
	if m.Training && d.batch > 0 {
		batch = d.batch
	}
	o := forward(b, m, batch, d.size, d.deploy)
	if !m.Training {
		return models.Outputs{Fetches: map[string]*ir.Value{
			"scores": o.prob,
			"boxes":  ops.Multiply(b, o.boxesS, o.stride),
		}}, nil
	}
	o.gtBoxes = ops.Data(b, "gt_boxes", m.DType, batch, maxBoxes, 4)
	o.gtClasses = ops.Data(b, "gt_classes", ir.I64, batch, maxBoxes)
	o.numGTs = ops.Data(b, "num_gts", ir.I64)
	l := loss(b, o)
	if err := b.Err(); err != nil {
		return models.Outputs{}, err
	}
	return models.Outputs{Loss: l.total, Fetches: map[string]*ir.Value{
		"loss_cls": l.cls, "loss_iou": l.iou, "loss_dfl": l.dfl, "loss_l1": l.l1, "positives": l.positives,
	}}, nil
}

// forward appends the "image" feed (batch -1: dynamic), the network and
// the decoding of its outputs; the ground-truth fields of the result are
// left for the loss.
func forward(b *ir.Builder, m *nn.Module, batch, size int, deploy bool) lossInputs {
	dt := m.DType
	n := &net{b: b, m: m, deploy: deploy}
	img := ops.Data(b, "image", dt, batch, 3, size, size)
	cls, reg := n.head(n.neck(n.backbone(img)), numClasses)
	points, stride := anchors(b, dt, size)
	pointsS := ops.Divide(b, points, stride)
	return lossInputs{
		cls: cls, reg: reg, prob: ops.Sigmoid(b, cls), boxesS: decode(b, reg, pointsS),
		points: points, stride: stride, pointsS: pointsS, classes: numClasses,
		zero: ops.Full(b, dt, 0), one: ops.Full(b, dt, 1), dt: dt,
	}
}
