package data

import (
	"bytes"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/gopir/gopir/memory"
)

func TestDetectionBatch(t *testing.T) {
	a := newAlloc(t)
	d := NewDetection(DetectionConfig{N: 256, Seed: 3})
	c := d.Config()
	if c.H != 32 || c.W != 32 || c.NumClasses != 3 || c.MaxBoxes != 3 || c.EmptyFraction != 0.1 || c.EmptyBatchEvery != 8 || c.BatchSize != 16 {
		t.Fatalf("defaults: %+v", c)
	}
	idx := []int{0, 5, 200, 17}
	b, err := d.Batch(a, idx)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Release()
	for _, tc := range [][2]string{
		{b.Images.Type(), "tensor<4x3x32x32xf32>"},
		{b.Boxes.Type(), "tensor<4x3x4xf32>"},
		{b.Classes.Type(), "tensor<4x3xi64>"},
	} {
		if tc[0] != tc[1] {
			t.Errorf("got %s, want %s", tc[0], tc[1])
		}
	}
	for _, v := range b.Images.F32() {
		if !(v >= 0 && v <= 1) {
			t.Fatalf("pixel %v outside [0, 1]", v)
		}
	}
	boxes, classes := b.Boxes.F32(), b.Classes.I64()
	gts := 0
	for k, i := range idx {
		objs := d.Objects(i)
		for m := range c.MaxBoxes {
			box := boxes[(k*c.MaxBoxes+m)*4 : (k*c.MaxBoxes+m+1)*4]
			cl := classes[k*c.MaxBoxes+m]
			if m >= len(objs) {
				if cl != -1 || !slices.Equal(box, []float32{0, 0, 0, 0}) {
					t.Errorf("image %d slot %d: padding %d %v", i, m, cl, box)
				}
				continue
			}
			gts++
			if cl != int64(objs[m].Class) || !slices.Equal(box, objs[m].Box[:]) {
				t.Errorf("image %d slot %d: %d %v, want %+v", i, m, cl, box, objs[m])
			}
		}
	}
	if b.NumGTs != gts || !slices.Equal(b.Index, idx) {
		t.Errorf("NumGTs %d (want %d), Index %v", b.NumGTs, gts, b.Index)
	}
	if _, err := d.Batch(a, []int{3, 256}); err == nil || !strings.Contains(err.Error(), "index 256 out of range") {
		t.Errorf("out of range: %v", err)
	}
	b.Release()
	b.Release() // a second Release does nothing
}

func TestDetectionObjects(t *testing.T) {
	d := NewDetection(DetectionConfig{N: 4096, Seed: 1})
	c := d.Config()
	var perCount [4]int
	var perClass [3]int
	ordinary, emptyOrdinary := 0, 0
	for i := range c.N {
		objs := d.Objects(i)
		if d.IsEmptyBatch(i / c.BatchSize) {
			if len(objs) != 0 {
				t.Fatalf("image %d of an empty batch has %d objects", i, len(objs))
			}
			continue
		}
		ordinary++
		if len(objs) == 0 {
			emptyOrdinary++
		}
		perCount[len(objs)]++
		for _, o := range objs {
			perClass[o.Class]++
			w, h := o.Box[2]-o.Box[0], o.Box[3]-o.Box[1]
			if w < MinObjectSize || w > MaxObjectSize || h < MinObjectSize || h > MaxObjectSize ||
				o.Box[0] < 0 || o.Box[1] < 0 || o.Box[2] > float32(c.W) || o.Box[3] > float32(c.H) {
				t.Fatalf("image %d: box %v", i, o.Box)
			}
		}
	}
	if f := float64(emptyOrdinary) / float64(ordinary); f < 0.08 || f > 0.12 {
		t.Errorf("%.3f of the images of ordinary batches are empty, want about 0.1", f)
	}
	for n := 1; n <= 3; n++ {
		if perCount[n] < ordinary/4 {
			t.Errorf("%d images with %d objects of %d", perCount[n], n, ordinary)
		}
	}
	for cl, k := range perClass {
		if k < perClass[0]*8/10 || k > perClass[0]*12/10 {
			t.Errorf("class counts %v unbalanced (class %d)", perClass, cl)
		}
	}
}

// TestDetectionEmptyBatches walks epochs as a trainer does: batches
// without any ground truth come exactly at the documented positions.
func TestDetectionEmptyBatches(t *testing.T) {
	a := newAlloc(t)
	for _, cfg := range []DetectionConfig{
		{Seed: 5},
		{N: 100, BatchSize: 6, EmptyBatchEvery: 3, Seed: 6},
		{N: 64, BatchSize: 4, EmptyBatchEvery: -1, EmptyFraction: -1, Seed: 7},
	} {
		d := NewDetection(cfg)
		c := d.Config()
		for _, shuffle := range []bool{false, true} {
			s := d.Sampler(11, shuffle, false)
			for e := range 2 {
				ep := s.Epoch(e)
				if len(ep) != s.Steps() || s.Steps() != d.NumBatches() {
					t.Fatalf("%+v: %d batches, Steps %d, NumBatches %d", c, len(ep), s.Steps(), d.NumBatches())
				}
				checkCover(t, ep, c.N, 0)
				empty := 0
				for k, idx := range ep {
					b, err := d.Batch(a, idx)
					if err != nil {
						t.Fatal(err)
					}
					if (b.NumGTs == 0) != d.IsEmptyBatch(k) {
						t.Errorf("%+v shuffle %v epoch %d batch %d: NumGTs %d", c, shuffle, e, k, b.NumGTs)
					}
					if b.NumGTs == 0 {
						empty++
					}
					b.Release()
				}
				want := 0
				if k := c.EmptyBatchEvery; k > 0 {
					want = len(ep) / k
				}
				if empty != want {
					t.Errorf("%+v: %d empty batches of %d, want %d", c, empty, len(ep), want)
				}
			}
		}
	}
	// Defaults: 128 batches of 16, every 8th empty.
	if d := NewDetection(DetectionConfig{}); d.NumBatches() != 128 || !d.IsEmptyBatch(7) || d.IsEmptyBatch(8) || !d.IsEmptyBatch(127) {
		t.Error("default layout")
	}
}

func TestDetSampler(t *testing.T) {
	d := NewDetection(DetectionConfig{N: 100, BatchSize: 8, Seed: 2})
	s := d.Sampler(4, true, true)
	if s.Steps() != 12 {
		t.Errorf("Steps %d, want 12", s.Steps())
	}
	ep := s.Epoch(0)
	if len(ep) != 12 || len(ep[11]) != 8 {
		t.Errorf("drop last: %d batches", len(ep))
	}
	if slices.EqualFunc(ep, s.Epoch(1), slices.Equal) {
		t.Error("epochs 0 and 1 equal")
	}
	if !slices.EqualFunc(ep, d.Sampler(4, true, true).Epoch(0), slices.Equal) {
		t.Error("same seed, different epoch")
	}
	if slices.EqualFunc(ep, d.Sampler(5, true, true).Epoch(0), slices.Equal) {
		t.Error("different seeds, same epoch")
	}
	plain := d.Sampler(4, false, false).Epoch(9)
	if len(plain) != 13 || !slices.Equal(slices.Concat(plain...), identity(100)) {
		t.Error("unshuffled layout is not 0..N-1")
	}
}

func TestDetectionDeterminism(t *testing.T) {
	a := newAlloc(t)
	idx := []int{3, 1, 4, 1, 5, 9, 2, 6}
	get := func(seed int64) [3][]byte {
		b, err := NewDetection(DetectionConfig{N: 64, Seed: seed}).Batch(a, idx)
		if err != nil {
			t.Fatal(err)
		}
		defer b.Release()
		return [3][]byte{bytes.Clone(b.Images.Raw()), bytes.Clone(b.Boxes.Raw()), bytes.Clone(b.Classes.Raw())}
	}
	x, y, z := get(1), get(1), get(2)
	for k := range 3 {
		if !bytes.Equal(x[k], y[k]) {
			t.Errorf("tensor %d differs for the same seed", k)
		}
		if bytes.Equal(x[k], z[k]) {
			t.Errorf("tensor %d equal for seeds 1 and 2", k)
		}
	}
}

// TestDetectionLooks checks that the classes are told apart by color:
// inside an object not overlapped by another, its class's brightest
// channel is the brightest on average.
func TestDetectionLooks(t *testing.T) {
	a := newAlloc(t)
	d := NewDetection(DetectionConfig{N: 64, NumClasses: 6, Seed: 8})
	c := d.Config()
	b, err := d.Batch(a, identity(64))
	if err != nil {
		t.Fatal(err)
	}
	defer b.Release()
	img := b.Images.F32()
	checked := 0
	for i := range 64 {
		objs := d.Objects(i)
	next:
		for j, o := range objs {
			for k, p := range objs {
				if k != j && IoU(o.Box, p.Box) > 0 {
					continue next
				}
			}
			var sum [3]float64
			for y := int(o.Box[1]); y < int(o.Box[3]); y++ {
				for x := int(o.Box[0]); x < int(o.Box[2]); x++ {
					for ch := range 3 {
						sum[ch] += float64(img[((i*3+ch)*c.H+y)*c.W+x])
					}
				}
			}
			col := classStyles[o.Class].color
			for ch := range 3 {
				for ch2 := range 3 {
					if col[ch] == 1 && col[ch2] < 0.5 && sum[ch] <= sum[ch2] {
						t.Errorf("image %d %s: channel sums %v", i, ClassName(o.Class), sum)
					}
				}
			}
			checked++
		}
	}
	if checked < 30 {
		t.Errorf("only %d isolated objects", checked)
	}
}

func TestDetectionOOM(t *testing.T) {
	d := NewDetection(DetectionConfig{N: 8, Seed: 1})
	// Room for the images (8·3·32·32·4 bytes) only.
	a := newLimited(t, 8*3*32*32*4)
	_, err := d.Batch(a, identity(8))
	var oom *memory.ResourceExhausted
	if !errors.As(err, &oom) {
		t.Fatalf("got %v, want an OOM", err)
	}
}

func TestDetectionConfigErrors(t *testing.T) {
	for _, c := range []struct {
		cfg  DetectionConfig
		want string
	}{
		{DetectionConfig{N: -1}, "N = -1"},
		{DetectionConfig{H: 4}, "image size 4x32"},
		{DetectionConfig{NumClasses: 7}, "NumClasses = 7"},
		{DetectionConfig{MaxBoxes: -2}, "MaxBoxes = -2"},
		{DetectionConfig{EmptyFraction: 1.5}, "EmptyFraction = 1.5"},
		{DetectionConfig{BatchSize: -3}, "BatchSize = -3"},
		{DetectionConfig{MinObject: 20, MaxObject: 10}, "object sides 20..10"},
		{DetectionConfig{MinObject: 1}, "object sides 1..14"},
		{DetectionConfig{MinObject: 40, MaxObject: 50}, "MinObject = 40 does not fit a 32x32 image"},
	} {
		err := c.cfg.Validate()
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v, want %q", c.cfg, err, c.want)
			continue
		}
		func() {
			defer func() {
				if r := recover(); r != err.Error() {
					t.Errorf("NewDetection(%+v) panicked with %v", c.cfg, r)
				}
			}()
			NewDetection(c.cfg)
		}()
	}
	// Small images keep boxes inside.
	d := NewDetection(DetectionConfig{N: 50, H: 8, W: 12, Seed: 1})
	for i := range 50 {
		for _, o := range d.Objects(i) {
			if o.Box[2] > 12 || o.Box[3] > 8 {
				t.Fatalf("box %v outside 12x8", o.Box)
			}
		}
	}
}

// TestDetectionLargeScene is the scale ppyoloe_s trains at: 320×320 images
// with 1–20 objects of 12–96 pixels, every side within the bounds and the
// image, and rendering still deterministic.
func TestDetectionLargeScene(t *testing.T) {
	a := newAlloc(t)
	d := NewDetection(DetectionConfig{N: 64, H: 320, W: 320, NumClasses: 6, MaxBoxes: 20, MinObject: 12, MaxObject: 96, BatchSize: 8, Seed: 4})
	most := 0
	for i := range d.Len() {
		objs := d.Objects(i)
		most = max(most, len(objs))
		for _, o := range objs {
			w, h := o.Box[2]-o.Box[0], o.Box[3]-o.Box[1]
			if w < 12 || w > 96 || h < 12 || h > 96 || o.Box[0] < 0 || o.Box[1] < 0 || o.Box[2] > 320 || o.Box[3] > 320 {
				t.Fatalf("image %d: box %v", i, o.Box)
			}
		}
	}
	if most < 15 {
		t.Errorf("at most %d objects in 64 images of up to 20", most)
	}
	b, err := d.Batch(a, []int{0, 1})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Release()
	if got := b.Images.Type(); got != "tensor<2x3x320x320xf32>" {
		t.Errorf("images %s", got)
	}
	if got := b.Boxes.Type(); got != "tensor<2x20x4xf32>" {
		t.Errorf("boxes %s", got)
	}
}
