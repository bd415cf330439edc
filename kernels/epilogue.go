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
// rounded to the element type as the separate ops round it. A nil
// *Epilogue does nothing.
//
// For Conv2D (Conv2DParams.Epilogue) the output is N×O×OH×OW, Bias has one
// value per output channel and Residual is shaped like the output. For
// MatmulFused the output is a stack of m×n matrices, Bias has one value
// per column (n) and Residual is shaped like the output. Bias and
// Residual are []float32 or []float64, the element type of the output,
// or nil.
//
// Every forward convolution path must apply the epilogue exactly once to
// every output element, after the element's sum is complete: a path that
// computes a block of output channels of one sample calls
// epiPlanes on that block before it moves on.
type Epilogue struct {
	Bias     any
	Residual any
	Act      Activation
	Min, Max float64 // ActClip's bounds
}

// Check reports whether ep fits an output of elems elements of element
// type T with channels bias values: the kernels trust it, so callers
// check once.
func (ep *Epilogue) Check(elems, channels int, f32 bool) error {
	if ep == nil {
		return nil
	}
	if f32 {
		return epiCheck[float32](ep, elems, channels)
	}
	return epiCheck[float64](ep, elems, channels)
}

func epiCheck[T nnFloat](ep *Epilogue, elems, channels int) error {
	if ep.Bias != nil {
		b, ok := ep.Bias.([]T)
		if !ok || len(b) != channels {
			return fmt.Errorf("epilogue: bias is %T of %d, want %d elements of the output's type", ep.Bias, epiLen(ep.Bias), channels)
		}
	}
	if ep.Residual != nil {
		r, ok := ep.Residual.([]T)
		if !ok || len(r) != elems {
			return fmt.Errorf("epilogue: residual is %T of %d, want %d elements of the output's type", ep.Residual, epiLen(ep.Residual), elems)
		}
	}
	if ep.Act > ActClip {
		return fmt.Errorf("epilogue: unknown activation %d", ep.Act)
	}
	return nil
}

func epiLen(x any) int {
	switch s := x.(type) {
	case []float32:
		return len(s)
	case []float64:
		return len(s)
	}
	return 0
}

// epiPlanes applies ep to the planes [q0, q1) of out viewed as
// (N·channels) planes of hw elements: plane q is channel q % channels.
func epiPlanes[T nnFloat](ep *Epilogue, out []T, channels, q0, q1, hw int) {
	if ep == nil || hw == 0 {
		return
	}
	bias, _ := ep.Bias.([]T)
	res, _ := ep.Residual.([]T)
	for q := q0; q < q1; q++ {
		plane := out[q*hw : (q+1)*hw]
		if bias != nil {
			b := bias[q%channels]
			for i := range plane {
				plane[i] += b
			}
		}
		if res != nil {
			epiAdd(plane, res[q*hw:(q+1)*hw])
		}
		epiAct(ep, plane)
	}
}

// epiRows applies ep to the rows [r0, r1) of out viewed as rows of n
// columns: column j gets bias[j].
func epiRows[T nnFloat](ep *Epilogue, out []T, n, r0, r1 int) {
	if ep == nil || n == 0 {
		return
	}
	bias, _ := ep.Bias.([]T)
	res, _ := ep.Residual.([]T)
	for r := r0; r < r1; r++ {
		row := out[r*n : (r+1)*n]
		if bias != nil {
			epiAdd(row, bias[:n])
		}
		if res != nil {
			epiAdd(row, res[r*n:(r+1)*n])
		}
		epiAct(ep, row)
	}
}

func epiAdd[T nnFloat](dst, src []T) {
	src = src[:len(dst)]
	for i := range dst {
		dst[i] += src[i]
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
		epiUnary(UnarySilu, v)
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
