package models

import (
	"context"
	"math"
	"testing"

	"github.com/gopir/gopir/data"
	"github.com/gopir/gopir/exec"
	"github.com/gopir/gopir/ir"
	"github.com/gopir/gopir/ops"
	"github.com/gopir/gopir/tensor"
)

// tinydetRun builds a program with build, runs it once on feeds made by
// mk, and returns the fetches as float64 slices (and releases everything;
// the allocator must end empty).
func tinydetRun(t *testing.T, build func(b *ir.Builder) map[string]*ir.Value,
	mk func(e *exec.Executable) map[string]*tensor.Tensor) map[string][]float64 {
	t.Helper()
	b := ir.NewBuilder(ir.NewProgram())
	fetches := build(b)
	for n, v := range fetches {
		ops.Fetch(b, n, v)
	}
	p, err := b.Finish()
	if err != nil {
		t.Fatal(err)
	}
	e, err := exec.Compile(p, exec.Options{CheckLeaks: true})
	if err != nil {
		t.Fatal(err)
	}
	feeds := mk(e)
	res, err := e.Run(context.Background(), feeds)
	for _, f := range feeds {
		f.Release()
	}
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]float64{}
	for n, r := range res {
		v := make([]float64, r.Len())
		for i := range v {
			v[i] = r.Float64At(i)
		}
		out[n] = v
	}
	res.Release()
	if got := e.Allocator().Stats().Allocated.Current; got != 0 {
		t.Errorf("allocated %d bytes after releasing everything", got)
	}
	return out
}

func tinydetF32(t *testing.T, e *exec.Executable, v []float32, shape ...int) *tensor.Tensor {
	t.Helper()
	x, err := tensor.FromF32(e.Allocator(), v, shape...)
	if err != nil {
		t.Fatal(err)
	}
	return x
}

func tinydetI64(t *testing.T, e *exec.Executable, v []int64, shape ...int) *tensor.Tensor {
	t.Helper()
	x, err := tensor.FromI64(e.Allocator(), v, shape...)
	if err != nil {
		t.Fatal(err)
	}
	return x
}

func tinydetCell(row, col int) int { return row*tinydetGrid + col }

// TestDetAssign checks the target assignment on hand-made boxes: cells
// whose centre lies strictly inside a box are positive, the smaller box
// wins an overlap, padding boxes are ignored, an image without boxes has
// no positive cell.
func TestDetAssign(t *testing.T) {
	// Cell centres are at 2, 6, 10, ... pixels.
	boxes := []float32{
		// image 0
		0, 0, 8, 8, // class 1: centres 2, 6 in x and y -> cells (0,0) (0,1) (1,0) (1,1)
		4, 4, 13, 13, // class 2, larger: centres 6, 10 -> (1,1) (1,2) (2,1) (2,2); (1,1) goes to box 0
		0, 0, 32, 32, // padding (class -1): covers everything, must be ignored
		// image 1
		20, 24, 26, 30, // class 0: x centres 22 (26 is on the edge: not inside), y centre 26 -> (6,5)
		0, 0, 0, 0,
		0, 0, 0, 0,
	}
	classes := []int64{1, 2, -1, 0, -1, -1}
	got := tinydetRun(t, func(b *ir.Builder) map[string]*ir.Value {
		gb := ops.Data(b, "gt_boxes", ir.F32, -1, tinydetMaxBoxes, 4)
		gc := ops.Data(b, "gt_classes", ir.I64, -1, tinydetMaxBoxes)
		a := tinydetAssign(b, gb, gc)
		return map[string]*ir.Value{"pos": a.posF, "box": a.box, "labels": a.labels, "index": a.index}
	}, func(e *exec.Executable) map[string]*tensor.Tensor {
		return map[string]*tensor.Tensor{
			"gt_boxes":   tinydetF32(t, e, boxes, 2, tinydetMaxBoxes, 4),
			"gt_classes": tinydetI64(t, e, classes, 2, tinydetMaxBoxes),
		}
	})
	want := map[[2]int]int{} // (image, cell) -> slot
	for _, c := range [][2]int{{0, 0}, {0, 1}, {1, 0}, {1, 1}} {
		want[[2]int{0, tinydetCell(c[0], c[1])}] = 0
	}
	for _, c := range [][2]int{{1, 2}, {2, 1}, {2, 2}} {
		want[[2]int{0, tinydetCell(c[0], c[1])}] = 1
	}
	want[[2]int{1, tinydetCell(6, 5)}] = 3 // slot 0 of image 1
	for img := range 2 {
		for k := range tinydetCells {
			i := img*tinydetCells + k
			slot, isPos := want[[2]int{img, k}]
			if (got["pos"][i] == 1) != isPos {
				t.Errorf("image %d cell %d (row %d col %d): positive %v, want %v", img, k, k/tinydetGrid, k%tinydetGrid, got["pos"][i], isPos)
				continue
			}
			if !isPos {
				if got["labels"][i] != -100 {
					t.Errorf("image %d cell %d: label %v on a negative cell, want -100", img, k, got["labels"][i])
				}
				continue
			}
			if int(got["index"][i]) != slot%tinydetMaxBoxes {
				t.Errorf("image %d cell %d: slot %v, want %d", img, k, got["index"][i], slot%tinydetMaxBoxes)
			}
			if got["labels"][i] != float64(classes[slot]) {
				t.Errorf("image %d cell %d: label %v, want %d", img, k, got["labels"][i], classes[slot])
			}
			for j := range 4 {
				if got["box"][i*4+j] != float64(boxes[slot*4+j]) {
					t.Errorf("image %d cell %d: box %v, want %v", img, k, got["box"][i*4:i*4+4], boxes[slot*4:slot*4+4])
					break
				}
			}
		}
	}
}

// TestDetGIoU checks GIoU on box pairs worked out by hand.
func TestDetGIoU(t *testing.T) {
	cases := []struct {
		p, q [4]float32
		want float64
	}{
		{[4]float32{1, 2, 5, 7}, [4]float32{1, 2, 5, 7}, 1},             // identical
		{[4]float32{0, 0, 2, 2}, [4]float32{1, 1, 3, 3}, 1.0/7 - 2.0/9}, // inter 1, union 7, hull 9
		{[4]float32{0, 0, 1, 1}, [4]float32{2, 0, 3, 1}, -1.0 / 3},      // disjoint: hull 3, union 2
		{[4]float32{0, 0, 4, 4}, [4]float32{1, 1, 2, 2}, 1.0 / 16},      // contained: hull = union
		{[4]float32{0, 0, 1, 1}, [4]float32{9, 9, 10, 10}, 2.0/100 - 1}, // far apart: hull 100
	}
	var ps, qs []float32
	for _, c := range cases {
		ps = append(ps, c.p[:]...)
		qs = append(qs, c.q[:]...)
	}
	got := tinydetRun(t, func(b *ir.Builder) map[string]*ir.Value {
		p := ops.Data(b, "p", ir.F32, -1, 4)
		q := ops.Data(b, "q", ir.F32, -1, 4)
		return map[string]*ir.Value{"giou": tinydetGIoU(b, p, q), "sym": tinydetGIoU(b, q, p)}
	}, func(e *exec.Executable) map[string]*tensor.Tensor {
		return map[string]*tensor.Tensor{"p": tinydetF32(t, e, ps, len(cases), 4), "q": tinydetF32(t, e, qs, len(cases), 4)}
	})
	for i, c := range cases {
		for _, n := range []string{"giou", "sym"} {
			if math.Abs(got[n][i]-c.want) > 1e-5 {
				t.Errorf("%s(%v, %v) = %v, want %v", n, c.p, c.q, got[n][i], c.want)
			}
		}
	}
}

// TestDetLossTargets feeds head outputs that predict the ground truth
// exactly and checks that the box losses vanish, that the decoded boxes are
// the ground truth, and that wrong sides are charged by L1 in strides.
func TestDetLossTargets(t *testing.T) {
	boxes := []float32{3, 5, 15, 13, 20, 18, 27, 30, 0, 0, 0, 0}
	classes := []int64{2, 0, -1}
	// Exact side distances for every cell from the box that owns it (where
	// two boxes contain a cell the smaller wins; these two do not overlap).
	ltrb := make([]float32, tinydetCells*4)
	objL := make([]float32, tinydetCells)
	clsL := make([]float32, tinydetCells*tinydetClasses)
	for k := range tinydetCells {
		cx := float32(k%tinydetGrid*tinydetStride) + tinydetStride/2
		cy := float32(k/tinydetGrid*tinydetStride) + tinydetStride/2
		objL[k] = -30
		for j := range 4 {
			ltrb[k*4+j] = 1
		}
		for s := range 2 {
			x0, y0, x1, y1 := boxes[s*4], boxes[s*4+1], boxes[s*4+2], boxes[s*4+3]
			if cx > x0 && cx < x1 && cy > y0 && cy < y1 {
				copy(ltrb[k*4:], []float32{cx - x0, cy - y0, x1 - cx, y1 - cy})
				objL[k] = 30
				clsL[k*tinydetClasses+int(classes[s])] = 30
			}
		}
	}
	for _, off := range []float32{0, 2} {
		l := append([]float32(nil), ltrb...)
		for k := range tinydetCells {
			l[k*4+2] += off // move every right side by off pixels
		}
		got := tinydetRun(t, func(b *ir.Builder) map[string]*ir.Value {
			gb := ops.Data(b, "gt_boxes", ir.F32, -1, tinydetMaxBoxes, 4)
			gc := ops.Data(b, "gt_classes", ir.I64, -1, tinydetMaxBoxes)
			cls := ops.Data(b, "cls", ir.F32, -1, tinydetCells, tinydetClasses)
			obj := ops.Data(b, "obj", ir.F32, -1, tinydetCells)
			lt := ops.Data(b, "ltrb", ir.F32, -1, tinydetCells, 4)
			box := ops.Add(b, tinydetCentres4(b, ir.F32), ops.Multiply(b, lt, tinydetSigns(b, ir.F32)))
			a := tinydetAssign(b, gb, gc)
			ls := tinydetPositiveLoss(b, a, cls, obj, lt, box)
			return map[string]*ir.Value{"obj": ls.obj, "cls": ls.cls, "l1": ls.l1, "giou": ls.giou, "npos": ls.positives,
				"box": box, "tbox": a.box, "pos": a.posF}
		}, func(e *exec.Executable) map[string]*tensor.Tensor {
			return map[string]*tensor.Tensor{
				"gt_boxes":   tinydetF32(t, e, boxes, 1, tinydetMaxBoxes, 4),
				"gt_classes": tinydetI64(t, e, classes, 1, tinydetMaxBoxes),
				"cls":        tinydetF32(t, e, clsL, 1, tinydetCells, tinydetClasses),
				"obj":        tinydetF32(t, e, objL, 1, tinydetCells),
				"ltrb":       tinydetF32(t, e, l, 1, tinydetCells, 4),
			}
		})
		// Box 0 contains centres x 6,10,14 × y 6,10 (6 cells), box 1 x 22,26 × y 22,26 (4 cells).
		if got["npos"][0] != 10 {
			t.Fatalf("positives = %v, want 10", got["npos"][0])
		}
		for _, n := range []string{"obj", "cls"} {
			if got[n][0] > 1e-6 {
				t.Errorf("offset %v: %s loss %v for a perfect prediction", off, n, got[n][0])
			}
		}
		if off == 0 {
			if got["l1"][0] > 1e-6 || math.Abs(got["giou"][0]) > 1e-5 {
				t.Errorf("perfect boxes: L1 %v, 1-GIoU %v, want 0", got["l1"][0], got["giou"][0])
			}
			for i, p := range got["pos"] {
				if p == 1 {
					for j := range 4 {
						if math.Abs(got["box"][i*4+j]-got["tbox"][i*4+j]) > 1e-5 {
							t.Fatalf("cell %d: decoded box %v, target %v", i, got["box"][i*4:i*4+4], got["tbox"][i*4:i*4+4])
						}
					}
				}
			}
			continue
		}
		if math.Abs(got["l1"][0]-float64(off)/tinydetStride) > 1e-5 {
			t.Errorf("right sides off by %v px: L1 %v, want %v", off, got["l1"][0], off/tinydetStride)
		}
		if got["giou"][0] < 0.05 {
			t.Errorf("right sides off by %v px: 1-GIoU %v, want clearly positive", off, got["giou"][0])
		}
	}
}

// TestDetDecode checks scoring, per-class NMS and the score threshold.
func TestDetDecode(t *testing.T) {
	box := make([]float32, tinydetCells*4)
	obj := make([]float32, tinydetCells)
	cls := make([]float32, tinydetCells*tinydetClasses)
	set := func(k int, b [4]float32, o float32, c int, p float32) {
		copy(box[k*4:], b[:])
		obj[k] = o
		cls[k*tinydetClasses+c] = p
	}
	set(0, [4]float32{0, 0, 10, 10}, 0.9, 0, 1)   // kept: 0.9
	set(1, [4]float32{1, 0, 11, 10}, 0.8, 0, 1)   // IoU 0.82 with cell 0, same class: suppressed
	set(2, [4]float32{1, 0, 11, 10}, 0.7, 1, 1)   // same box, other class: kept
	set(3, [4]float32{20, 20, 30, 30}, 0.5, 0, 1) // far away: kept
	set(4, [4]float32{0, 0, 5, 10}, 0.6, 0, 1)    // IoU 0.5 with cell 0: not above the threshold, kept
	set(5, [4]float32{5, 5, 9, 9}, 0.1, 0, 0.05)  // score 0.005 < 0.01: dropped
	got := tinydetDecode(7, box, obj, cls)
	want := []data.Prediction{
		{Image: 7, Class: 0, Score: 0.9, Box: [4]float32{0, 0, 10, 10}},
		{Image: 7, Class: 1, Score: 0.7, Box: [4]float32{1, 0, 11, 10}},
		{Image: 7, Class: 0, Score: 0.6, Box: [4]float32{0, 0, 5, 10}},
		{Image: 7, Class: 0, Score: 0.5, Box: [4]float32{20, 20, 30, 30}},
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
