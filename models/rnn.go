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

// rnn is a GRU classifier of variable-length token sequences
// (data.NewSequences). The recurrence is one IR "while" whose trip count
// is the feed "T", the length every sequence of the batch shares; the
// backward differentiates through that loop with autodiff's stacks, so the
// memory of a training step grows linearly with T and returns to the
// parameters' bytes after it.
//
// Feeds: "x" f32 [T,B,D] one-hot tokens, "T" i64 scalar, "label" i64 [B]
// (training only). The evaluation program fetches "logits" [B,K].
//
// T is dynamic in both programs. B is dynamic in the evaluation program
// and, with StaticBatch (the default), static in the training program,
// whose sampler then drops each length bucket's last, shorter batch. The
// reason is memory: with a dynamic B, the gradient rules of the broadcasting
// adds and of split keep a forward tensor only to read its run-time shape
// (ops.GradContext.Unbroadcast takes g.X(i) when the operand's type is not
// static), and inside the loop each such tensor is pushed onto a stack every
// iteration. For this cell that is 7 of the 15 residuals per iteration and
// 61% of their bytes; a static B leaves only the 8 the gradients read.

func init() { Register("rnn", func() Task { return newRNN(rnnDefaultConfig()) }) }

// rnnConfig sizes the model and its data.
type rnnConfig struct {
	Hidden         int // GRU state width
	NTrain, NTest  int // samples in the training and held-out sets
	MinLen, MaxLen int // sequence lengths
	D, Classes     int // vocabulary (input width) and classes
	EvalBatch      int // batch of the evaluation program
	// StaticBatch makes B static in the training program (see above).
	StaticBatch bool
	Defaults    Defaults
}

// rnnTestSeed is the seed of the held-out set, fixed so that every run is
// scored on the same sequences.
const rnnTestSeed = 0x5e9_7e57

func rnnDefaultConfig() rnnConfig {
	return rnnConfig{
		Hidden: 48,
		NTrain: 4096, NTest: 1024,
		MinLen: data.DefaultSeqMinLen, MaxLen: data.DefaultSeqMaxLen,
		D: data.DefaultSeqD, Classes: data.DefaultSeqClasses,
		EvalBatch: 256, StaticBatch: true,
		Defaults: Defaults{
			Epochs: 6, Batch: 32, LR: 0.01, Optimizer: "adam",
			ClipNorm: 5, Schedule: "cosine", WarmupSteps: 20,
		},
	}
}

type rnnTask struct {
	cfg         rnnConfig
	train, test *data.Sequences
	sampler     *data.BucketSampler
	batch       int     // the training batch Load was given, 0 before
	epoch       int     // epoch whose batches are cached
	batches     [][]int // batches of epoch, nil before the first
	rank, ranks int     // this rank's shard of each batch (DataConfig)
	evalBatch   int     // Evaluate's batch, 0 for cfg.EvalBatch
}

// EvalBatch and SetEvalBatch let a memory limit shrink the evaluation
// batch (EvalBatcher): the GRU runs each sequence on its own, and a
// bucket's sequences all have its length.
func (r *rnnTask) EvalBatch() int     { return cmp.Or(r.evalBatch, r.cfg.EvalBatch) }
func (r *rnnTask) SetEvalBatch(n int) { r.evalBatch = n }

func newRNN(cfg rnnConfig) *rnnTask { return &rnnTask{cfg: cfg} }

// PlanHint: the longest sequences, T = MaxLen time steps.
func (r *rnnTask) PlanHint(batch int) (map[string][]int, int) {
	return map[string][]int{"x": {r.cfg.MaxLen, batch, r.cfg.D}, "T": {}}, r.cfg.MaxLen
}

func (r *rnnTask) Name() string       { return "rnn" }
func (r *rnnTask) Defaults() Defaults { return r.cfg.Defaults }

// Build appends the GRU over x and, when training, the mean softmax
// cross-entropy against "label". Every float value takes m.DType, so an
// f64 module builds an f64 model (for gradient checks).
//
// The static batch of the training program is the one Load was given, or
// the default batch when Build runs without Load (as for printing).
func (r *rnnTask) Build(b *ir.Builder, m *nn.Module) (Outputs, error) {
	batch := ir.Dynamic
	if m.Training && r.cfg.StaticBatch {
		batch = cmp.Or(r.batch, r.cfg.Defaults.Batch)
	}
	x := floatFeed(b, m, "x", -1, batch, r.cfg.D)
	trips := ops.Data(b, "T", ir.I64)
	h := rnnGRU(b, m, "gru", x, trips, r.cfg.Hidden)
	logits := m.Linear(b, "head", h, r.cfg.Classes)
	if !m.Training {
		return Outputs{Fetches: map[string]*ir.Value{"logits": logits}}, nil
	}
	label := ops.Data(b, "label", ir.I64, batch)
	ce, _ := ops.CrossEntropyWithSoftmax(b, logits, label, -1, -100)
	return Outputs{Loss: ops.ReduceMean(b, ce, nil, false)}, nil
}

// rnnGRU runs a GRU cell over x [T,B,D] for trips steps, from a zero state,
// in one "while" loop, and returns the last state [B,H]. The gates follow
// PyTorch's nn.GRU (gate order r, z, n):
//
//	r = σ(x·Wr + br + h·Ur + cr)     z = σ(x·Wz + bz + h·Uz + cz)
//	n = tanh(x·Wn + bn + r ⊙ (h·Un + cn))
//	h' = (1 − z) ⊙ n + z ⊙ h = n + z ⊙ (h − n)
//
// with the three input and the three state projections fused into one
// [D,3H] and one [H,3H] matmul. The parameters live outside the loop and
// are captured by its body; x_t is gathered by the loop counter.
func rnnGRU(b *ir.Builder, m *nn.Module, name string, x, trips *ir.Value, hidden int) *ir.Value {
	d := x.Type().Dims[2]
	h3 := 3 * hidden
	init := nn.FanInUniform{} // U(±1/√H) with fan-in H, as PyTorch's GRU
	wx := m.Param(b, name+".wx", init, true, hidden, h3, d, h3)
	bx := m.Param(b, name+".bx", init, true, hidden, h3, h3)
	wh := m.Param(b, name+".wh", init, true, hidden, h3, hidden, h3)
	bh := m.Param(b, name+".bh", init, true, hidden, h3, h3)

	// h0 = zeros [B,H]; a dynamic B is read from x at run time (also when
	// T is 0).
	var h0 *ir.Value
	if batch := x.Type().Dims[1]; batch != ir.Dynamic {
		h0 = ops.Full(b, m.DType, 0, batch, hidden)
	} else {
		perRow := ops.Unsqueeze(b, ops.ReduceSum(b, x, []int{0, 2}, false), 1) // [B,1]
		h0 = ops.Expand(b, ops.FullLike(b, perRow, 0, ir.InvalidDType), -1, hidden)
	}
	i0 := ops.Full(b, ir.I64, 0)
	out := b.While(ops.LessThan(b, i0, trips), []*ir.Value{i0, h0},
		func(b *ir.Builder, args []*ir.Value) (*ir.Value, []*ir.Value) {
			i, h := args[0], args[1]
			xt := ops.Gather(b, x, i, 0) // [B,D]
			gx := ops.Add(b, ops.Matmul(b, xt, wx, false, false), bx)
			gh := ops.Add(b, ops.Matmul(b, h, wh, false, false), bh)
			xs := ops.Split(b, gx, 1, 2*hidden, hidden)
			hs := ops.Split(b, gh, 1, 2*hidden, hidden)
			rz := ops.Split(b, ops.Sigmoid(b, ops.Add(b, xs[0], hs[0])), 1, hidden, hidden)
			n := ops.Tanh(b, ops.Add(b, xs[1], ops.Multiply(b, rz[0], hs[1])))
			next := ops.Add(b, n, ops.Multiply(b, rz[1], ops.Subtract(b, h, n)))
			i1 := ops.Add(b, i, ops.Full(b, ir.I64, 1))
			return ops.LessThan(b, i1, trips), []*ir.Value{i1, next}
		})
	return out[1]
}

// Load builds the training set from cfg.Seed and the held-out set from
// rnnTestSeed (another seed if they coincide).
func (r *rnnTask) Load(cfg DataConfig) error {
	if cfg.Batch < 1 {
		return fmt.Errorf("rnn: batch %d: want at least 1", cfg.Batch)
	}
	c := r.cfg
	seq := data.SequenceConfig{MinLen: c.MinLen, MaxLen: c.MaxLen, D: c.D, NumClasses: c.Classes}
	trainCfg, testCfg := seq, seq
	trainCfg.N, trainCfg.Seed = c.NTrain, cfg.Seed
	testCfg.N, testCfg.Seed = c.NTest, rnnTestSeed
	if cfg.Seed == rnnTestSeed {
		trainCfg.Seed = rnnTestSeed + 1
	}
	for _, sc := range []data.SequenceConfig{trainCfg, testCfg} {
		if err := sc.Validate(); err != nil {
			return fmt.Errorf("rnn: %w", err)
		}
	}
	r.train, r.test = data.NewSequences(trainCfg), data.NewSequences(testCfg)
	r.sampler = r.train.Sampler(cfg.Batch, cfg.Seed, true, c.StaticBatch)
	if r.sampler.Steps() == 0 {
		largest := 0
		for _, n := range rnnBucketSizes(r.train.Lengths()) {
			largest = max(largest, n)
		}
		return fmt.Errorf("rnn: batch %d is larger than every length bucket (the largest holds %d sequences); use a batch of at most %d", cfg.Batch, largest, largest)
	}
	r.batch, r.batches = cfg.Batch, nil
	r.rank, r.ranks = cfg.Rank, cfg.Ranks
	return nil
}

// rnnBucketSizes counts the sequences of each length.
func rnnBucketSizes(lengths []int) map[int]int {
	n := map[int]int{}
	for _, l := range lengths {
		n[l]++
	}
	return n
}

func (r *rnnTask) StepsPerEpoch() int { return r.sampler.Steps() }

// TrainFeeds returns batch step of the shuffled epoch: sequences of one
// length T, which is logged as "seq_len".
func (r *rnnTask) TrainFeeds(a *memory.Allocator, epoch, step int) (Feeds, error) {
	if r.batches == nil || r.epoch != epoch {
		r.epoch, r.batches = epoch, r.sampler.Epoch(epoch)
	}
	if step < 0 || step >= len(r.batches) {
		return Feeds{}, fmt.Errorf("rnn: step %d of an epoch of %d", step, len(r.batches))
	}
	idx, err := Shard(r.batches[step], r.rank, r.ranks)
	if err != nil {
		return Feeds{}, fmt.Errorf("rnn: %w", err)
	}
	f, err := rnnFeeds(a, r.train, idx, true)
	if err != nil {
		return Feeds{}, err
	}
	f.Info = map[string]float64{"seq_len": float64(f.Tensors["x"].Shape()[0])}
	return f, nil
}

// rnnFeeds makes the feeds "x", "T" and, with labels, "label" of the
// samples idx, which share one length.
func rnnFeeds(a *memory.Allocator, s *data.Sequences, idx []int, labels bool) (Feeds, error) {
	x, y, T, err := s.Batch(a, idx)
	if err != nil {
		return Feeds{}, err
	}
	trips, err := tensor.Scalar(a, tensor.I64, float64(T))
	if err != nil {
		x.Release()
		y.Release()
		return Feeds{}, err
	}
	f := Feeds{Tensors: map[string]*tensor.Tensor{"x": x, "T": trips}}
	if labels {
		f.Tensors["label"] = y
	} else {
		y.Release()
	}
	return f, nil
}

// Evaluate scores the held-out set, in batches of one length, by the
// argmax of the logits.
func (r *rnnTask) Evaluate(a *memory.Allocator, run Runner) (map[string]float64, error) {
	correct, total := 0, 0
	for _, idx := range r.test.Sampler(r.EvalBatch(), 0, false, false).Epoch(0) {
		f, err := rnnFeeds(a, r.test, idx, false)
		if err != nil {
			return nil, err
		}
		res, err := run(f.Tensors)
		f.Release()
		if err != nil {
			return nil, err
		}
		logits := res["logits"]
		k := logits.Shape()[1]
		for j, i := range idx {
			best := 0
			for c := 1; c < k; c++ {
				if logits.Float64At(j*k+c) > logits.Float64At(j*k+best) {
					best = c
				}
			}
			if best == r.test.Label(i) {
				correct++
			}
			total++
		}
		res.Release()
	}
	return map[string]float64{"accuracy": float64(correct) / float64(total)}, nil
}
