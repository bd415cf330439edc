package kernels

import (
	"math"
	"slices"
	"sync"
)

// Resizing (ONNX's Resize): each output element is a weighted sum of input
// elements, and both the elements and the weights are chosen axis by axis.
// ResizeTaps computes that choice for one axis; Resize and ResizeGrad
// apply the choices of every axis.

// ResizeMode is the interpolation.
type ResizeMode uint8

const (
	ResizeNearest ResizeMode = iota // one tap, rounded by NearestMode
	ResizeLinear                    // two taps
	ResizeCubic                     // four taps, Keys' cubic with coefficient A
)

// ResizeTransform maps an output coordinate to an input coordinate.
type ResizeTransform uint8

const (
	HalfPixel        ResizeTransform = iota // (x + ½)/scale − ½
	PytorchHalfPixel                        // the same, or 0 when the resized length is at most 1
	AlignCorners                            // x·(in − 1)/(resized − 1), or 0 when the resized length is 1
	Asymmetric                              // x/scale
	TFHalfPixelForNN                        // (x + ½)/scale
	TFCropAndResize                         // within the region of interest, extrapolating outside the input
)

// NearestMode rounds a fractional coordinate for ResizeNearest.
type NearestMode uint8

const (
	RoundPreferFloor NearestMode = iota // halves go down
	RoundPreferCeil                     // halves go up
	Floor
	Ceil
)

// ResizeSpec is how an axis is resized.
type ResizeSpec struct {
	Mode           ResizeMode
	Transform      ResizeTransform
	Nearest        NearestMode
	CubicA         float64
	ExcludeOutside bool // drop taps outside the input and renormalize the others
}

// ResizeAxis is the interpolation along one axis: output position o reads
// the K input indices Index[o·K:(o+1)·K] with weights Weight[o·K:…], or,
// where Outside[o] is set (nil when never), is the extrapolation value.
type ResizeAxis struct {
	In, Out, K int
	Index      []int
	Weight     []float64
	Outside    []bool
}

// ResizeIdentity is the ResizeAxis of an axis of size n that is not
// resized.
func ResizeIdentity(n int) ResizeAxis {
	a := ResizeAxis{In: n, Out: n, K: 1, Index: make([]int, n), Weight: make([]float64, n)}
	for i := range n {
		a.Index[i], a.Weight[i] = i, 1
	}
	return a
}

// ResizeTaps computes the interpolation of an axis of size in resized to
// out with scale (ONNX's scale: the resized length is scale·in, which
// AlignCorners and the special cases use) and, for TFCropAndResize, the
// region [roiStart, roiEnd] as fractions of the axis. Taps outside the
// input read the nearest edge element (or drop out with ExcludeOutside);
// TFCropAndResize marks coordinates outside [0, in−1] as Outside. in must
// be at least 1 when out is.
func ResizeTaps(s ResizeSpec, in, out int, scale, roiStart, roiEnd float64) ResizeAxis {
	k := [...]int{ResizeNearest: 1, ResizeLinear: 2, ResizeCubic: 4}[s.Mode]
	a := ResizeAxis{In: in, Out: out, K: k, Index: make([]int, out*k), Weight: make([]float64, out*k)}
	resized := scale * float64(in)
	last := float64(in - 1)
	for o := range out {
		x := float64(o)
		var c float64
		switch s.Transform {
		case HalfPixel:
			c = (x+0.5)/scale - 0.5
		case PytorchHalfPixel:
			if resized > 1 {
				c = (x+0.5)/scale - 0.5
			}
		case AlignCorners:
			if resized != 1 {
				c = x * last / (resized - 1)
			}
		case Asymmetric:
			c = x / scale
		case TFHalfPixelForNN:
			c = (x + 0.5) / scale
		case TFCropAndResize:
			if resized > 1 {
				c = x * (roiEnd - roiStart) * last / (resized - 1)
			} else {
				c = (roiEnd - roiStart) * last / 2
			}
			c += roiStart * last
			if c < 0 || c > last {
				if a.Outside == nil {
					a.Outside = make([]bool, out)
				}
				a.Outside[o] = true
			}
		}
		resizeWeights(s, c, in, a.Index[o*k:(o+1)*k], a.Weight[o*k:(o+1)*k])
	}
	return a
}

// resizeWeights fills one output position's taps for input coordinate c.
func resizeWeights(s ResizeSpec, c float64, in int, idx []int, w []float64) {
	f := math.Floor(c)
	r := c - f
	x0 := int(f)
	switch s.Mode {
	case ResizeNearest:
		up := false
		switch s.Nearest {
		case RoundPreferFloor:
			up = r > 0.5
		case RoundPreferCeil:
			up = r >= 0.5
		case Ceil:
			up = r > 0
		}
		if up {
			x0++
		}
		idx[0], w[0] = x0, 1
	case ResizeLinear:
		idx[0], idx[1] = x0, x0+1
		w[0], w[1] = 1-r, r
	case ResizeCubic:
		for t := range 4 {
			idx[t] = x0 - 1 + t
			w[t] = cubicWeight(s.CubicA, math.Abs(float64(t-1)-r))
		}
	}
	if s.ExcludeOutside {
		var sum float64
		for t, i := range idx {
			if i < 0 || i >= in {
				w[t] = 0
			}
			sum += w[t]
		}
		for t := range w {
			w[t] /= sum
		}
	}
	for t, i := range idx {
		idx[t] = min(max(i, 0), in-1)
	}
}

// cubicWeight is Keys' cubic convolution kernel with coefficient a at
// distance d ≥ 0.
func cubicWeight(a, d float64) float64 {
	switch {
	case d <= 1:
		return ((a+2)*d-(a+3))*d*d + 1
	case d < 2:
		return ((a*d-5*a)*d+8*a)*d - 4*a
	}
	return 0
}

// resizeNearestOnly reports whether every axis reads one tap with weight
// 1, so that resizing copies elements.
func resizeNearestOnly(axes []ResizeAxis) bool {
	for _, a := range axes {
		if a.K != 1 {
			return false
		}
		for _, w := range a.Weight {
			if w != 1 {
				return false
			}
		}
	}
	return true
}

// resizeRows walks output rows (an index of every axis but the last) and
// gives each row's input row offsets and their weights, one pair per
// combination of the taps of those axes.
type resizeRows struct {
	axes    []ResizeAxis
	strides []int
	pos     []int
	offs    []int
	ws      []float64
}

// resizeRowsPool recycles walks with their buffers, so that a resize
// makes no Go allocation once warm.
var resizeRowsPool = sync.Pool{New: func() any { return new(resizeRows) }}

// newResizeRows returns a walk over axes from a pool; put it back with
// release.
func newResizeRows(axes []ResizeAxis) *resizeRows {
	w := resizeRowsPool.Get().(*resizeRows)
	r := len(axes)
	w.axes = axes
	w.strides = slices.Grow(w.strides[:0], r)[:r]
	w.pos = slices.Grow(w.pos[:0], r-1)[:r-1]
	clear(w.pos)
	s := 1
	for i := r - 1; i >= 0; i-- {
		w.strides[i] = s
		s *= axes[i].In
	}
	return w
}

// release puts w back in the pool.
func (w *resizeRows) release() {
	w.axes = nil
	resizeRowsPool.Put(w)
}

// seek sets the walk to output row row.
func (w *resizeRows) seek(row int) {
	for i := len(w.pos) - 1; i >= 0; i-- {
		w.pos[i] = row % w.axes[i].Out
		row /= w.axes[i].Out
	}
}

// next advances to the next output row.
func (w *resizeRows) next() {
	for i := len(w.pos) - 1; i >= 0; i-- {
		w.pos[i]++
		if w.pos[i] < w.axes[i].Out {
			return
		}
		w.pos[i] = 0
	}
}

// combos computes the current row's input row offsets and weights; false
// when the row extrapolates.
func (w *resizeRows) combos() bool {
	w.offs, w.ws = append(w.offs[:0], 0), append(w.ws[:0], 1)
	for i, o := range w.pos {
		a := w.axes[i]
		if a.Outside != nil && a.Outside[o] {
			return false
		}
		n := len(w.offs)
		for t := range a.K {
			j := o*a.K + t
			for c := range n {
				w.offs = append(w.offs, w.offs[c]+a.Index[j]*w.strides[i])
				w.ws = append(w.ws, w.ws[c]*a.Weight[j])
			}
		}
		// Keep the new combinations, at the front so that the storage is
		// reused.
		w.offs = w.offs[:copy(w.offs, w.offs[n:])]
		w.ws = w.ws[:copy(w.ws, w.ws[n:])]
	}
	return true
}

// offset is the current row's input row offset when every axis reads one
// tap (resizeNearestOnly); false when the row extrapolates.
func (w *resizeRows) offset() (int, bool) {
	off := 0
	for i, o := range w.pos {
		a := &w.axes[i]
		if a.Outside != nil && a.Outside[o] {
			return 0, false
		}
		off += a.Index[o] * w.strides[i]
	}
	return off, true
}

// Resize writes into out (row-major over the axes' Out sizes) the
// resizing of x (over their In sizes) by axes, one ResizeAxis per dim:
// out[o] = Σ over the taps of every axis of the product of their weights
// times x at their indices, summed in float64, or extrapolation where an
// axis marks o Outside. Rows of the last axis are split over threads.
func Resize[T nnFloat](axes []ResizeAxis, x, out []T, extrapolation float64, threads int) {
	r := len(axes)
	if r == 0 {
		out[0] = x[0]
		return
	}
	lastAx := axes[r-1]
	width, rows := lastAx.Out, 1
	for _, a := range axes[:r-1] {
		rows *= a.Out
	}
	if rows == 0 || width == 0 {
		return
	}
	j := getJob[resizeJob[T]]()
	j.axes, j.x, j.out, j.extrapolation, j.copyOnly = axes, x, out, extrapolation, resizeNearestOnly(axes)
	j.upRows = 0
	if j.copyOnly {
		j.repeat = resizeRepeat(lastAx)
		if j.repeat > 0 {
			j.upRows = resizeUpsampleRows(axes)
		}
	}
	if j.upRows > 0 {
		inRows := rows / j.upRows
		nnForRanger(threads, inRows, j.upRows*width*2, j)
	} else {
		nnForRanger(threads, rows, width*lastAx.K*2, j)
	}
	putJob(j)
}

// resizeUpsampleRows is f when every axis but the last two keeps its
// size and the one before the last repeats each input row f times in
// order (resizeRepeat; 1 when it too keeps its size): input row q then
// gives output rows q·f to q·f+f-1, so that Resize walks input rows with
// no per-row index arithmetic. Otherwise 0.
func resizeUpsampleRows(axes []ResizeAxis) int {
	r := len(axes)
	if r < 2 {
		return 0
	}
	for _, a := range axes[:r-2] {
		if !resizeIsIdentity(a) {
			return 0
		}
	}
	return resizeRepeat(axes[r-2])
}

// resizeJob is Resize's loop over output rows.
type resizeJob[T nnFloat] struct {
	axes          []ResizeAxis
	x, out        []T
	extrapolation float64
	copyOnly      bool
	repeat        int // with copyOnly: resizeRepeat of the last axis
	upRows        int // with repeat > 0: resizeUpsampleRows; then run walks input rows
}

// resizeRepeat is f when the nearest-tap axis a repeats each input
// element f times in order (Index[o] = o/f, Out = f·In: nearest
// upsampling by an integer factor, as ppyoloe_s's neck does by 2), else 0.
func resizeRepeat(a ResizeAxis) int {
	if a.In == 0 || a.Out%a.In != 0 || a.Outside != nil {
		return 0
	}
	f := a.Out / a.In
	for o, i := range a.Index[:a.Out] {
		if i != o/f {
			return 0
		}
	}
	return f
}

func (job *resizeJob[T]) run(lo, hi int) {
	axes, x, out, extrapolation := job.axes, job.x, job.out, job.extrapolation
	lastAx := axes[len(axes)-1]
	width := lastAx.Out
	if f := job.upRows; f > 0 {
		in := lastAx.In
		if o, ok := any(out).([]float32); ok && job.repeat == 2 {
			resizeUp2F32(o, any(x).([]float32), lo, hi, in, f)
			return
		}
		for q := lo; q < hi; q++ {
			dst := out[q*f*width : (q+1)*f*width]
			resizeCopyRow(dst[:width], x[q*in:(q+1)*in], lastAx.Index, job.repeat)
			for k := width; k < len(dst); k += width {
				copy(dst[k:k+width], dst[:width])
			}
		}
		return
	}
	w := newResizeRows(axes)
	defer w.release()
	w.seek(lo)
	prev := -1 // with copyOnly: the input row offset of the row before, if it read one
	for row := lo; row < hi; row++ {
		dst := out[row*width : (row+1)*width]
		if job.copyOnly {
			off, ok := w.offset()
			switch {
			case ok && off == prev:
				// The same input row as the row before (nearest
				// upsampling along a leading axis): the same elements.
				copy(dst, out[(row-1)*width:row*width])
			case ok && lastAx.Outside == nil:
				resizeCopyRow(dst, x[off:off+lastAx.In], lastAx.Index, job.repeat)
				prev = off
			default:
				src, index := x[off:], lastAx.Index[:len(dst)]
				for j := range dst {
					if !ok || lastAx.Outside != nil && lastAx.Outside[j] {
						dst[j] = T(extrapolation)
						continue
					}
					dst[j] = src[index[j]]
				}
				prev = -1
			}
			w.next()
			continue
		}
		switch {
		case !w.combos():
			for j := range dst {
				dst[j] = T(extrapolation)
			}
		default:
			for j := range dst {
				if lastAx.Outside != nil && lastAx.Outside[j] {
					dst[j] = T(extrapolation)
					continue
				}
				var s float64
				for c, off := range w.offs {
					var t float64
					for q := range lastAx.K {
						t += lastAx.Weight[j*lastAx.K+q] * float64(x[off+lastAx.Index[j*lastAx.K+q]])
					}
					s += w.ws[c] * t
				}
				dst[j] = T(s)
			}
		}
		w.next()
	}
}

// resizeUp2F32 writes the output rows q·f to q·f+f-1 of input rows q in
// [lo, hi) of x, in elements each, when Resize walks input rows (upRows
// f) and the last axis repeats each element twice: every row is
// src[0] src[0] src[1] src[1] ….
func resizeUp2F32(out, x []float32, lo, hi, in, f int) {
	width := 2 * in
	for q := lo; q < hi; q++ {
		dst, src := out[q*f*width:(q+1)*f*width], x[q*in:(q+1)*in]
		done := resizeDup2F32Vec(dst, width, src, f)
		for k := 0; k < len(dst); k += width {
			row := dst[k : k+width]
			for i := done; i < in; i++ {
				row[2*i], row[2*i+1] = src[i], src[i]
			}
		}
	}
}

// resizeCopyRow sets dst[j] = src[index[j]]: src's elements each repeated
// repeat times in a row when repeat > 0 (resizeRepeat).
func resizeCopyRow[T nnFloat](dst, src []T, index []int, repeat int) {
	switch repeat {
	case 1:
		copy(dst, src)
	case 2:
		dst = dst[:2*len(src)]
		for i, v := range src {
			dst[2*i], dst[2*i+1] = v, v
		}
	case 0:
		index = index[:len(dst)]
		for j, i := range index {
			dst[j] = src[i]
		}
	default:
		for i, v := range src {
			d := dst[i*repeat : (i+1)*repeat]
			for k := range d {
				d[k] = v
			}
		}
	}
}

// ResizeGrad writes into dx (over the axes' In sizes) the gradient of
// Resize: each element of dy adds, to every input element it was computed
// from, its weight times dy; extrapolated elements add nothing. Leading
// axes that keep their size and read one tap each with weight 1 split the
// work over threads, since their blocks of dx do not overlap.
func ResizeGrad[T nnFloat](axes []ResizeAxis, dy, dx []T, threads int) {
	clear(dx)
	r := len(axes)
	if r == 0 {
		dx[0] = dy[0]
		return
	}
	k := 0
	for k < r-1 && resizeIsIdentity(axes[k]) {
		k++
	}
	blocks, per := 1, 1
	for _, a := range axes[:k] {
		blocks *= a.Out
	}
	for _, a := range axes[k:] {
		per *= a.Out
	}
	lastAx := axes[r-1]
	width := lastAx.Out
	if blocks == 0 || per == 0 {
		return
	}
	rowsPer := per / width
	copyOnly := resizeNearestOnly(axes)
	nnFor(threads, blocks, per*lastAx.K*2, func(lo, hi int) {
		w := newResizeRows(axes)
		defer w.release()
		w.seek(lo * rowsPer)
		for row := lo * rowsPer; row < hi*rowsPer; row++ {
			g := dy[row*width : (row+1)*width]
			if copyOnly {
				if off, ok := w.offset(); ok {
					dst, index := dx[off:], lastAx.Index[:len(g)]
					for j, v := range g {
						if lastAx.Outside == nil || !lastAx.Outside[j] {
							dst[index[j]] += v
						}
					}
				}
				w.next()
				continue
			}
			if w.combos() {
				for j, v := range g {
					if lastAx.Outside != nil && lastAx.Outside[j] {
						continue
					}
					for c, off := range w.offs {
						for q := range lastAx.K {
							wt := w.ws[c] * lastAx.Weight[j*lastAx.K+q]
							dx[off+lastAx.Index[j*lastAx.K+q]] += T(wt * float64(v))
						}
					}
				}
			}
			w.next()
		}
	})
}

// resizeIsIdentity reports whether a maps each position to itself.
func resizeIsIdentity(a ResizeAxis) bool {
	if a.K != 1 || a.In != a.Out || a.Outside != nil {
		return false
	}
	for o, i := range a.Index {
		if i != o || a.Weight[o] != 1 {
			return false
		}
	}
	return true
}
