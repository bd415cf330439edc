package data

import (
	"fmt"

	"github.com/gopir/gopir/memory"
	"github.com/gopir/gopir/tensor"
)

// SequenceConfig describes a synthetic sequence-classification set. Zero
// fields take the defaults below.
type SequenceConfig struct {
	N              int // samples (default 4096)
	MinLen, MaxLen int // sequence lengths, uniform in [MinLen, MaxLen] (default 4..16)
	D              int // vocabulary size = input width, <= 256 (default 8)
	NumClasses     int // K, the signal tokens 0..K-1 and the classes, 2 <= K <= D (default 3)
	Seed           int64
}

// Defaults of SequenceConfig.
const (
	DefaultSeqN       = 4096
	DefaultSeqMinLen  = 4
	DefaultSeqMaxLen  = 16
	DefaultSeqD       = 8
	DefaultSeqClasses = 3
)

// WithDefaults returns c with zero fields replaced by the defaults.
func (c SequenceConfig) WithDefaults() SequenceConfig {
	def := func(v *int, d int) {
		if *v == 0 {
			*v = d
		}
	}
	def(&c.N, DefaultSeqN)
	def(&c.MinLen, DefaultSeqMinLen)
	def(&c.MaxLen, max(DefaultSeqMaxLen, c.MinLen))
	def(&c.D, DefaultSeqD)
	def(&c.NumClasses, DefaultSeqClasses)
	return c
}

// Validate reports, in one line, why a configuration (after WithDefaults)
// cannot be built.
func (c SequenceConfig) Validate() error {
	c = c.WithDefaults()
	switch {
	case c.N < 1:
		return fmt.Errorf("sequences: N = %d, need at least 1 sample", c.N)
	case c.MinLen < 1 || c.MaxLen < c.MinLen || c.MaxLen > 1<<16:
		return fmt.Errorf("sequences: lengths %d..%d, need 1 <= MinLen <= MaxLen <= 65536", c.MinLen, c.MaxLen)
	case c.D < 2 || c.D > 256:
		return fmt.Errorf("sequences: D = %d, need 2..256", c.D)
	case c.NumClasses < 2 || c.NumClasses > c.D:
		return fmt.Errorf("sequences: NumClasses = %d, need 2..D (%d)", c.NumClasses, c.D)
	}
	return nil
}

// Sequences is a synthetic task for a recurrent network whose loop trip
// count comes from the data. Sample i is a sequence of L tokens, L uniform
// in [MinLen, MaxLen], each token uniform in [0, D), fed as one-hot vectors
// of width D. Its label is the signal token (0..K-1) that occurs most
// often; draws where that maximum is not unique (a tie, or no signal token
// at all) are redrawn, so every label is well defined.
//
// Solving it needs memory over the whole sequence (a running count per
// signal token), the classes are balanced by symmetry, and chance accuracy
// is about 1/K, while a bag-of-tokens count solves it exactly, so a small
// GRU or LSTM can get far above chance in a few hundred steps.
//
// A batch must hold sequences of one length T, so that the loop runs T
// times for the whole batch: Sampler groups samples into such batches.
type Sequences struct {
	cfg     SequenceConfig
	offsets []int // tokens of sample i are tokens[offsets[i]:offsets[i+1]]
	tokens  []uint8
	labels  []uint8
	lengths []int
}

// NewSequences builds the set. It panics with Validate's message when the
// configuration is invalid; call Validate first on user input.
func NewSequences(cfg SequenceConfig) *Sequences {
	if err := cfg.Validate(); err != nil {
		panic(err.Error())
	}
	cfg = cfg.WithDefaults()
	s := &Sequences{
		cfg:     cfg,
		offsets: make([]int, cfg.N+1),
		labels:  make([]uint8, cfg.N),
		lengths: make([]int, cfg.N),
	}
	counts := make([]int, cfg.NumClasses)
	for i := range cfg.N {
		r := newRNG(cfg.Seed, streamID(domainSequences, i))
		l := r.between(cfg.MinLen, cfg.MaxLen)
		start := len(s.tokens)
		for {
			s.tokens = s.tokens[:start]
			clear(counts)
			for range l {
				t := r.intn(cfg.D)
				s.tokens = append(s.tokens, uint8(t))
				if t < cfg.NumClasses {
					counts[t]++
				}
			}
			if y, ok := uniqueMax(counts); ok {
				s.labels[i] = uint8(y)
				break
			}
		}
		s.lengths[i] = l
		s.offsets[i+1] = len(s.tokens)
	}
	return s
}

// uniqueMax returns the index of the largest count when it is positive and
// no other count equals it.
func uniqueMax(counts []int) (int, bool) {
	best, ties := 0, 0
	for k, c := range counts {
		switch {
		case c > counts[best]:
			best, ties = k, 0
		case c == counts[best] && k != best:
			ties++
		}
	}
	return best, counts[best] > 0 && ties == 0
}

// Config returns the configuration in effect, defaults filled in.
func (s *Sequences) Config() SequenceConfig { return s.cfg }

// Len is the number of samples.
func (s *Sequences) Len() int { return s.cfg.N }

// Length is the length of sample i.
func (s *Sequences) Length(i int) int { return s.lengths[i] }

// Lengths returns every sample's length; do not modify it.
func (s *Sequences) Lengths() []int { return s.lengths }

// Label is the class of sample i.
func (s *Sequences) Label(i int) int { return int(s.labels[i]) }

// Tokens returns the tokens of sample i; do not modify them.
func (s *Sequences) Tokens(i int) []uint8 { return s.tokens[s.offsets[i]:s.offsets[i+1]] }

// Batch returns the samples idx, which must all have the same length T:
// x, f32 [T,B,D] time-major with x[t,b,:] the one-hot token t of sample
// idx[b], and y, i64 [B], the labels. The caller owns and releases x and y.
// An empty idx, an index out of range or mixed lengths is an error and
// allocates nothing.
func (s *Sequences) Batch(a *memory.Allocator, idx []int) (x, y *tensor.Tensor, T int, err error) {
	if len(idx) == 0 {
		return nil, nil, 0, fmt.Errorf("sequences: empty batch")
	}
	for _, i := range idx {
		if i < 0 || i >= s.cfg.N {
			return nil, nil, 0, errIndex("sequences", i, s.cfg.N)
		}
	}
	T = s.lengths[idx[0]]
	for _, i := range idx {
		if s.lengths[i] != T {
			return nil, nil, 0, fmt.Errorf("sequences: batch mixes lengths %d (sample %d) and %d (sample %d); use Sampler for equal-length batches", T, idx[0], s.lengths[i], i)
		}
	}
	B, D := len(idx), s.cfg.D
	if x, err = tensor.Zeros(a, tensor.F32, T, B, D); err != nil {
		return nil, nil, 0, err
	}
	if y, err = tensor.New(a, tensor.I64, B); err != nil {
		x.Release()
		return nil, nil, 0, err
	}
	xs, ys := x.F32(), y.I64()
	for b, i := range idx {
		for t, tok := range s.Tokens(i) {
			xs[(t*B+b)*D+int(tok)] = 1
		}
		ys[b] = int64(s.labels[i])
	}
	return x, y, T, nil
}

// Sampler returns a BucketSampler over the samples' lengths.
func (s *Sequences) Sampler(batch int, seed int64, shuffle, dropLast bool) *BucketSampler {
	return NewBucketSampler(s.lengths, batch, seed, shuffle, dropLast)
}
