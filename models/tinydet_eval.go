package models

import (
	"fmt"

	"github.com/gopir/gopir/data"
	"github.com/gopir/gopir/memory"
	"github.com/gopir/gopir/tensor"
)

// Decoding settings of tinydet's evaluation.
const (
	tinydetScoreMin = 0.01 // candidates below this score are dropped
	tinydetNMSIoU   = 0.5  // per-class NMS threshold
	tinydetTopK     = 50   // most detections kept per image
)

// Evaluate runs the evaluation program over the held-out set (256 images,
// fixed seed) in batches of EvalBatch (64 by default), decodes the detections and returns
// {"map50": mAP@0.5}.
func (d *tinydet) Evaluate(a *memory.Allocator, run Runner) (map[string]float64, error) {
	if d.test == nil {
		return nil, fmt.Errorf("tinydet: Evaluate before Load")
	}
	m, err := data.SetMAP50(d.test, d.EvalBatch(), func(idx []int) ([]data.Prediction, error) {
		return tinydetPredict(a, d.test, idx, run)
	})
	if err != nil {
		return nil, err
	}
	return map[string]float64{"map50": m}, nil
}

// tinydetPredict runs images idx of set through run and decodes them.
func tinydetPredict(a *memory.Allocator, set *data.Detection, idx []int, run Runner) ([]data.Prediction, error) {
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
	box, obj, cls := res["box"], res["obj"], res["cls"]
	if box == nil || obj == nil || cls == nil {
		return nil, fmt.Errorf("tinydet: the evaluation program lacks box, obj or cls")
	}
	var out []data.Prediction
	for k, image := range idx {
		out = append(out, tinydetDecode(image,
			box.F32()[k*tinydetCells*4:(k+1)*tinydetCells*4],
			obj.F32()[k*tinydetCells:(k+1)*tinydetCells],
			cls.F32()[k*tinydetCells*tinydetClasses:(k+1)*tinydetCells*tinydetClasses])...)
	}
	return out, nil
}

// tinydetDecode turns one image's cell outputs into detections: score =
// objectness·class probability for every (cell, class) above
// tinydetScoreMin, per-class NMS at IoU tinydetNMSIoU, then the
// tinydetTopK best. Ties keep the lower cell first, so the result is
// deterministic.
func tinydetDecode(image int, box, obj, cls []float32) []data.Prediction {
	var cand []data.Prediction
	for k := range tinydetCells {
		for c := range tinydetClasses {
			s := obj[k] * cls[k*tinydetClasses+c]
			if s < tinydetScoreMin {
				continue
			}
			cand = append(cand, data.Prediction{Image: image, Class: c, Score: s,
				Box: [4]float32{box[k*4], box[k*4+1], box[k*4+2], box[k*4+3]}})
		}
	}
	return data.NMS(cand, tinydetNMSIoU, 0, tinydetTopK)
}
