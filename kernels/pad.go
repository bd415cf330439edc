package kernels

// Padding: each output element of a padded tensor is an input element or
// the constant, and which one is decided dim by dim. PadSource computes
// that choice for one dim; Pad and PadGrad apply the choices of every dim.

// PadMode says what fills the padding.
type PadMode uint8

const (
	PadConstant PadMode = iota // a constant
	PadReflect                 // the input mirrored about its edge elements, which are not repeated
	PadEdge                    // the edge element repeated
)

// PadSource returns, for a dim of size n with begin elements added before
// it and end after it (negative amounts crop), the input index each of the
// n+begin+end output positions reads, or −1 where the output is the
// constant. Cropping comes first and padding is taken from what is left:
// reflection mirrors the cropped range periodically (numpy's "reflect",
// also for widths beyond the range) and edge padding repeats its first and
// last elements. The caller checks that the crop fits in n and that a
// reflected or edge-padded range is not empty.
func PadSource(n, begin, end int, mode PadMode) []int {
	lo := max(0, -begin)
	m := n - lo - max(0, -end) // the cropped range is [lo, lo+m)
	pb := max(0, begin)
	src := make([]int, n+begin+end)
	for o := range src {
		i := o - pb // position in the cropped range
		switch {
		case i >= 0 && i < m:
		case mode == PadConstant:
			src[o] = -1
			continue
		case mode == PadEdge:
			i = min(max(i, 0), m-1)
		case m == 1:
			i = 0
		default:
			period := 2 * (m - 1)
			i = ((i % period) + period) % period
			if i >= m {
				i = period - i
			}
		}
		src[o] = lo + i
	}
	return src
}

// Pad writes into out the padding of x (row-major over inDims) described
// by srcs, one PadSource table per dim: out[o] = x[srcs[0][o0], …] or
// fill where some table says −1. Rows of the last dim are split over
// threads.
func Pad[T any](inDims []int, srcs [][]int, x, out []T, fill T, threads int) {
	r := len(inDims)
	if r == 0 {
		out[0] = x[0]
		return
	}
	last := srcs[r-1]
	width := len(last)
	rows := 1
	for _, s := range srcs[:r-1] {
		rows *= len(s)
	}
	if rows == 0 || width == 0 {
		return
	}
	strides := padStrides(inDims)
	nnFor(threads, rows, width, func(lo, hi int) {
		idx := make([]int, r-1)
		padUnravel(idx, srcs, lo)
		for row := lo; row < hi; row++ {
			dst := out[row*width : (row+1)*width]
			off, ok := padOffset(idx, srcs, strides)
			if !ok {
				for k := range dst {
					dst[k] = fill
				}
			} else {
				xr := x[off:]
				for k, s := range last {
					if s < 0 {
						dst[k] = fill
					} else {
						dst[k] = xr[s]
					}
				}
			}
			padNext(idx, srcs)
		}
	})
}

// PadGrad writes into dx (row-major over inDims) the gradient of Pad: each
// element of dy is added to the input element it was read from; the
// constant's positions add nothing. Leading dims whose table reads each
// input index at most once split the work over threads, since their
// blocks of dx do not overlap.
func PadGrad[T nnFloat](inDims []int, srcs [][]int, dy, dx []T, threads int) {
	clear(dx)
	r := len(inDims)
	if r == 0 {
		dx[0] = dy[0]
		return
	}
	// Blocks over the leading one-to-one dims.
	k := 0
	for k < r-1 && padOneToOne(srcs[k], inDims[k]) {
		k++
	}
	blocks, per := 1, 1
	for _, s := range srcs[:k] {
		blocks *= len(s)
	}
	for _, s := range srcs[k:] {
		per *= len(s)
	}
	if blocks == 0 || per == 0 {
		return
	}
	last := srcs[r-1]
	width := len(last)
	strides := padStrides(inDims)
	nnFor(threads, blocks, per, func(lo, hi int) {
		idx := make([]int, r-1)
		padUnravel(idx, srcs, lo*(per/width))
		for row := lo * (per / width); row < hi*(per/width); row++ {
			off, ok := padOffset(idx, srcs, strides)
			if ok {
				g := dy[row*width : (row+1)*width]
				xr := dx[off:]
				for j, s := range last {
					if s >= 0 {
						xr[s] += g[j]
					}
				}
			}
			padNext(idx, srcs)
		}
	})
}

// padOneToOne reports whether table src of a dim of size n reads no input
// index twice.
func padOneToOne(src []int, n int) bool {
	seen := make([]bool, n)
	for _, s := range src {
		if s < 0 {
			continue
		}
		if seen[s] {
			return false
		}
		seen[s] = true
	}
	return true
}

// padStrides are the row-major strides of dims.
func padStrides(dims []int) []int {
	st := make([]int, len(dims))
	s := 1
	for i := len(dims) - 1; i >= 0; i-- {
		st[i] = s
		s *= dims[i]
	}
	return st
}

// padUnravel sets idx to the output indices (of every dim but the last) of
// output row row.
func padUnravel(idx []int, srcs [][]int, row int) {
	for i := len(idx) - 1; i >= 0; i-- {
		d := len(srcs[i])
		idx[i] = row % d
		row /= d
	}
}

// padNext advances idx to the next output row.
func padNext(idx []int, srcs [][]int) {
	for i := len(idx) - 1; i >= 0; i-- {
		idx[i]++
		if idx[i] < len(srcs[i]) {
			return
		}
		idx[i] = 0
	}
}

// padOffset is the input offset of the row at idx, or false when the row
// lies in the constant padding.
func padOffset(idx []int, srcs [][]int, strides []int) (int, bool) {
	off := 0
	for i, o := range idx {
		s := srcs[i][o]
		if s < 0 {
			return 0, false
		}
		off += s * strides[i]
	}
	return off, true
}
