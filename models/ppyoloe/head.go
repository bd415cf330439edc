package ppyoloe

import (
	"fmt"
	"math"

	"github.com/gopir/gopir/ir"
	"github.com/gopir/gopir/nn"
	"github.com/gopir/gopir/ops"
)

// Head settings of the design.
const (
	regMax = 16 // the box distribution has regMax+1 bins per side
	bins   = regMax + 1
	// clsPrior is the initial class probability: the class conv starts at
	// zero weights and bias −log((1−p)/p).
	clsPrior = 0.01
	// eseInitStd is the spread of the head's attention fcs at start.
	eseInitStd = 0.001
)

// strides are the head's levels in the neck's output order (P5, P4, P3).
var strides = [3]int{32, 16, 8}

// head is the efficient task-aligned head: per level, an ESE attention
// (shared pooled features, one for each branch), a 3×3 class conv on the
// attended features plus the input, and a 3×3 box conv predicting a
// distribution of bins over each side's distance. It returns the class
// logits [B,L,C] and distributions [B,L,4·bins], anchors of the levels
// concatenated in strides' order (row-major within a level).
func (n *net) head(feats []*ir.Value, classes int) (cls, reg *ir.Value) {
	var clsL, regL []*ir.Value
	for i, f := range feats {
		avg := ops.ReduceMean(n.b, f, []int{2, 3}, true)
		logit := n.conv(fmt.Sprintf("head.pred_cls.%d", i),
			ops.Add(n.b, n.eseAttn(fmt.Sprintf("head.stem_cls.%d", i), f, avg), f),
			classes, 3, 1, true, nn.Zeros, nn.Constant(-math.Log((1-clsPrior)/clsPrior)))
		dist := n.conv(fmt.Sprintf("head.pred_reg.%d", i), n.eseAttn(fmt.Sprintf("head.stem_reg.%d", i), f, avg),
			4*bins, 3, 1, true, nn.Zeros, nn.Ones)
		clsL = append(clsL, cellsLast(n.b, logit))
		regL = append(regL, cellsLast(n.b, dist))
	}
	return ops.Concat(n.b, 1, clsL...), ops.Concat(n.b, 1, regL...)
}

// eseAttn scales feat per channel by sigmoid(fc(avg)) and applies a 1×1
// conv-BN-swish.
func (n *net) eseAttn(name string, feat, avg *ir.Value) *ir.Value {
	c := feat.Type().Dims[1]
	w := ops.Sigmoid(n.b, n.conv(name+".fc", avg, c, 1, 1, true, nn.Normal{Std: eseInitStd}, nn.Zeros))
	return n.convBN(name+".conv", ops.Multiply(n.b, feat, w), c, 1, 1, true)
}

// cellsLast turns NCHW x into [N, H·W, C].
func cellsLast(b *ir.Builder, x *ir.Value) *ir.Value {
	d := x.Type().Dims
	return ops.Transpose(b, ops.Reshape(b, x, -1, d[1], d[2]*d[3]), 0, 2, 1)
}

// anchors returns the anchor points [L,2] (x, y of each cell's centre in
// pixels) and their strides [L,1], levels in strides' order.
func anchors(b *ir.Builder, dt ir.DType, size int) (points, stride *ir.Value) {
	var pts, sts []*ir.Value
	for _, s := range strides {
		g := size / s
		c := ops.Arange(b, dt, float64(s)/2, float64(g*s), float64(s)) // [g]
		zeros := ops.Full(b, dt, 0, g, g)
		x := ops.Reshape(b, ops.Add(b, ops.Reshape(b, c, 1, g), zeros), g*g, 1)
		y := ops.Reshape(b, ops.Add(b, ops.Reshape(b, c, g, 1), zeros), g*g, 1)
		pts = append(pts, ops.Concat(b, 1, x, y))
		sts = append(sts, ops.Full(b, dt, float64(s), g*g, 1))
	}
	return ops.Concat(b, 0, pts...), ops.Concat(b, 0, sts...)
}

// decode turns the distributions [B,L,4·bins] into boxes [B,L,4]
// (x0, y0, x1, y1) around pointsS [L,2], in the same unit (strides): each
// side's distance is the expectation of its softmax over 0..regMax.
func decode(b *ir.Builder, reg, pointsS *ir.Value) *ir.Value {
	dt := reg.Type().DType
	l := reg.Type().Dims[1]
	p := ops.Softmax(b, ops.Reshape(b, reg, -1, l, 4, bins), -1)
	proj := ops.Reshape(b, ops.Arange(b, dt, 0, bins, 1), bins, 1)
	d := ops.Reshape(b, ops.Matmul(b, p, proj, false, false), -1, l, 4)
	lt, rb := splitPairs(b, d)
	return ops.Concat(b, -1, ops.Subtract(b, pointsS, lt), ops.Add(b, pointsS, rb))
}

// splitPairs splits [..., 4] into its first and last two entries.
func splitPairs(b *ir.Builder, x *ir.Value) (lo, hi *ir.Value) {
	s := ops.Split(b, x, -1, 2, 2)
	return s[0], s[1]
}
