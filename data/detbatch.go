package data

import (
	"github.com/gopir/gopir/memory"
	"github.com/gopir/gopir/tensor"
)

// DetBatch is one batch of the detection set. The caller owns its tensors
// and frees them with Release.
type DetBatch struct {
	Images  *tensor.Tensor // f32 [B,3,H,W], values in [0, 1]
	Boxes   *tensor.Tensor // f32 [B,MaxBoxes,4], (x0,y0,x1,y1) in pixels, zero padding
	Classes *tensor.Tensor // i64 [B,MaxBoxes], -1 padding
	NumGTs  int            // real boxes in the batch, all images together
	Index   []int          // the dataset indices, a copy of Batch's idx
}

// Release releases the tensors; a second call does nothing.
func (b *DetBatch) Release() {
	for _, t := range []**tensor.Tensor{&b.Images, &b.Boxes, &b.Classes} {
		if *t != nil {
			(*t).Release()
			*t = nil
		}
	}
}

// Batch renders images idx with their padded ground truth. The real boxes
// of each image come first, in the order of Objects. An index out of range
// is an error and allocates nothing; so is an allocator failure, after
// releasing what was taken.
func (d *Detection) Batch(a *memory.Allocator, idx []int) (*DetBatch, error) {
	c := d.cfg
	for _, i := range idx {
		if i < 0 || i >= c.N {
			return nil, errIndex("detection", i, c.N)
		}
	}
	bs := len(idx)
	out := &DetBatch{Index: append([]int(nil), idx...)}
	var err error
	if out.Images, err = tensor.New(a, tensor.F32, bs, 3, c.H, c.W); err == nil {
		if out.Boxes, err = tensor.Zeros(a, tensor.F32, bs, c.MaxBoxes, 4); err == nil {
			out.Classes, err = tensor.New(a, tensor.I64, bs, c.MaxBoxes)
		}
	}
	if err != nil {
		out.Release()
		return nil, err
	}
	img, boxes, classes := out.Images.F32(), out.Boxes.F32(), out.Classes.I64()
	for j := range classes {
		classes[j] = -1
	}
	per := 3 * c.H * c.W
	for k, i := range idx {
		d.render(i, img[k*per:(k+1)*per])
		for m, o := range d.objs[i] {
			copy(boxes[(k*c.MaxBoxes+m)*4:], o.Box[:])
			classes[k*c.MaxBoxes+m] = int64(o.Class)
		}
		out.NumGTs += len(d.objs[i])
	}
	return out, nil
}

// GroundTruth lists the objects of images idx for MAP50, with Image set to
// the dataset index (predictions must use the same numbering).
func (d *Detection) GroundTruth(idx []int) []GTBox {
	var out []GTBox
	for _, i := range idx {
		for _, o := range d.objs[i] {
			out = append(out, GTBox{Image: i, Class: o.Class, Box: o.Box})
		}
	}
	return out
}
