package ppyoloe

import (
	"fmt"

	"github.com/gopir/gopir/data"
	"github.com/gopir/gopir/memory"
	"github.com/gopir/gopir/models"
	"github.com/gopir/gopir/tensor"
)

// Post-processing of the design's evaluation: candidates above a score,
// the best of them, per-class NMS, the best detections.
const (
	scoreMin = 0.01 // (anchor, class) pairs below this score are dropped
	nmsTopK  = 1000 // candidates kept before NMS
	nmsIoU   = 0.7  // per-class NMS threshold
	keepTopK = 100  // detections kept per image
)

// Evaluate runs the evaluation program over the held-out set (256 images,
// fixed seed) in batches of EvalBatch (evalBatch by default) and returns {"map50": mAP@0.5}.
func (d *task) Evaluate(a *memory.Allocator, run models.Runner) (map[string]float64, error) {
	if d.test == nil {
		return nil, fmt.Errorf("%s: Evaluate before Load", Name)
	}
	m, err := data.SetMAP50(d.test, d.EvalBatch(), func(idx []int) ([]data.Prediction, error) {
		return predict(a, d.test, idx, run)
	})
	if err != nil {
		return nil, err
	}
	return map[string]float64{"map50": m}, nil
}

// predict runs images idx of set through run and decodes them.
func predict(a *memory.Allocator, set *data.Detection, idx []int, run models.Runner) ([]data.Prediction, error) {
	bt, err := set.Batch(a, idx)
	if err != nil {
		return nil, err
	}
	defer bt.Release()
	res, err := run(map[string]*tensor.Tensor{"image": bt.Images})
	if err != nil {
		return nil, err
	}
	defer res.Release()
	scores, boxes := res["scores"], res["boxes"]
	if scores == nil || boxes == nil {
		return nil, fmt.Errorf("%s: the evaluation program lacks scores or boxes", Name)
	}
	sh := scores.Shape()
	if len(sh) != 3 || sh[0] != len(idx) || sh[2] != numClasses {
		return nil, fmt.Errorf("%s: scores are %v, want [%d, L, %d]", Name, sh, len(idx), numClasses)
	}
	l := sh[1]
	var out []data.Prediction
	for k, image := range idx {
		out = append(out, detect(image,
			scores.F32()[k*l*numClasses:(k+1)*l*numClasses],
			boxes.F32()[k*l*4:(k+1)*l*4])...)
	}
	return out, nil
}

// detect turns one image's per-anchor class probabilities [L·C] and boxes
// [L·4] into detections: every (anchor, class) above scoreMin, the best
// nmsTopK of them, per-class NMS at nmsIoU, the best keepTopK. Ties keep
// the lower anchor and class first, so the result is deterministic.
func detect(image int, scores, boxes []float32) []data.Prediction {
	var cand []data.Prediction
	for k := range len(scores) / numClasses {
		for c := range numClasses {
			s := scores[k*numClasses+c]
			if !(s > scoreMin) {
				continue
			}
			cand = append(cand, data.Prediction{Image: image, Class: c, Score: s,
				Box: [4]float32{boxes[k*4], boxes[k*4+1], boxes[k*4+2], boxes[k*4+3]}})
		}
	}
	return data.NMS(cand, nmsIoU, nmsTopK, keepTopK)
}
