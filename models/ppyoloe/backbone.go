package ppyoloe

import (
	"fmt"

	"github.com/gopir/gopir/ir"
	"github.com/gopir/gopir/ops"
)

// The -s model's sizes: the base design's channels times the width
// multiplier 0.50 and its depths times the depth multiplier 0.33, rounded.
var (
	backboneChannels = [5]int{32, 64, 128, 256, 512} // stem, then the four stages' outputs
	backboneDepths   = [4]int{1, 2, 2, 1}            // basic blocks per stage
	neckChannels     = [3]int{384, 192, 96}          // P5, P4, P3
)

// neckBlocks is the number of basic blocks in each CSP stage of the neck.
const neckBlocks = 1

// backbone is CSPResNet: a three-conv stem (the first of stride 2) and four
// CSP stages of stride 2 with RepVGG basic blocks and effective-SE; it
// returns the last three stages' outputs (strides 8, 16, 32).
func (n *net) backbone(img *ir.Value) []*ir.Value {
	c := backboneChannels
	x := n.convBN("backbone.stem.0", img, c[0]/2, 3, 2, true)
	x = n.convBN("backbone.stem.1", x, c[0]/2, 3, 1, true)
	x = n.convBN("backbone.stem.2", x, c[0], 3, 1, true)
	var outs []*ir.Value
	for i := range 4 {
		x = n.cspResStage(fmt.Sprintf("backbone.stages.%d", i), x, c[i+1], backboneDepths[i])
		if i >= 1 {
			outs = append(outs, x)
		}
	}
	return outs
}

// cspResStage halves the resolution with a 3×3 conv to mid = (in+out)/2
// channels, splits into two 1×1 convs of mid/2 channels, runs depth basic
// blocks (with shortcuts) on one, concatenates, applies effective-SE and a
// 1×1 conv to out channels.
func (n *net) cspResStage(name string, x *ir.Value, out, depth int) *ir.Value {
	mid := (x.Type().Dims[1] + out) / 2
	x = n.convBN(name+".conv_down", x, mid, 3, 2, true)
	y1 := n.convBN(name+".conv1", x, mid/2, 1, 1, true)
	y2 := n.convBN(name+".conv2", x, mid/2, 1, 1, true)
	for j := range depth {
		y2 = n.basicBlock(fmt.Sprintf("%s.blocks.%d", name, j), y2, mid/2, true)
	}
	y := n.effectiveSE(name+".attn", ops.Concat(n.b, 1, y1, y2))
	return n.convBN(name+".conv3", y, out, 1, 1, true)
}
