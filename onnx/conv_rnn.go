package onnx

import (
	"strings"

	"github.com/gopir/gopir/ir"
	"github.com/gopir/gopir/ops"
)

// The recurrent layers RNN, GRU and LSTM become one "while" per direction
// over the time steps, built from matmul, add, the activations and
// scatter_nd, so that they run and differentiate like any other program
// (autodiff keeps each step's residuals on its tapes). Only the hidden
// (and cell) state is carried from step to step; the Y output is a
// [T, batch, hidden] tensor the loop carries and writes step t into in
// place, so memory does not grow with the sequence length except for Y
// itself (and, when differentiating, the residuals).
//
// Step t of a direction (t runs down from T−1 for reverse) computes, with
// xₜ = X[t], W, R, the biases Wb and Rb and the peepholes P of the
// direction (gate order as ONNX: RNN i; GRU z, r, h; LSTM i, o, f, c):
//
//	RNN   Hₜ = f(xₜWᵢᵀ + Hₜ₋₁Rᵢᵀ + Wbᵢ + Rbᵢ)
//	GRU   z = f(xₜW_zᵀ + Hₜ₋₁R_zᵀ + Wb_z + Rb_z), r likewise,
//	      h = g(xₜW_hᵀ + (r ⊙ Hₜ₋₁)R_hᵀ + Rb_h + Wb_h)
//	      (linear_before_reset: g(xₜW_hᵀ + r ⊙ (Hₜ₋₁R_hᵀ + Rb_h) + Wb_h)),
//	      Hₜ = (1 − z) ⊙ h + z ⊙ Hₜ₋₁
//	LSTM  i = f(xₜW_iᵀ + Hₜ₋₁R_iᵀ + P_i ⊙ Cₜ₋₁ + Wb_i + Rb_i), f likewise
//	      with P_f (or 1 − i with input_forget), c = g(… + Wb_c + Rb_c),
//	      Cₜ = f ⊙ Cₜ₋₁ + i ⊙ c, o = f(… + P_o ⊙ Cₜ + Wb_o + Rb_o),
//	      Hₜ = o ⊙ h(Cₜ)
//
// clip bounds the input of every activation to [−clip, clip] for RNN and
// GRU; for LSTM implementations disagree on whether it also bounds Cₜ
// before h, so it is refused there. With sequence_lens, batch item b takes
// only the steps t < len[b] (for reverse, from len[b]−1 down): the others
// leave its state as it was and write zeros to Y, so Y_h and Y_c are the
// states after its last step, as ONNX Runtime computes them.

func init() {
	register(convRecurrent, "RNN", "GRU", "LSTM")
}

// rnnAct is an activation of a recurrent layer.
type rnnAct func(b *ir.Builder, x *ir.Value) *ir.Value

// rnnCell is what one direction of a layer needs: its weights (sliced for
// the direction) and how to make one step.
type rnnCell struct {
	kind    string
	hidden  int
	dt      ir.DType
	clip    float64 // 0: none
	lbr     bool    // GRU linear_before_reset
	forget  bool    // LSTM input_forget
	acts    []rnnAct
	w, r    *ir.Value // [G·H, I], [G·H, H]
	wb, rb  *ir.Value // [G·H] each, or nil without B
	p       *ir.Value // LSTM [3H], or nil
	reverse bool
}

func convRecurrent(n *node) ([]*value, error) {
	kind := n.p.GetOpType()
	gates, defActs := 1, []string{"Tanh"}
	switch kind {
	case "GRU":
		gates, defActs = 3, []string{"Sigmoid", "Tanh"}
	case "LSTM":
		gates, defActs = 4, []string{"Sigmoid", "Tanh", "Tanh"}
	}
	direction := n.String("direction", "forward")
	var dirs []bool // reverse?
	switch direction {
	case "forward":
		dirs = []bool{false}
	case "reverse":
		dirs = []bool{true}
	case "bidirectional":
		dirs = []bool{false, true}
	default:
		n.fail("direction %q is not forward, reverse or bidirectional", direction)
		return nil, nil
	}
	nd := len(dirs)
	layout := n.Int("layout", 0)
	if layout != 0 && layout != 1 {
		n.fail("layout %d is not 0 or 1", layout)
		return nil, nil
	}
	clip := 0.0
	if n.HasAttr("clip") {
		clip = n.Float("clip", 0)
		if !(clip > 0) {
			n.fail("clip %v is not positive", clip)
			return nil, nil
		}
		if kind == "LSTM" {
			return nil, n.unsupported("clip on LSTM (implementations differ on whether it also bounds the cell state before h)")
		}
	}
	var lbr, forget bool
	switch kind {
	case "GRU":
		lbr = n.Int("linear_before_reset", 0) != 0
	case "LSTM":
		forget = n.Int("input_forget", 0) != 0
	}
	// Opset 1 says whether Y is produced; gopir computes it when asked.
	n.Int("output_sequence", 0)
	names := n.Strings("activations")
	alphas, betas := n.Floats("activation_alpha"), n.Floats("activation_beta")
	if names == nil {
		for range nd {
			names = append(names, defActs...)
		}
	}
	if len(names) != nd*len(defActs) {
		n.fail("%d activations, want %d (%d per direction)", len(names), nd*len(defActs), len(defActs))
		return nil, nil
	}
	acts, err := n.rnnActivations(names, alphas, betas)
	if err != nil {
		return nil, err
	}

	for i := 0; i < 3; i++ {
		if t := n.Type(i); t.IsStack() || t.Rank() != 3 {
			n.fail("input %d is %s, want a 3-D tensor", i, t)
			return nil, nil
		}
	}
	x, xt := n.In(0), n.Type(0)
	dt := xt.DType
	if dt != ir.F32 && dt != ir.F64 {
		return nil, n.unsupported("%s of %s", kind, xt)
	}
	for i := 1; i < n.NumIn(); i++ {
		if i != 4 && n.Has(i) && n.Type(i).DType != dt {
			n.fail("input %d is %s, want %s like X", i, n.Type(i), dt)
			return nil, nil
		}
	}
	hidden := int(n.Int("hidden_size", 0))
	if rt := n.Type(2); hidden <= 0 {
		if hidden = rt.Dims[2]; hidden == ir.Dynamic {
			return nil, n.unsupported("a hidden size that is neither an attribute nor R's static last dim")
		}
	}
	if layout == 1 {
		x = ops.Transpose(n.b, x, 1, 0, 2)
	}
	// The initial states as [D, B, H].
	state := func(i int) *ir.Value {
		if !n.Has(i) {
			return nil
		}
		if layout == 1 {
			return ops.Transpose(n.b, n.In(i), 1, 0, 2)
		}
		return n.In(i)
	}
	// Static checks of the weights' shapes (dynamic dims are checked by
	// the ops at run time).
	want := [][]int{
		1: {nd, gates * hidden, x.Type().Dims[2]},
		2: {nd, gates * hidden, hidden},
		3: {nd, 2 * gates * hidden},
		5: {nd, xt.Dims[1-int(layout)], hidden},
		6: {nd, xt.Dims[1-int(layout)], hidden},
		7: {nd, 3 * hidden},
	}
	for i, dims := range want {
		if dims == nil || !n.Has(i) || (i >= 6 && kind != "LSTM") {
			continue
		}
		t := n.Type(i)
		if (i == 5 || i == 6) && layout == 1 && t.Rank() == 3 {
			t = ir.TensorOf(t.DType, t.Dims[1], t.Dims[0], t.Dims[2])
		}
		if t.Rank() != len(dims) {
			n.fail("input %d is %s, want rank %d", i, t, len(dims))
			return nil, nil
		}
		for k, d := range dims {
			if d != ir.Dynamic && t.Dims[k] != ir.Dynamic && t.Dims[k] != d {
				n.fail("input %d is %s, want dims %v", i, t, dims)
				return nil, nil
			}
		}
	}
	if kind != "LSTM" && n.NumIn() > 6 {
		n.fail("%s takes at most 6 inputs, got %d", kind, n.NumIn())
		return nil, nil
	}
	if n.err != nil {
		return nil, nil
	}
	b := n.b

	// sequence_lens: masks unless it is known to be T for every item.
	var lens *ir.Value
	if n.Has(4) {
		t := n.Type(4)
		if !t.DType.IsInt() || t.Rank() != 1 {
			n.fail("sequence_lens is %s, want a 1-D integer tensor", t)
			return nil, nil
		}
		full := false
		if vs, ok := n.KnownInts(4); ok && x.Type().Dims[0] != ir.Dynamic {
			full = true
			for _, v := range vs {
				full = full && v == int64(x.Type().Dims[0])
			}
		}
		if !full {
			lens = ops.Cast(b, n.In(4), ir.I64)
		}
	}

	wantY := n.wantOut(0)
	h0s, c0s := state(5), state(6)
	var ys, hs, cs []*ir.Value
	for d, reverse := range dirs {
		idx := ops.Full(b, ir.I64, float64(d))
		c := &rnnCell{kind: kind, hidden: hidden, dt: dt, clip: clip, lbr: lbr, forget: forget,
			acts: acts[d*len(defActs) : (d+1)*len(defActs)], reverse: reverse,
			w: ops.Gather(b, n.In(1), idx, 0), r: ops.Gather(b, n.In(2), idx, 0)}
		if n.Has(3) {
			wr := ops.Split(b, ops.Gather(b, n.In(3), idx, 0), 0, gates*hidden, gates*hidden)
			c.wb, c.rb = wr[0], wr[1]
		}
		if kind == "LSTM" && n.Has(7) {
			c.p = ops.Gather(b, n.In(7), idx, 0)
		}
		var h0, c0 *ir.Value
		if n.Has(5) {
			h0 = ops.Gather(b, h0s, idx, 0)
		} else {
			h0 = rnnZeros(b, x, dt, hidden, false)
		}
		if kind == "LSTM" {
			if n.Has(6) {
				c0 = ops.Gather(b, c0s, idx, 0)
			} else {
				c0 = rnnZeros(b, x, dt, hidden, false)
			}
		}
		y, h, cell := c.run(b, x, lens, h0, c0, wantY)
		ys, hs, cs = append(ys, y), append(hs, h), append(cs, cell)
	}
	if err := b.Err(); err != nil {
		return nil, err
	}
	stack := func(vs []*ir.Value, axis int) *ir.Value {
		parts := make([]*ir.Value, len(vs))
		for i, v := range vs {
			parts[i] = ops.Unsqueeze(b, v, axis)
		}
		if len(parts) == 1 {
			return parts[0]
		}
		return ops.Concat(b, axis, parts...)
	}
	outs := make([]*ir.Value, 3)
	if wantY {
		outs[0] = stack(ys, 1) // [T, D, B, H]
		if layout == 1 {
			outs[0] = ops.Transpose(b, outs[0], 2, 0, 1, 3)
		}
	}
	outs[1] = stack(hs, 0) // [D, B, H]
	if kind == "LSTM" {
		outs[2] = stack(cs, 0)
	}
	for i := 1; i < 3; i++ {
		if outs[i] != nil && layout == 1 {
			outs[i] = ops.Transpose(b, outs[i], 1, 0, 2)
		}
	}
	return out(outs...), nil
}

// wantOut reports whether the node's output k is named (asked for).
func (n *node) wantOut(k int) bool {
	o := n.p.GetOutput()
	return k < len(o) && o[k] != ""
}

// rnnZeros is zeros of dtype dt shaped [B, hidden] (or [T, B, hidden] with
// steps) for x of shape [T, B, I], with its dims read at run time where
// they are dynamic.
func rnnZeros(b *ir.Builder, x *ir.Value, dt ir.DType, hidden int, steps bool) *ir.Value {
	first := 1
	if steps {
		first = 0
	}
	dims := append(append([]int{}, x.Type().Dims[first:2]...), hidden)
	if ir.TensorOf(dt, dims...).IsStatic() {
		return ops.Full(b, dt, 0, dims...)
	}
	lead := ops.Slice(b, ops.Shape(b, x), []int{0}, []int{first}, []int{2})
	shape := ops.Concat(b, 0, lead, ops.Full(b, ir.I64, float64(hidden), 1))
	return ops.ConstantOfShape(b, shape, dt, ir.Float(0), dims)
}

// rnnActivations reads the activations (names, case-insensitive) with
// their alpha and beta values, which the activations that take them
// consume in order (the others' defaults are ONNX's operators').
// ThresholdedRelu is refused: ONNX's RNN text and its operator disagree on
// whether x = alpha passes.
func (n *node) rnnActivations(names []string, alphas, betas []float64) ([]rnnAct, error) {
	next := func(vs *[]float64, def float64, has bool, name string) (float64, error) {
		if len(*vs) > 0 {
			v := (*vs)[0]
			*vs = (*vs)[1:]
			return v, nil
		}
		if !has {
			return 0, n.unsupported("activation %s without its activation_alpha and activation_beta values", name)
		}
		return def, nil
	}
	var acts []rnnAct
	for _, name := range names {
		var act rnnAct
		switch strings.ToLower(name) {
		case "tanh":
			act = ops.Tanh
		case "sigmoid":
			act = ops.Sigmoid
		case "relu":
			act = ops.Relu
		case "softplus":
			act = ops.Softplus
		case "softsign":
			act = func(b *ir.Builder, x *ir.Value) *ir.Value {
				return ops.Divide(b, x, ops.Add(b, ops.Abs(b, x), ops.FullLike(b, x, 1, ir.InvalidDType)))
			}
		case "leakyrelu":
			a, err := next(&alphas, 0.01, true, name)
			if err != nil {
				return nil, err
			}
			act = func(b *ir.Builder, x *ir.Value) *ir.Value {
				zero := ops.Full(b, x.Type().DType, 0)
				return ops.Where(b, ops.GreaterEqual(b, x, zero), x, ops.Multiply(b, x, ops.Full(b, x.Type().DType, a)))
			}
		case "elu":
			a, err := next(&alphas, 1, true, name)
			if err != nil {
				return nil, err
			}
			act = func(b *ir.Builder, x *ir.Value) *ir.Value {
				dt := x.Type().DType
				neg := ops.Multiply(b, ops.Subtract(b, ops.Exp(b, x), ops.Full(b, dt, 1)), ops.Full(b, dt, a))
				return ops.Where(b, ops.GreaterEqual(b, x, ops.Full(b, dt, 0)), x, neg)
			}
		case "hardsigmoid", "affine", "scaledtanh":
			lower := strings.ToLower(name)
			defA, defB, has := 0.2, 0.5, lower == "hardsigmoid"
			a, err := next(&alphas, defA, has, name)
			if err != nil {
				return nil, err
			}
			be, err := next(&betas, defB, has, name)
			if err != nil {
				return nil, err
			}
			act = func(b *ir.Builder, x *ir.Value) *ir.Value {
				dt := x.Type().DType
				switch lower {
				case "hardsigmoid":
					return ops.Clip(b, ops.Add(b, ops.Multiply(b, x, ops.Full(b, dt, a)), ops.Full(b, dt, be)), 0, 1)
				case "affine":
					return ops.Add(b, ops.Multiply(b, x, ops.Full(b, dt, a)), ops.Full(b, dt, be))
				}
				return ops.Multiply(b, ops.Tanh(b, ops.Multiply(b, x, ops.Full(b, dt, be))), ops.Full(b, dt, a))
			}
		default:
			return nil, n.unsupported("activation %q", name)
		}
		acts = append(acts, act)
	}
	if len(alphas) > 0 || len(betas) > 0 {
		return nil, n.unsupported("activation_alpha or activation_beta values that no activation takes")
	}
	return acts, nil
}

// run appends the loop of one direction over x [T, B, I] from h0 (and c0)
// and returns Y [T, B, H] (nil unless wantY), the last H and the last C.
func (c *rnnCell) run(b *ir.Builder, x, lens, h0, c0 *ir.Value, wantY bool) (y, h, cell *ir.Value) {
	trips := ops.Reshape(b, ops.Slice(b, ops.Shape(b, x), []int{0}, []int{0}, []int{1}))
	if d := x.Type().Dims[0]; d != ir.Dynamic {
		trips = ops.Full(b, ir.I64, float64(d))
	}
	last := ops.Subtract(b, trips, ops.Full(b, ir.I64, 1))
	i0 := ops.Full(b, ir.I64, 0)
	init := []*ir.Value{i0, h0}
	if c0 != nil {
		init = append(init, c0)
	}
	if wantY {
		init = append(init, rnnZeros(b, x, c.dt, c.hidden, true))
	}
	res := b.While(ops.LessThan(b, i0, trips), init, func(b *ir.Builder, args []*ir.Value) (*ir.Value, []*ir.Value) {
		i, hPrev := args[0], args[1]
		var cPrev *ir.Value
		if c0 != nil {
			cPrev = args[2]
		}
		t := i
		if c.reverse {
			t = ops.Subtract(b, last, i)
		}
		hNew, cNew := c.step(b, ops.Gather(b, x, t, 0), hPrev, cPrev)
		yt := hNew
		if lens != nil {
			m := ops.Unsqueeze(b, ops.LessThan(b, t, lens), 1) // [B, 1]
			hNew = ops.Where(b, m, hNew, hPrev)
			if cNew != nil {
				cNew = ops.Where(b, m, cNew, cPrev)
			}
			yt = ops.Where(b, m, yt, ops.Full(b, c.dt, 0))
		}
		i1 := ops.Add(b, i, ops.Full(b, ir.I64, 1))
		next := []*ir.Value{i1, hNew}
		if cNew != nil {
			next = append(next, cNew)
		}
		if wantY {
			ya := args[len(args)-1]
			next = append(next, ops.ScatterND(b, ya, ops.Reshape(b, t, 1, 1), ops.Unsqueeze(b, yt, 0), 0, "none"))
		}
		return ops.LessThan(b, i1, trips), next
	})
	h = res[1]
	if c0 != nil {
		cell = res[2]
	}
	if wantY {
		y = res[len(res)-1]
	}
	return y, h, cell
}

// pre is the input of an activation: sum clipped to [−clip, clip] when
// the layer clips.
func (c *rnnCell) pre(b *ir.Builder, sum *ir.Value) *ir.Value {
	if c.clip > 0 {
		return ops.Clip(b, sum, -c.clip, c.clip)
	}
	return sum
}

// bias adds v (a bias slice) to x when the layer has one.
func addBias(b *ir.Builder, x, v *ir.Value) *ir.Value {
	if v == nil {
		return x
	}
	return ops.Add(b, x, v)
}

// step is one time step on xt [B, I] from hPrev (and cPrev) [B, H].
func (c *rnnCell) step(b *ir.Builder, xt, hPrev, cPrev *ir.Value) (hNew, cNew *ir.Value) {
	hd := c.hidden
	xw := ops.Matmul(b, xt, c.w, false, true) // [B, G·H]
	switch c.kind {
	case "RNN":
		s := ops.Add(b, xw, ops.Matmul(b, hPrev, c.r, false, true))
		s = addBias(b, addBias(b, s, c.wb), c.rb)
		return c.acts[0](b, c.pre(b, s)), nil
	case "GRU":
		f, g := c.acts[0], c.acts[1]
		xs := ops.Split(b, xw, 1, 2*hd, hd)
		rs := ops.Split(b, c.r, 0, 2*hd, hd) // R_zr [2H, H], R_h [H, H]
		var wbs, rbs []*ir.Value
		if c.wb != nil {
			wbs, rbs = ops.Split(b, c.wb, 0, 2*hd, hd), ops.Split(b, c.rb, 0, 2*hd, hd)
		} else {
			wbs, rbs = make([]*ir.Value, 2), make([]*ir.Value, 2)
		}
		zr := ops.Add(b, xs[0], ops.Matmul(b, hPrev, rs[0], false, true))
		zr = addBias(b, addBias(b, zr, wbs[0]), rbs[0])
		gates := ops.Split(b, f(b, c.pre(b, zr)), 1, hd, hd)
		z, r := gates[0], gates[1]
		var s *ir.Value
		if c.lbr {
			hr := addBias(b, ops.Matmul(b, hPrev, rs[1], false, true), rbs[1])
			s = addBias(b, ops.Add(b, xs[1], ops.Multiply(b, r, hr)), wbs[1])
		} else {
			s = ops.Add(b, xs[1], ops.Matmul(b, ops.Multiply(b, r, hPrev), rs[1], false, true))
			s = addBias(b, addBias(b, s, rbs[1]), wbs[1])
		}
		hh := g(b, c.pre(b, s))
		one := ops.Full(b, c.dt, 1)
		return ops.Add(b, ops.Multiply(b, ops.Subtract(b, one, z), hh), ops.Multiply(b, z, hPrev)), nil
	}
	// LSTM
	f, g, h := c.acts[0], c.acts[1], c.acts[2]
	s := ops.Add(b, xw, ops.Matmul(b, hPrev, c.r, false, true))
	s = addBias(b, addBias(b, s, c.wb), c.rb)
	gs := ops.Split(b, s, 1, hd, hd, hd, hd) // i, o, f, c
	var ps []*ir.Value
	if c.p != nil {
		ps = ops.Split(b, c.p, 0, hd, hd, hd) // i, o, f
	}
	peep := func(x *ir.Value, k int, state *ir.Value) *ir.Value {
		if ps == nil {
			return x
		}
		return ops.Add(b, x, ops.Multiply(b, ps[k], state))
	}
	ig := f(b, peep(gs[0], 0, cPrev))
	var fg *ir.Value
	if c.forget {
		fg = ops.Subtract(b, ops.Full(b, c.dt, 1), ig)
	} else {
		fg = f(b, peep(gs[2], 2, cPrev))
	}
	cc := g(b, gs[3])
	cNew = ops.Add(b, ops.Multiply(b, fg, cPrev), ops.Multiply(b, ig, cc))
	og := f(b, peep(gs[1], 1, cNew))
	return ops.Multiply(b, og, h(b, cNew)), cNew
}
