package ops

import (
	"fmt"
	"math"

	"github.com/gopir/gopir/ir"
	"github.com/gopir/gopir/kernels"
	"github.com/gopir/gopir/tensor"
)

// Non-maximum suppression (ONNX's NonMaxSuppression).
//
//	non_max_suppression {center_point_box = false}
//	    (boxes, scores, max_output_boxes_per_class, iou_threshold[, score_threshold]) -> i64 [?, 3]
//
// boxes is [batches, spatial, 4], two diagonal corners (y1, x1, y2, x2) in
// either order, or with center_point_box (x_center, y_center, width,
// height); scores is [batches, classes, spatial], of boxes' dtype (f32 or
// f64). max_output_boxes_per_class (i64), iou_threshold and
// score_threshold (of boxes' dtype) hold one element each. For each batch
// item and class in turn, the boxes whose score is above score_threshold
// (all boxes without it) are visited by descending score, ties by
// ascending index; a box is selected unless its intersection over union
// with a box selected before is above iou_threshold, until
// max_output_boxes_per_class are (none when it is <= 0). Each selected
// box is a row (batch, class, box index) of the result, in that order.
// The number of rows is known only at run time.
//
// The run is refused (*RefusedError) where readings of ONNX's
// NonMaxSuppression differ: a score equal to score_threshold (removed by
// ONNX's reference, kept by its text), NaN in boxes, scores or the score
// threshold; it fails for an iou_threshold outside [0, 1]. No gradient
// flows (NoGrad): the result is integer.

func init() {
	register(&Def{Name: "non_max_suppression", Infer: nmsInfer, Bind: nmsBind, NoGrad: true})
}

func nmsInfer(in []ir.Type, attrs ir.Attrs) ([]ir.Type, error) {
	if len(in) != 4 && len(in) != 5 {
		return nil, fmt.Errorf("takes boxes, scores, max_output_boxes_per_class, iou_threshold and an optional score_threshold; got %d operands", len(in))
	}
	if _, err := nnBool(attrs, "center_point_box", false); err != nil {
		return nil, err
	}
	boxes, scores := in[0], in[1]
	if err := nnWantFloat("boxes", boxes); err != nil {
		return nil, err
	}
	if boxes.Rank() != 3 || !nnDimEq(boxes.Dims[2], 4) {
		return nil, fmt.Errorf("boxes %s must be [batches, spatial, 4]", boxes)
	}
	if scores.DType != boxes.DType || scores.Rank() != 3 || !nnDimEq(scores.Dims[0], boxes.Dims[0]) || !nnDimEq(scores.Dims[2], boxes.Dims[1]) {
		return nil, fmt.Errorf("scores %s must be [batches, classes, spatial] of %s for boxes %s", scores, boxes.DType, boxes)
	}
	for i, t := range in[2:] {
		what := []string{"max_output_boxes_per_class", "iou_threshold", "score_threshold"}[i]
		dt := boxes.DType
		if i == 0 {
			dt = ir.I64
		}
		if t.DType != dt || t.IsStatic() && t.NumElements() != 1 {
			return nil, fmt.Errorf("%s %s must hold one %s", what, t, dt)
		}
	}
	return []ir.Type{ir.TensorOf(ir.I64, ir.Dynamic, 3)}, nil
}

func nmsBind(op *ir.Op) (Kernel, error) {
	center, err := nnBool(op.Attrs, "center_point_box", false)
	if err != nil {
		return nil, err
	}
	return func(c *Ctx, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
		boxes, scores := in[0], in[1]
		bd, sd := boxes.Shape(), scores.Shape()
		if bd[2] != 4 || sd[0] != bd[0] || sd[2] != bd[1] {
			return nil, fmt.Errorf("boxes %s and scores %s do not fit [batches, spatial, 4] and [batches, classes, spatial]", boxes.Type(), scores.Type())
		}
		for i, t := range in[2:] {
			if t.Len() != 1 {
				return nil, fmt.Errorf("operand %d %s does not hold one element", i+2, t.Type())
			}
		}
		maxOut := in[2].I64()[0]
		iou := in[3].Float64At(0)
		hasThreshold := len(in) == 5
		var threshold float64
		if hasThreshold {
			threshold = in[4].Float64At(0)
		}
		if !(iou >= 0 && iou <= 1) {
			return nil, fmt.Errorf("iou_threshold %v is not in [0, 1]", iou)
		}
		if math.IsNaN(threshold) {
			return nil, refused("score_threshold is NaN")
		}
		for i := range boxes.Len() {
			if math.IsNaN(boxes.Float64At(i)) {
				return nil, refused("boxes %s hold NaN", boxes.Type())
			}
		}
		for i := range scores.Len() {
			switch v := scores.Float64At(i); {
			case math.IsNaN(v):
				return nil, refused("scores %s hold NaN", scores.Type())
			case hasThreshold && v == threshold:
				return nil, refused("a score equals score_threshold %v: ONNX's text keeps such a box, its reference removes it", threshold)
			}
		}
		var sel [][3]int64
		if boxes.DType() == tensor.F32 {
			sel = kernels.NMS(boxes.F32(), scores.F32(), bd[0], sd[1], bd[1], center, maxOut, float32(iou), float32(threshold), hasThreshold)
		} else {
			sel = kernels.NMS(boxes.F64(), scores.F64(), bd[0], sd[1], bd[1], center, maxOut, iou, threshold, hasThreshold)
		}
		y, err := c.New(ir.I64, []int{len(sel), 3})
		if err != nil {
			return nil, err
		}
		for i, s := range sel {
			copy(y.I64()[3*i:3*i+3], s[:])
		}
		return c.Result(y), nil
	}, nil
}

// NonMaxSuppression appends the selection of boxes by score and overlap;
// scoreThreshold may be nil.
func NonMaxSuppression(b *ir.Builder, boxes, scores, maxOut, iouThreshold, scoreThreshold *ir.Value, centerPointBox bool) *ir.Value {
	operands := []*ir.Value{boxes, scores, maxOut, iouThreshold}
	if scoreThreshold != nil {
		operands = append(operands, scoreThreshold)
	}
	return b.Op1("non_max_suppression", ir.A("center_point_box", centerPointBox), operands...)
}
