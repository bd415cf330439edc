package kernels

import "fmt"

// Activation is the elementwise function an Epilogue ends with.
type Activation uint8

// The activations an Epilogue applies. Each computes, element by element,
// exactly what the op of the same name computes on its own (the same
// functions run), so a fused epilogue gives the bits of the unfused ops.
const (
	ActNone    Activation = iota
	ActRelu               // max(v, 0), as the relu op
	ActSigmoid            // 1/(1+e^−v), as the sigmoid op
	ActSilu               // v·sigmoid(v) in one rounding, as the silu op
	ActSwish              // v·s with s = sigmoid(v) rounded first, as multiply(v, sigmoid(v))
	ActClip               // min(max(v, Min), Max), as the clip op
)

// Epilogue is the work a fused convolution or matrix product does to each
// block of its output right after computing it, while the block is still
// in cache: out = act(out + bias + residual), in that order, each step
// rounded to the element type as the separate ops round it. The zero
// Epilogue does nothing.
//
// For Conv2D (Conv2DParams.Epilogue) the output is N×O×OH×OW, the bias
// has one value per output channel and the residual is shaped like the
// output. For MatmulFused the output is a stack of m×n matrices, the bias
// has one value per column (n) and the residual is shaped like the output.
// The slices of the output's element type are used (Bias32 and
// Residual32 for float32, Bias64 and Residual64 for float64); nil means
// none. Typed fields rather than interfaces: setting them allocates
// nothing.
//
// Every forward convolution path must apply the epilogue exactly once to
// every output element, after the element's sum is complete: a path that
// finishes a block of output channels of one sample calls epiPlanes on
// that block before it moves on.
type Epilogue struct {
	Act                Activation
	Min, Max           float64 // ActClip's bounds
	Bias32, Residual32 []float32
	Bias64, Residual64 []float64
}

// on reports whether ep does anything.
func (ep *Epilogue) on() bool {
	return ep.Act != ActNone || ep.Bias32 != nil || ep.Residual32 != nil || ep.Bias64 != nil || ep.Residual64 != nil
}

// epiData returns ep's bias and residual for elements of type T.
func epiData[T nnFloat](ep *Epilogue) (bias, res []T) {
	var z T
	switch any(z).(type) {
	case float32:
		return any(ep.Bias32).([]T), any(ep.Residual32).([]T)
	default:
		return any(ep.Bias64).([]T), any(ep.Residual64).([]T)
	}
}

// Check reports whether ep fits an output of elems elements with
// channels bias values (f32: float32 elements, else float64): the kernels
// trust it, so callers check once.
func (ep *Epilogue) Check(elems, channels int, f32 bool) error {
	bias, res, other, otherRes := len(ep.Bias32), len(ep.Residual32), ep.Bias64 != nil, ep.Residual64 != nil
	hasBias, hasRes := ep.Bias32 != nil, ep.Residual32 != nil
	if !f32 {
		bias, res, other, otherRes = len(ep.Bias64), len(ep.Residual64), ep.Bias32 != nil, ep.Residual32 != nil
		hasBias, hasRes = ep.Bias64 != nil, ep.Residual64 != nil
	}
	switch {
	case other || otherRes:
		return fmt.Errorf("epilogue: bias or residual of the other element type than the output's")
	case hasBias && bias != channels:
		return fmt.Errorf("epilogue: bias of %d elements, want %d", bias, channels)
	case hasRes && res != elems:
		return fmt.Errorf("epilogue: residual of %d elements, want %d (the output's)", res, elems)
	case ep.Act > ActClip:
		return fmt.Errorf("epilogue: unknown activation %d", ep.Act)
	}
	return nil
}

// epiPlanes applies ep to the planes [q0, q1) of out viewed as
// (N·channels) planes of hw elements: plane q is channel q % channels.
// Each step runs over the whole block (vectorised adds, then the
// activation), which the caller has just computed and is in cache.
func epiPlanes[T nnFloat](ep *Epilogue, out []T, channels, q0, q1, hw int) {
	if !ep.on() || hw == 0 || q1 <= q0 {
		return
	}
	bias, res := epiData[T](ep)
	if bias != nil && (ep.Act == ActNone || ep.Act == ActRelu) && epiPlanesOnePass(ep, out, bias, res, channels, q0, q1, hw) {
		return
	}
	if of, ok := any(out).([]float32); ok && bias != nil && res == nil && epiBiasSiluOK(ep, hw) {
		bf := any(bias).([]float32)
		for q := q0; q < q1; q++ {
			epiBiasSilu(of[q*hw:(q+1)*hw], bf[q%channels])
		}
		return
	}
	if bias != nil {
		for q := q0; q < q1; q++ {
			epiAddScalar(out[q*hw:(q+1)*hw], bias[q%channels])
		}
	}
	block := out[q0*hw : q1*hw]
	if res != nil {
		add2D(block, 0, res[q0*hw:q1*hw], 0, 1, len(block))
	}
	epiAct(ep, block)
}

// epiPlanesOnePass is epiPlanes for float32 with a bias and ReLU or no
// activation: one vector pass over each plane (epiPlanesF32Vec) instead
// of one per step, with the same roundings in the same order. It reports
// whether it ran (not for float64, nor without AVX-512).
func epiPlanesOnePass[T nnFloat](ep *Epilogue, out, bias, res []T, channels, q0, q1, hw int) bool {
	of, ok := any(out).([]float32)
	if !ok || !hasEpiPlanesVec {
		return false
	}
	bf, rf := any(bias).([]float32), any(res).([]float32)
	for q := q0; q < q1; {
		c := q % channels
		run := min(q1-q, channels-c)
		var r []float32
		if rf != nil {
			r = rf[q*hw : (q+run)*hw]
		}
		epiPlanesF32Vec(of[q*hw:(q+run)*hw], bf[c:c+run], r, ep.Act == ActRelu, hw)
		q += run
	}
	return true
}

// epiRows applies ep to the rows [r0, r1) of out viewed as rows of n
// columns: column j gets bias[j].
func epiRows[T nnFloat](ep *Epilogue, out []T, n, r0, r1 int) {
	if !ep.on() || n == 0 || r1 <= r0 {
		return
	}
	bias, res := epiData[T](ep)
	block := out[r0*n : r1*n]
	if bias != nil {
		epiBiasRows(block, bias, n)
	}
	if res != nil {
		add2D(block, 0, res[r0*n:r1*n], 0, 1, len(block))
	}
	epiAct(ep, block)
}

// epiBiasRows adds bias (n values) to each row of n columns of block.
// add2D's vector loop ends each row with a masked load and store, which
// cost about 7 ns a row on narrow rows (the MLP's last layer, 64 rows of
// 10: about 450 ns), probably each masked load waiting on the previous
// row's masked store to the same cache line. Rows of fewer than 64 columns that are not whole vectors are
// added as longer rows instead, g at a time against a buffer holding the
// bias g times, the same additions.
func epiBiasRows[T nnFloat](block, bias []T, n int) {
	rows := len(block) / n
	var buf [256]T
	g := min(rows, len(buf)/n)
	if n >= 64 || n%16 == 0 || g < 2 {
		add2D(block, n, bias, 0, rows, n)
		return
	}
	w := g * n
	copy(buf[:n], bias)
	for f := n; f < w; f *= 2 {
		copy(buf[f:w], buf[:f])
	}
	full := rows / g * w
	add2D(block, w, buf[:w], 0, rows/g, w)
	if rem := len(block) - full; rem > 0 {
		add2D(block[full:], 0, buf[:rem], 0, 1, rem)
	}
}

// epiAddScalar adds b to every element of v: through add2D's vector loop
// on rows of a broadcast buffer, or, for a few elements (a plane of a
// small map), one by one, which costs less than filling the buffer.
func epiAddScalar[T nnFloat](v []T, b T) {
	if len(v) < 32 {
		for i := range v {
			v[i] += b
		}
		return
	}
	var buf [64]T
	w := min(len(v), len(buf))
	for i := range buf[:w] {
		buf[i] = b
	}
	full := len(v) / w * w
	add2D(v, w, buf[:w], 0, len(v)/w, w)
	if rem := len(v) - full; rem > 0 {
		add2D(v[full:], 0, buf[:rem], 0, 1, rem)
	}
}

// epiBiasSiluOK reports whether epiBiasSilu takes ep's bias and
// activation on runs of n elements: SiLU, with the AVX-512 loop, on runs
// holding at least one block of its 16.
func epiBiasSiluOK(ep *Epilogue, n int) bool {
	return ep.Act == ActSilu && ep.Bias32 != nil && hasEpiPlanesVec && n >= 16
}

// epiBiasSilu is epiAddScalar(v, b) then SiLU in one pass over v
// (siluBiasF32Vec), the tail of fewer than 16 elements as the two steps:
// the same roundings, so the same bits. With a convolution's short depth
// (a 1×1 layer on 48 channels) the separate bias pass over its output
// cost a tenth of the layer.
func epiBiasSilu(v []float32, b float32) {
	tail := v[siluBiasF32Vec(v, b):]
	for i := range tail {
		tail[i] += b
	}
	if tail = tail[epiSiluF32(tail):]; len(tail) > 0 {
		epiUnary(UnarySilu, tail)
	}
}

// epiAct applies ep's activation to v in place with the functions of the
// unfused ops.
func epiAct[T nnFloat](ep *Epilogue, v []T) {
	switch ep.Act {
	case ActNone:
	case ActRelu:
		if f, ok := any(v).([]float32); ok {
			done := reluF32Vec(f, f)
			v = v[done:]
		}
		for i, x := range v {
			v[i] = max(x, 0)
		}
	case ActSigmoid:
		epiUnary(UnarySigmoid, v)
	case ActSilu:
		if f, ok := any(v).([]float32); ok {
			v = v[epiSiluF32(f):]
		}
		if len(v) > 0 {
			epiUnary(UnarySilu, v)
		}
	case ActSwish:
		var buf [256]T
		for len(v) > 0 {
			n := min(len(v), len(buf))
			s := buf[:n]
			epiUnaryTo(UnarySigmoid, s, v[:n])
			for i := range s {
				v[i] *= s[i]
			}
			v = v[n:]
		}
	case ActClip:
		switch f := any(v).(type) {
		case []float32:
			ewClipF32(f, f, float32(ep.Min), float32(ep.Max))
		case []float64:
			ewClipF64(f, f, ep.Min, ep.Max)
		}
	}
}

func epiUnary[T nnFloat](op UnaryOp, v []T) { epiUnaryTo(op, v, v) }

// epiUnaryTo runs the unary op's serial loop (the one Unary runs on each
// of its ranges) from x into out.
func epiUnaryTo[T nnFloat](op UnaryOp, out, x []T) {
	switch o := any(out).(type) {
	case []float32:
		ewUnaryF32[op](o, any(x).([]float32))
	case []float64:
		ewUnaryF64[op](o, any(x).([]float64))
	}
}

// epiSiluF32 applies SiLU to v in place with the AVX-512 loop and returns
// how many elements it did: all of them, the last few (fewer than the
// loop's 8) through a zero-padded copy, or none without AVX-512. The loop
// gives the bits of the Go one, so this is the silu op's result however v
// is cut; an epilogue's runs are short and cut anywhere (a tile, an output
// row), and the op's Go tail would be a scalar exp on each of them.
func epiSiluF32(v []float32) int {
	n := siluF32Vec(v, v)
	tail := v[n:]
	if len(tail) == 0 {
		return n
	}
	var buf [8]float32
	copy(buf[:], tail)
	if siluF32Vec(buf[:], buf[:]) == 0 {
		return n
	}
	copy(tail, buf[:len(tail)])
	return len(v)
}
