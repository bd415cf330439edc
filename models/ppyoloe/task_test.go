package ppyoloe

import (
	"context"
	"math"
	"strings"
	"testing"

	"github.com/gopir/gopir/data"
	"github.com/gopir/gopir/exec"
	"github.com/gopir/gopir/ir"
	"github.com/gopir/gopir/memory"
	"github.com/gopir/gopir/models"
	"github.com/gopir/gopir/nn"
	"github.com/gopir/gopir/ops"
	"github.com/gopir/gopir/tensor"
)

func TestSetImageSize(t *testing.T) {
	d := &task{size: DefaultImageSize}
	for _, bad := range []int{0, 16, 100, 2048} {
		if err := d.SetImageSize(bad); err == nil || !strings.Contains(err.Error(), "multiple of 32") {
			t.Errorf("SetImageSize(%d): %v", bad, err)
		}
	}
	if err := d.SetImageSize(96); err != nil || d.size != 96 {
		t.Errorf("SetImageSize(96): %v, size %d", err, d.size)
	}
}

func TestBuildDeployedTrainingRefused(t *testing.T) {
	d := &task{size: 64, deploy: true}
	_, err := d.Build(ir.NewBuilder(ir.NewProgram()), nn.NewModule(ir.F32, true))
	if err == nil || !strings.Contains(err.Error(), "evaluation only") {
		t.Errorf("deployed training program: %v", err)
	}
}

// TestAnchors runs the anchor ops: points at the cell centres, levels in
// strides' order (32, 16, 8), row-major within a level.
func TestAnchors(t *testing.T) {
	b := ir.NewBuilder(ir.NewProgram())
	p, s := anchors(b, ir.F32, 64)
	ops.Fetch(b, "p", p)
	ops.Fetch(b, "s", s)
	prog, err := b.Finish()
	if err != nil {
		t.Fatal(err)
	}
	x, err := exec.Compile(prog, exec.Options{})
	if err != nil {
		t.Fatal(err)
	}
	res, err := x.Run(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Release()
	pts, st := res["p"].F32(), res["s"].F32()
	if len(st) != 4+16+64 {
		t.Fatalf("%d anchors", len(st))
	}
	for _, c := range []struct {
		i          int
		x, y, strd float32
	}{{0, 16, 16, 32}, {1, 48, 16, 32}, {2, 16, 48, 32}, {4, 8, 8, 16}, {5, 24, 8, 16}, {8, 8, 24, 16}, {20, 4, 4, 8}, {83, 60, 60, 8}} {
		if pts[2*c.i] != c.x || pts[2*c.i+1] != c.y || st[c.i] != c.strd {
			t.Errorf("anchor %d: (%v, %v) stride %v, want (%v, %v) stride %v", c.i, pts[2*c.i], pts[2*c.i+1], st[c.i], c.x, c.y, c.strd)
		}
	}
}

// TestDetect: thresholds, per-class NMS, the cap and the order.
func TestDetect(t *testing.T) {
	const l = 5
	scores := make([]float32, l*numClasses)
	boxes := make([]float32, l*4)
	set := func(k, c int, s float32, box [4]float32) {
		scores[k*numClasses+c] = s
		copy(boxes[k*4:], box[:])
	}
	set(0, 2, 0.9, [4]float32{10, 10, 50, 50})
	set(1, 2, 0.8, [4]float32{12, 12, 52, 52}) // IoU 0.83 with anchor 0, same class: suppressed
	set(2, 3, 0.7, [4]float32{12, 12, 52, 52}) // another class: kept
	set(3, 2, 0.6, [4]float32{100, 100, 140, 140})
	set(4, 1, 0.005, [4]float32{0, 0, 9, 9}) // below scoreMin
	got := detect(7, scores, boxes)
	want := []data.Prediction{
		{Image: 7, Class: 2, Score: 0.9, Box: [4]float32{10, 10, 50, 50}},
		{Image: 7, Class: 3, Score: 0.7, Box: [4]float32{12, 12, 52, 52}},
		{Image: 7, Class: 2, Score: 0.6, Box: [4]float32{100, 100, 140, 140}},
	}
	if len(got) != len(want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("detection %d: %+v, want %+v", i, got[i], want[i])
		}
	}
}

// TestEvaluatePerfect runs Evaluate with a runner that predicts the ground
// truth (each box at the free anchor nearest its centre): mAP@0.5 is 1;
// with no prediction it is 0; the allocator is back to zero.
func TestEvaluatePerfect(t *testing.T) {
	const size = 64
	d := &task{size: size}
	if err := d.Load(models.DataConfig{Batch: 2}); err != nil {
		t.Fatal(err)
	}
	a := memory.New(memory.Options{})
	var pts [][2]float32
	for _, s := range strides {
		g := size / s
		for r := range g {
			for c := range g {
				pts = append(pts, [2]float32{float32(s)*float32(c) + float32(s)/2, float32(s)*float32(r) + float32(s)/2})
			}
		}
	}
	l := len(pts)
	run := func(feeds map[string]*tensor.Tensor) (exec.Results, error) {
		n := feeds["image"].Shape()[0]
		sc, err := tensor.Zeros(a, tensor.F32, n, l, numClasses)
		if err != nil {
			return nil, err
		}
		bx, err := tensor.Zeros(a, tensor.F32, n, l, 4)
		if err != nil {
			sc.Release()
			return nil, err
		}
		return exec.Results{"scores": sc, "boxes": bx}, nil
	}
	// The runner above predicts nothing; the one below fills in the truth.
	var next int
	perfect := func(feeds map[string]*tensor.Tensor) (exec.Results, error) {
		res, err := run(feeds)
		if err != nil {
			return nil, err
		}
		n := feeds["image"].Shape()[0]
		for k := range n {
			used := map[int]bool{}
			for _, o := range d.test.Objects(next + k) {
				cx, cy := (o.Box[0]+o.Box[2])/2, (o.Box[1]+o.Box[3])/2
				best, bd := 0, math.Inf(1)
				for i, p := range pts {
					if dd := math.Hypot(float64(p[0]-cx), float64(p[1]-cy)); dd < bd && !used[i] {
						best, bd = i, dd
					}
				}
				used[best] = true
				res["scores"].F32()[(k*l+best)*numClasses+o.Class] = 1
				copy(res["boxes"].F32()[(k*l+best)*4:], o.Box[:])
			}
		}
		next += n
		return res, nil
	}
	m, err := d.Evaluate(a, perfect)
	if err != nil {
		t.Fatal(err)
	}
	if m["map50"] != 1 {
		t.Errorf("map50 %.4f with the ground truth as predictions", m["map50"])
	}
	next = 0
	if m, err = d.Evaluate(a, run); err != nil || m["map50"] != 0 {
		t.Errorf("no predictions: map50 %v, %v", m["map50"], err)
	}
	if n := a.Stats().Allocated.Current; n != 0 {
		t.Errorf("%d bytes left", n)
	}
}
