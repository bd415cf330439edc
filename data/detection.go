package data

import "fmt"

// DetectionConfig describes a synthetic detection set. Zero fields take the
// defaults below; for EmptyFraction and EmptyBatchEvery a negative value
// means "none".
type DetectionConfig struct {
	N          int // images (default 2048)
	H, W       int // image height and width in pixels, >= 8 (default 32×32)
	NumClasses int // object classes, 1..6 (default 3)
	MaxBoxes   int // most objects per image, the box padding size (default 3)
	// MinObject and MaxObject bound each side of an object in pixels
	// (defaults MinObjectSize and MaxObjectSize; a side is also at most the
	// image's).
	MinObject, MaxObject int
	// EmptyFraction is the probability that an image of an ordinary batch
	// has no object (default 0.1).
	EmptyFraction float64
	// EmptyBatchEvery K makes every K-th batch of the layout hold only
	// images without objects: batches K-1, 2K-1, ... (default 8).
	EmptyBatchEvery int
	// BatchSize is the batch size the layout is built for (default 16).
	BatchSize int
	Seed      int64
}

// Defaults of DetectionConfig.
const (
	DefaultDetN               = 2048
	DefaultDetSize            = 32
	DefaultDetClasses         = 3
	DefaultDetMaxBoxes        = 3
	DefaultDetEmptyFraction   = 0.1
	DefaultDetEmptyBatchEvery = 8
	DefaultDetBatchSize       = 16
)

// Default object sizes: each side is uniform in [MinObject, min(MaxObject, H or W)].
const (
	MinObjectSize = 6
	MaxObjectSize = 14
)

// maxPlaceIoU is the largest IoU a new object may have with an earlier one
// of the same image; 20 placements are tried, then the last one is kept.
const maxPlaceIoU = 0.3

// WithDefaults returns c with zero fields replaced by the defaults and
// negative EmptyFraction / EmptyBatchEvery by 0.
func (c DetectionConfig) WithDefaults() DetectionConfig {
	def := func(v *int, d int) {
		if *v == 0 {
			*v = d
		}
	}
	def(&c.N, DefaultDetN)
	def(&c.H, DefaultDetSize)
	def(&c.W, DefaultDetSize)
	def(&c.NumClasses, DefaultDetClasses)
	def(&c.MaxBoxes, DefaultDetMaxBoxes)
	def(&c.MinObject, MinObjectSize)
	def(&c.MaxObject, MaxObjectSize)
	def(&c.EmptyBatchEvery, DefaultDetEmptyBatchEvery)
	def(&c.BatchSize, DefaultDetBatchSize)
	switch {
	case c.EmptyFraction == 0:
		c.EmptyFraction = DefaultDetEmptyFraction
	case c.EmptyFraction < 0:
		c.EmptyFraction = 0
	}
	if c.EmptyBatchEvery < 0 {
		c.EmptyBatchEvery = 0
	}
	return c
}

// Validate reports, in one line, why a configuration (after WithDefaults)
// cannot be built.
func (c DetectionConfig) Validate() error {
	c = c.WithDefaults()
	switch {
	case c.N < 1:
		return fmt.Errorf("detection: N = %d, need at least 1 image", c.N)
	case c.H < 8 || c.W < 8 || c.H > 4096 || c.W > 4096:
		return fmt.Errorf("detection: image size %dx%d, need 8..4096 on each side", c.H, c.W)
	case c.NumClasses < 1 || c.NumClasses > len(classStyles):
		return fmt.Errorf("detection: NumClasses = %d, need 1..%d", c.NumClasses, len(classStyles))
	case c.MaxBoxes < 1 || c.MaxBoxes > 64:
		return fmt.Errorf("detection: MaxBoxes = %d, need 1..64", c.MaxBoxes)
	case c.MinObject < 2 || c.MaxObject < c.MinObject:
		return fmt.Errorf("detection: object sides %d..%d pixels, need 2 <= MinObject <= MaxObject", c.MinObject, c.MaxObject)
	case c.MinObject > min(c.H, c.W):
		return fmt.Errorf("detection: MinObject = %d does not fit a %dx%d image", c.MinObject, c.H, c.W)
	case c.EmptyFraction > 1:
		return fmt.Errorf("detection: EmptyFraction = %g, need at most 1", c.EmptyFraction)
	case c.BatchSize < 1:
		return fmt.Errorf("detection: BatchSize = %d, need at least 1", c.BatchSize)
	}
	return nil
}

// Detection is a synthetic object-detection set, the same for the same
// configuration. Image i has 3 channels of H×W pixels in [0, 1]: uniform
// noise in [0, 0.35) with 0..MaxBoxes shapes painted over it, later ones on
// top. Each class is a distinct shape with its own color (see classStyles):
// 0 red filled rectangle, 1 green hollow rectangle, 2 blue cross, 3 yellow
// disk, 4 cyan ring, 5 magenta X. Sides are MinObject..MaxObject pixels
// (6..14 by default),
// positions uniform inside the image; a new shape overlaps an earlier one
// by an IoU of at most 0.3 unless 20 tries found no such place.
//
// The layout, for BatchSize B and EmptyBatchEvery K: the images are cut
// into consecutive batches of B (batch b holds images bB .. bB+B-1); every
// batch b with b%K == K-1 holds only images without objects ("empty
// batches": with the defaults batches 7, 15, 23, ...); in the other
// batches each image has no object with probability EmptyFraction and
// otherwise 1..MaxBoxes objects, uniformly. Sampler keeps this layout in
// every epoch, shuffled or not, so the training loop meets batches with and
// without ground truth at a known rate.
//
// Objects are drawn at construction (O(N·MaxBoxes) memory); pixels are
// drawn when a batch is made, from a random stream of their own.
type Detection struct {
	cfg  DetectionConfig
	objs [][]Object
}

// Object is one ground-truth object: its class and its box (x0, y0, x1, y1)
// in pixels, x1 and y1 exclusive, so the object covers x0 <= x < x1.
type Object struct {
	Class int
	Box   [4]float32
}

// NewDetection builds the set. It panics with Validate's message when the
// configuration is invalid; call Validate first on user input.
func NewDetection(cfg DetectionConfig) *Detection {
	if err := cfg.Validate(); err != nil {
		panic(err.Error())
	}
	cfg = cfg.WithDefaults()
	d := &Detection{cfg: cfg, objs: make([][]Object, cfg.N)}
	for i := range d.objs {
		d.objs[i] = d.makeObjects(i)
	}
	return d
}

// Config returns the configuration in effect, defaults filled in.
func (d *Detection) Config() DetectionConfig { return d.cfg }

// Len is the number of images.
func (d *Detection) Len() int { return d.cfg.N }

// Objects returns the objects of image i; do not modify them.
func (d *Detection) Objects(i int) []Object { return d.objs[i] }

// NumBatches is the number of batches of the layout, ceil(N/BatchSize).
func (d *Detection) NumBatches() int { return steps(d.cfg.N, d.cfg.BatchSize, false) }

// IsEmptyBatch says whether batch b of the layout (and of every epoch of
// Sampler) holds only images without objects.
func (d *Detection) IsEmptyBatch(b int) bool {
	k := d.cfg.EmptyBatchEvery
	return k > 0 && b%k == k-1
}

func (d *Detection) makeObjects(i int) []Object {
	c := d.cfg
	if d.IsEmptyBatch(i / c.BatchSize) {
		return nil
	}
	r := newRNG(c.Seed, streamID(domainDetObjects, i))
	if r.float64() < c.EmptyFraction {
		return nil
	}
	n := r.between(1, c.MaxBoxes)
	objs := make([]Object, 0, n)
	for range n {
		o := Object{Class: r.intn(c.NumClasses)}
		for try := 0; try < 20; try++ {
			w := r.between(c.MinObject, min(c.MaxObject, c.W))
			h := r.between(c.MinObject, min(c.MaxObject, c.H))
			x0, y0 := r.intn(c.W-w+1), r.intn(c.H-h+1)
			o.Box = [4]float32{float32(x0), float32(y0), float32(x0 + w), float32(y0 + h)}
			if !overlapsTooMuch(o.Box, objs) {
				break
			}
		}
		objs = append(objs, o)
	}
	return objs
}

func overlapsTooMuch(b [4]float32, objs []Object) bool {
	for _, o := range objs {
		if IoU(b, o.Box) > maxPlaceIoU {
			return true
		}
	}
	return false
}

// errIndex is returned for a dataset index out of range.
func errIndex(what string, i, n int) error {
	return fmt.Errorf("%s: index %d out of range [0, %d)", what, i, n)
}
