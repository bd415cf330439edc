package ops_test

import (
	"math"
	"math/rand/v2"
	"sort"
	"strings"
	"testing"

	"github.com/gopir/gopir/ir"
	"github.com/gopir/gopir/memory"
	"github.com/gopir/gopir/tensor"
)

// Tests of non_max_suppression (nms.go) against a naive reference in
// float64, written from ONNX's description: corners normalized, greedy
// selection by score, suppression by intersection over union.

func nmsRef(boxes, scores []float64, batches, classes, spatial int, center bool, maxOut int, iou, threshold float64, hasThreshold bool) []float64 {
	corners := func(b, i int) (y0, x0, y1, x1 float64) {
		v := boxes[(b*spatial+i)*4:]
		if center {
			return v[1] - v[3]/2, v[0] - v[2]/2, v[1] + v[3]/2, v[0] + v[2]/2
		}
		return math.Min(v[0], v[2]), math.Min(v[1], v[3]), math.Max(v[0], v[2]), math.Max(v[1], v[3])
	}
	var out []float64
	for b := range batches {
		for c := range classes {
			var cand []int
			for i := range spatial {
				if !hasThreshold || scores[(b*classes+c)*spatial+i] > threshold {
					cand = append(cand, i)
				}
			}
			sort.SliceStable(cand, func(p, q int) bool {
				return scores[(b*classes+c)*spatial+cand[p]] > scores[(b*classes+c)*spatial+cand[q]]
			})
			var kept []int
			for _, i := range cand {
				if len(kept) >= maxOut {
					break
				}
				ok := true
				for _, j := range kept {
					ay0, ax0, ay1, ax1 := corners(b, i)
					by0, bx0, by1, bx1 := corners(b, j)
					ih, iw := math.Min(ay1, by1)-math.Max(ay0, by0), math.Min(ax1, bx1)-math.Max(ax0, bx0)
					if ih <= 0 || iw <= 0 {
						continue
					}
					inter := ih * iw
					union := (ay1-ay0)*(ax1-ax0) + (by1-by0)*(bx1-bx0) - inter
					if inter/union > iou {
						ok = false
						break
					}
				}
				if ok {
					kept = append(kept, i)
					out = append(out, float64(b), float64(c), float64(i))
				}
			}
		}
	}
	return out
}

func TestNMS(t *testing.T) {
	r := rand.New(rand.NewPCG(51, 52))
	a := memory.New(memory.Options{})
	scalar := func(dt tensor.DType, v float64) *tensor.Tensor {
		s, err := tensor.Scalar(a, dt, v)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	for k := range 60 {
		batches, classes, spatial := 1+r.IntN(2), 1+r.IntN(3), r.IntN(12)
		center := k%2 == 1
		boxes, err := tensor.New(a, tensor.F64, batches, spatial, 4)
		if err != nil {
			t.Fatal(err)
		}
		// Coordinates on a grid of quarters (exact), sizes >= 0.
		for i := range boxes.Len() {
			boxes.F64()[i] = float64(r.IntN(24)) / 4
		}
		scores, _ := tensor.New(a, tensor.F64, batches, classes, spatial)
		for i := range scores.Len() {
			scores.F64()[i] = float64(r.IntN(1000))/1000 + 1e-4 // ties possible, never the threshold
		}
		maxOut := r.IntN(5)
		iou := []float64{0, 0.3, 0.5, 1}[r.IntN(4)]
		hasThreshold := r.IntN(2) == 0
		in := []*tensor.Tensor{boxes, scores, scalar(tensor.I64, float64(maxOut)), scalar(tensor.F64, iou)}
		if hasThreshold {
			in = append(in, scalar(tensor.F64, 0.4))
		}
		want := nmsRef(boxes.F64(), scores.F64(), batches, classes, spatial, center, maxOut, iou, 0.4, hasThreshold)
		out := mustRun(t, a, "non_max_suppression", ir.A("center_point_box", center), in...)
		closeEnough(t, "non_max_suppression", out[0], want, []int{len(want) / 3, 3}, 0)
		// In f32 too.
		in32 := make([]*tensor.Tensor, len(in))
		for i, x := range in {
			in32[i] = x
			if x.DType() == tensor.F64 {
				in32[i], _ = tensor.New(a, tensor.F32, x.Shape()...)
				for j, v := range x.F64() {
					in32[i].F32()[j] = float32(v)
				}
			}
		}
		out32 := mustRun(t, a, "non_max_suppression", ir.A("center_point_box", center), in32...)
		nnSameBits(t, "non_max_suppression f32", out32[0], out[0])
		for i, x := range in32 {
			if x != in[i] {
				x.Release()
			}
		}
		release(out[0], out32[0])
		release(in...)
	}
	wantAllocated(t, a, 0)
}

func TestNMSErrorsAndMemory(t *testing.T) {
	f32, i64 := ir.F32, ir.I64
	for _, c := range []struct {
		in   []ir.Type
		want string
	}{
		{[]ir.Type{shpT(f32, 1, 2, 4), shpT(f32, 1, 1, 2), shpT(i64)}, "takes boxes"},
		{[]ir.Type{shpT(f32, 1, 2, 3), shpT(f32, 1, 1, 2), shpT(i64), shpT(f32)}, "[batches, spatial, 4]"},
		{[]ir.Type{shpT(f32, 1, 2, 4), shpT(f32, 1, 1, 3), shpT(i64), shpT(f32)}, "[batches, classes, spatial]"},
		{[]ir.Type{shpT(f32, 1, 2, 4), shpT(ir.F64, 1, 1, 2), shpT(i64), shpT(f32)}, "[batches, classes, spatial]"},
		{[]ir.Type{shpT(f32, 1, 2, 4), shpT(f32, 1, 1, 2), shpT(ir.I32), shpT(f32)}, "max_output_boxes_per_class"},
		{[]ir.Type{shpT(f32, 1, 2, 4), shpT(f32, 1, 1, 2), shpT(i64), shpT(f32, 2)}, "iou_threshold"},
		{[]ir.Type{shpT(ir.I32, 1, 2, 4), shpT(ir.I32, 1, 1, 2), shpT(i64), shpT(ir.I32)}, "boxes"},
	} {
		shpWantErr(t, "non_max_suppression", nil, c.in, c.want)
	}
	a := memory.New(memory.Options{})
	f := func(vs ...float32) *tensor.Tensor {
		x, _ := tensor.FromF32(a, vs, len(vs))
		return x
	}
	boxes, _ := tensor.FromF32(a, []float32{0, 0, 1, 1, 0, 0.1, 1, 1.1}, 1, 2, 4)
	scores, _ := tensor.FromF32(a, []float32{0.9, 0.5}, 1, 1, 2)
	nanScores, _ := tensor.FromF32(a, []float32{0.9, float32(math.NaN())}, 1, 1, 2)
	three, _ := tensor.FromI64(a, []int64{3}, 1)
	for _, c := range []struct {
		in   []*tensor.Tensor
		want string
	}{
		{[]*tensor.Tensor{boxes, scores, three, f(0.5), f(0.5)}, "equals score_threshold"},
		{[]*tensor.Tensor{boxes, scores, three, f(1.5)}, "not in [0, 1]"},
		{[]*tensor.Tensor{boxes, nanScores, three, f(0.5)}, "NaN"},
		{[]*tensor.Tensor{boxes, scores, three, f(0.5), f(float32(math.NaN()))}, "NaN"},
	} {
		shpWantKernelErr(t, a, "non_max_suppression", nil, shpTypes(true, c.in...), c.in, c.want)
		for _, x := range c.in[3:] {
			x.Release()
		}
	}
	iou := f(0.5)
	base := a.Stats().Allocated.Current
	for range 50 {
		out := mustRun(t, a, "non_max_suppression", nil, boxes, scores, three, iou)
		closeEnough(t, "two overlapping boxes", out[0], []float64{0, 0, 0}, []int{1, 3}, 0)
		release(out...)
		if _, err := runOp(t, a, "non_max_suppression", nil, boxes, nanScores, three, iou); err == nil || !strings.Contains(err.Error(), "NaN") {
			t.Fatalf("NaN scores: %v", err)
		}
		wantAllocated(t, a, base)
	}
	checkOOMSweep(t, "non_max_suppression", nil, boxes, scores, three, iou)
	release(boxes, scores, nanScores, three, iou)
	wantAllocated(t, a, 0)
}
