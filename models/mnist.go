package models

import (
	"cmp"
	"fmt"
	"sync"

	"github.com/gopir/gopir/data"
	"github.com/gopir/gopir/ir"
	"github.com/gopir/gopir/memory"
	"github.com/gopir/gopir/nn"
	"github.com/gopir/gopir/ops"
	"github.com/gopir/gopir/tensor"
)

// MNIST plumbing shared by the classifiers mlp, lenet and gate: the
// dataset (read once per process and directory), a shuffling sampler that
// drops the last incomplete batch, the feeds "x" (f32 [B,1,28,28],
// normalized) and "label" (i64 [B]), and the evaluation over the whole
// test set, which reads the eval program's "logits" fetch and reports
// {"accuracy": correct/10000}.

// mnistEvalBatch is the batch size of evaluation; the last batch of the
// test set is shorter when it does not divide 10000.
const mnistEvalBatch = 500

// mnistSplits is the loaded dataset of one directory.
type mnistSplits struct {
	once        sync.Once
	train, test *data.MNIST
	err         error
}

var mnistCache = struct {
	sync.Mutex
	byDir map[string]*mnistSplits
}{byDir: map[string]*mnistSplits{}}

// mnistLoad returns the MNIST splits of dir ("" finds them in the module
// cache), reading the files at most once per process; tests and repeated
// trainers share the same read-only arrays.
func mnistLoad(dir string) (train, test *data.MNIST, err error) {
	mnistCache.Lock()
	s, ok := mnistCache.byDir[dir]
	if !ok {
		s = &mnistSplits{}
		mnistCache.byDir[dir] = s
	}
	mnistCache.Unlock()
	s.once.Do(func() { s.train, s.test, s.err = data.LoadMNIST(dir) })
	return s.train, s.test, s.err
}

// mnistTask is embedded by the MNIST classifiers: it implements Load,
// StepsPerEpoch, TrainFeeds and Evaluate.
type mnistTask struct {
	batch       int
	rank, ranks int
	train, test *data.MNIST
	sampler     *data.Sampler

	mu         sync.Mutex
	epoch      int     // the epoch whose batches are in batches
	batches    [][]int // nil until the first TrainFeeds
	evalBranch bool    // Evaluate also averages a scalar "branch" fetch
	evalBatch  int     // Evaluate's batch, 0 for mnistEvalBatch
}

// evalSize is the batch of Evaluate.
func (t *mnistTask) evalSize() int { return cmp.Or(t.evalBatch, mnistEvalBatch) }

// Load reads the dataset (once per process) and sets up the sampler.
func (t *mnistTask) Load(cfg DataConfig) error {
	if cfg.Batch < 1 {
		return fmt.Errorf("batch %d: want at least 1", cfg.Batch)
	}
	train, test, err := mnistLoad(cfg.DataDir)
	if err != nil {
		return err
	}
	if cfg.Batch > train.N {
		return fmt.Errorf("batch %d is larger than the %d training images", cfg.Batch, train.N)
	}
	t.batch, t.train, t.test = cfg.Batch, train, test
	t.rank, t.ranks = cfg.Rank, cfg.Ranks
	t.sampler = data.NewSampler(train.N, cfg.Batch, cfg.Seed, true, true)
	t.batches = nil
	return nil
}

// StepsPerEpoch is 60000/B: the last incomplete batch is dropped.
func (t *mnistTask) StepsPerEpoch() int {
	if t.sampler == nil {
		return 0
	}
	return t.sampler.Steps()
}

// TrainFeeds returns batch step of epoch epoch's shuffled order (this
// rank's shard of it in a data-parallel job).
func (t *mnistTask) TrainFeeds(a *memory.Allocator, epoch, step int) (Feeds, error) {
	if t.sampler == nil {
		return Feeds{}, fmt.Errorf("mnist: TrainFeeds before Load")
	}
	if epoch < 0 || step < 0 || step >= t.sampler.Steps() {
		return Feeds{}, fmt.Errorf("mnist: no step %d of epoch %d (%d steps per epoch)", step, epoch, t.sampler.Steps())
	}
	t.mu.Lock()
	if t.batches == nil || t.epoch != epoch {
		t.epoch, t.batches = epoch, t.sampler.Epoch(epoch)
	}
	idx, err := Shard(t.batches[step], t.rank, t.ranks)
	t.mu.Unlock()
	if err != nil {
		return Feeds{}, fmt.Errorf("mnist: %w", err)
	}
	x, y, err := t.train.Batch(a, idx)
	if err != nil {
		return Feeds{}, err
	}
	return Feeds{Tensors: map[string]*tensor.Tensor{"x": x, "label": y}}, nil
}

// Evaluate classifies the 10000 test images in batches of evalSize and returns the fraction whose argmax logit is the label. With
// evalBranch it also returns "branch", the fraction of test images whose
// batch took the then-branch of the model's if.
func (t *mnistTask) Evaluate(a *memory.Allocator, run Runner) (map[string]float64, error) {
	if t.test == nil {
		return nil, fmt.Errorf("mnist: Evaluate before Load")
	}
	n, batch := t.test.N, t.evalSize()
	idx := make([]int, 0, batch)
	var correct int
	var branch float64
	for lo := 0; lo < n; lo += batch {
		hi := min(lo+batch, n)
		idx = idx[:0]
		for i := lo; i < hi; i++ {
			idx = append(idx, i)
		}
		c, br, err := mnistEvalBatchRun(a, run, t.test, idx, t.evalBranch)
		if err != nil {
			return nil, err
		}
		correct += c
		branch += br * float64(hi-lo)
	}
	m := map[string]float64{"accuracy": float64(correct) / float64(n)}
	if t.evalBranch {
		m["branch"] = branch / float64(n)
	}
	return m, nil
}

// mnistEvalBatchRun runs one evaluation batch and counts the correct
// predictions; with branch it also reads the scalar "branch" fetch.
func mnistEvalBatchRun(a *memory.Allocator, run Runner, set *data.MNIST, idx []int, branch bool) (int, float64, error) {
	x, y, err := set.Batch(a, idx)
	if err != nil {
		return 0, 0, err
	}
	defer x.Release()
	defer y.Release()
	res, err := run(map[string]*tensor.Tensor{"x": x})
	if err != nil {
		return 0, 0, err
	}
	defer res.Release()
	logits, ok := res["logits"]
	if !ok {
		return 0, 0, fmt.Errorf("mnist: the evaluation program has no \"logits\" fetch")
	}
	if s := logits.Shape(); len(s) != 2 || s[0] != len(idx) || s[1] != data.MNISTClasses {
		return 0, 0, fmt.Errorf("mnist: logits of shape %v, want [%d %d]", s, len(idx), data.MNISTClasses)
	}
	correct := 0
	labels := y.I64()
	for i := range idx {
		if mnistArgmax(logits, i) == labels[i] {
			correct++
		}
	}
	var br float64
	if branch {
		bt, ok := res["branch"]
		if !ok {
			return 0, 0, fmt.Errorf("mnist: the evaluation program has no \"branch\" fetch")
		}
		br = bt.Float64At(0)
	}
	return correct, br, nil
}

// mnistArgmax is the index of the first largest logit of row i.
func mnistArgmax(logits *tensor.Tensor, i int) int64 {
	c := data.MNISTClasses
	best, arg := logits.Float64At(i*c), int64(0)
	for j := 1; j < c; j++ {
		if v := logits.Float64At(i*c + j); v > best {
			best, arg = v, int64(j)
		}
	}
	return arg
}

// mnistInput declares the feed "x", f32 [?,1,28,28], and returns it in
// m's dtype.
func mnistInput(b *ir.Builder, m *nn.Module) *ir.Value {
	return floatFeed(b, m, "x", -1, 1, data.MNISTRows, data.MNISTCols)
}

// mnistOutputs finishes a classifier from its logits [B,10]: the mean
// softmax cross-entropy against the feed "label" while training, the
// logits for Evaluate otherwise. extra are further fetches of both
// programs.
func mnistOutputs(b *ir.Builder, m *nn.Module, logits *ir.Value, extra map[string]*ir.Value) Outputs {
	fetches := map[string]*ir.Value{}
	for k, v := range extra {
		fetches[k] = v
	}
	if !m.Training {
		fetches["logits"] = logits
		return Outputs{Fetches: fetches}
	}
	label := ops.Data(b, "label", ir.I64, -1)
	ce, _ := ops.CrossEntropyWithSoftmax(b, logits, label, -1, -100)
	return Outputs{Loss: ops.ReduceMean(b, ce, nil, false), Fetches: fetches}
}
