package ppyoloe

import (
	"fmt"

	"github.com/gopir/gopir/ir"
	"github.com/gopir/gopir/ops"
)

// neck is CustomCSPPAN: a top-down path (C5 → P5 with SPP, then 1×1 route,
// nearest ×2 upsampling and concatenation into C4 and C3) and a bottom-up
// path (3×3 stride-2 routes concatenated with the top-down outputs), a CSP
// stage at each step. feats are C3, C4, C5; it returns P5, P4, P3.
func (n *net) neck(feats []*ir.Value) []*ir.Value {
	c := neckChannels
	blocks := []*ir.Value{feats[2], feats[1], feats[0]}
	fpn := make([]*ir.Value, 3)
	var route *ir.Value
	for i, x := range blocks {
		if i > 0 {
			x = ops.Concat(n.b, 1, route, x)
		}
		route = n.cspStage(fmt.Sprintf("neck.fpn_stages.%d.0", i), x, c[i], i == 0)
		fpn[i] = route
		if i < 2 {
			route = n.convBN(fmt.Sprintf("neck.fpn_routes.%d", i), route, c[i]/2, 1, 1, true)
			route = upsample2(n.b, route)
		}
	}
	pan := []*ir.Value{fpn[2]}
	route = fpn[2]
	for i := 1; i >= 0; i-- {
		down := n.convBN(fmt.Sprintf("neck.pan_routes.%d", i), route, c[i+1], 3, 2, true)
		route = n.cspStage(fmt.Sprintf("neck.pan_stages.%d.0", i), ops.Concat(n.b, 1, down, fpn[i]), c[i], false)
		pan = append(pan, route)
	}
	return []*ir.Value{pan[2], pan[1], pan[0]}
}

// cspStage splits x into two 1×1 convs of out/2 channels, runs neckBlocks
// basic blocks (no shortcut; SPP after the middle one when spp is set) on
// the second, concatenates and applies a 1×1 conv to out channels.
func (n *net) cspStage(name string, x *ir.Value, out int, spp bool) *ir.Value {
	mid := out / 2
	y1 := n.convBN(name+".conv1", x, mid, 1, 1, true)
	y2 := n.convBN(name+".conv2", x, mid, 1, 1, true)
	for i := range neckBlocks {
		y2 = n.basicBlock(fmt.Sprintf("%s.convs.%d", name, i), y2, mid, false)
		if spp && i == (neckBlocks-1)/2 {
			y2 = n.spp(name+".convs.spp", y2, mid)
		}
	}
	return n.convBN(name+".conv3", ops.Concat(n.b, 1, y1, y2), out, 1, 1, true)
}

// spp is spatial pyramid pooling: x with its stride-1 max-pools of sizes
// 5, 9 and 13 (padded to keep the size) concatenated, then a 1×1 conv.
func (n *net) spp(name string, x *ir.Value, out int) *ir.Value {
	parts := []*ir.Value{x}
	for _, k := range []int{5, 9, 13} {
		p, _ := ops.MaxPool2D(n.b, x, []int{k, k}, []int{1, 1}, []int{k / 2, k / 2})
		parts = append(parts, p)
	}
	return n.convBN(name+".conv", ops.Concat(n.b, 1, parts...), out, 1, 1, true)
}

// upsample2 is nearest-neighbour ×2 upsampling of NCHW x: output pixel
// (y, x) copies input pixel (⌊y/2⌋, ⌊x/2⌋).
func upsample2(b *ir.Builder, x *ir.Value) *ir.Value {
	d := x.Type().Dims
	return ops.Resize(b, x, []int{2, 3}, []int{2 * d[2], 2 * d[3]}, []float64{2, 2},
		ops.ResizeOptions{Mode: "nearest", CoordinateTransformationMode: "asymmetric", NearestMode: "floor"})
}
