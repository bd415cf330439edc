package kernels

import "math"

// Grid sampling (PyTorch's grid_sample, ONNX's GridSample): each output
// position reads the input at a point the grid gives in normalized
// coordinates, by bilinear, nearest or bicubic interpolation.

// GridSampleMode is the interpolation.
type GridSampleMode uint8

const (
	GridBilinear GridSampleMode = iota
	GridNearest
	GridBicubic
)

// GridPadding says what points outside the input read.
type GridPadding uint8

const (
	GridZeros      GridPadding = iota // zeros
	GridBorder                        // the point clamped to the input
	GridReflection                    // the point reflected about the input's edges, then clamped
)

// GridSampleParams describes a sampling of an N×C×H×W input at the
// points of an N×OH×OW×2 grid, whose last dim holds (x, y) in [−1, 1]:
// −1 and 1 are the centers of the edge elements with AlignCorners, their
// outer edges without.
type GridSampleParams struct {
	N, C, H, W, OH, OW int
	Mode               GridSampleMode
	Padding            GridPadding
	AlignCorners       bool
}

// gridTap is one input element a point reads, in the plane, and its
// weight with the weight's derivatives along x and y.
type gridTap struct {
	off           int
	w, dwdx, dwdy float64
}

// gridCoord maps normalized coordinate g along a dim of size n to an input
// coordinate, and returns the derivative of the result with respect to g.
// Padding applies unless raw (bicubic pads each tap instead).
func (p *GridSampleParams) gridCoord(g float64, n int, raw bool) (c, dc float64) {
	if p.AlignCorners {
		c, dc = (g+1)/2*float64(n-1), float64(n-1)/2
	} else {
		c, dc = ((g+1)*float64(n)-1)/2, float64(n)/2
	}
	if raw {
		return c, dc
	}
	c, m := p.pad(c, n)
	return c, dc * m
}

// pad applies the padding mode to coordinate c along a dim of size n and
// returns the derivative of the result with respect to c.
func (p *GridSampleParams) pad(c float64, n int) (float64, float64) {
	m := 1.0
	switch p.Padding {
	case GridZeros:
		return c, m
	case GridReflection:
		if p.AlignCorners {
			c, m = gridReflect(c, 0, 2*float64(n-1))
		} else {
			c, m = gridReflect(c, -1, 2*float64(n)-1)
		}
	}
	// The edges count as outside for the derivative, as in PyTorch.
	switch {
	case c <= 0:
		return 0, 0
	case c >= float64(n-1):
		return float64(n - 1), 0
	}
	return c, m
}

// gridReflect reflects c into [twiceLow/2, twiceHigh/2] about its ends,
// as often as needed, and returns the derivative (±1).
func gridReflect(c, twiceLow, twiceHigh float64) (float64, float64) {
	if twiceLow == twiceHigh {
		return 0, 0
	}
	lo, span := twiceLow/2, (twiceHigh-twiceLow)/2
	m := 1.0
	c -= lo
	if c < 0 {
		c, m = -c, -1
	}
	extra := math.Mod(c, span)
	if int(math.Floor(c/span))%2 == 0 {
		return extra + lo, m
	}
	return span - extra + lo, -m
}

// gridInside reports whether integer coordinate i (as a float) lies in
// [0, n).
func gridInside(i float64, n int) bool { return i >= 0 && i < float64(n) }

// taps appends to ts the input elements point (gx, gy) reads and returns
// them with the derivatives of the input coordinates with respect to gx
// and gy.
func (p *GridSampleParams) taps(ts []gridTap, gx, gy float64) ([]gridTap, float64, float64) {
	ts = ts[:0]
	bicubic := p.Mode == GridBicubic
	x, dx := p.gridCoord(gx, p.W, bicubic)
	y, dy := p.gridCoord(gy, p.H, bicubic)
	switch p.Mode {
	case GridNearest:
		xi, yi := math.RoundToEven(x), math.RoundToEven(y)
		if gridInside(xi, p.W) && gridInside(yi, p.H) {
			ts = append(ts, gridTap{off: int(yi)*p.W + int(xi), w: 1})
		}
		return ts, 0, 0
	case GridBilinear:
		x0, y0 := math.Floor(x), math.Floor(y)
		fx, fy := x-x0, y-y0
		for _, t := range [4]struct {
			dx, dy        float64
			w, dwdx, dwdy float64
		}{
			{0, 0, (1 - fx) * (1 - fy), -(1 - fy), -(1 - fx)},
			{1, 0, fx * (1 - fy), 1 - fy, -fx},
			{0, 1, (1 - fx) * fy, -fy, 1 - fx},
			{1, 1, fx * fy, fy, fx},
		} {
			xi, yi := x0+t.dx, y0+t.dy
			if gridInside(xi, p.W) && gridInside(yi, p.H) {
				ts = append(ts, gridTap{off: int(yi)*p.W + int(xi), w: t.w, dwdx: t.dwdx, dwdy: t.dwdy})
			}
		}
		return ts, dx, dy
	}
	x0, y0 := math.Floor(x), math.Floor(y)
	var cx, cy, dcx, dcy [4]float64
	gridCubic(x-x0, &cx, &dcx)
	gridCubic(y-y0, &cy, &dcy)
	for i := range 4 {
		yi, _ := p.pad(y0-1+float64(i), p.H)
		for j := range 4 {
			xi, _ := p.pad(x0-1+float64(j), p.W)
			if gridInside(xi, p.W) && gridInside(yi, p.H) {
				ts = append(ts, gridTap{off: int(yi)*p.W + int(xi), w: cx[j] * cy[i], dwdx: dcx[j] * cy[i], dwdy: cx[j] * dcy[i]})
			}
		}
	}
	return ts, dx, dy
}

// gridCubicA is PyTorch's bicubic coefficient.
const gridCubicA = -0.75

// gridCubic sets the weights of the taps at distances t+1, t, 1−t, 2−t
// and their derivatives with respect to t.
func gridCubic(t float64, c, dc *[4]float64) {
	for i, d := range [4]float64{t + 1, t, 1 - t, 2 - t} {
		sign := 1.0
		if i >= 2 {
			sign = -1
		}
		c[i] = cubicWeight(gridCubicA, d)
		dc[i] = sign * cubicSlope(gridCubicA, d)
	}
}

// cubicSlope is the derivative of cubicWeight at distance d ≥ 0.
func cubicSlope(a, d float64) float64 {
	switch {
	case d <= 1:
		return (3*(a+2)*d - 2*(a+3)) * d
	case d < 2:
		return (3*a*d-10*a)*d + 8*a
	}
	return 0
}

// GridSample writes into out (N×C×OH×OW) the input sampled at each grid
// point: the sum of its taps' weights times their elements, in float64;
// taps outside the input read 0 (after border or reflection padding moved
// the point, or each bicubic tap, inside). Output rows are split over
// threads.
func GridSample[T nnFloat](p GridSampleParams, x, grid, out []T, threads int) {
	hw, ohw := p.H*p.W, p.OH*p.OW
	nnFor(threads, p.N*p.OH, p.OW*p.C*16, func(lo, hi int) {
		var ts []gridTap
		for row := lo; row < hi; row++ {
			n := row / p.OH
			for q := row * p.OW; q < (row+1)*p.OW; q++ {
				ts, _, _ = p.taps(ts, float64(grid[2*q]), float64(grid[2*q+1]))
				o := q - n*ohw
				for c := range p.C {
					xp := x[(n*p.C+c)*hw:]
					var s float64
					for _, t := range ts {
						s += t.w * float64(xp[t.off])
					}
					out[(n*p.C+c)*ohw+o] = T(s)
				}
			}
		}
	})
}

// GridSampleGrad writes the gradients of GridSample given dy: into dx
// each element of dy times each tap's weight, added at the tap; into dgrid
// the derivative of the sampled value with respect to each grid
// coordinate, dotted with dy over the channels (0 for nearest sampling,
// and where padding clamps the point). dx is split over samples and
// channels, dgrid over output rows.
func GridSampleGrad[T nnFloat](p GridSampleParams, dy, x, grid, dx, dgrid []T, threads int) {
	hw, ohw := p.H*p.W, p.OH*p.OW
	nnFor(threads, p.N*p.C, ohw*16+hw, func(lo, hi int) {
		var ts []gridTap
		for pl := lo; pl < hi; pl++ {
			n := pl / p.C
			dxp := dx[pl*hw : (pl+1)*hw]
			clear(dxp)
			g := dy[pl*ohw : (pl+1)*ohw]
			for o, v := range g {
				q := n*ohw + o
				ts, _, _ = p.taps(ts, float64(grid[2*q]), float64(grid[2*q+1]))
				for _, t := range ts {
					dxp[t.off] += T(t.w * float64(v))
				}
			}
		}
	})
	nnFor(threads, p.N*p.OH, p.OW*p.C*16, func(lo, hi int) {
		var ts []gridTap
		for row := lo; row < hi; row++ {
			n := row / p.OH
			for q := row * p.OW; q < (row+1)*p.OW; q++ {
				var ddx, ddy float64
				var cx, cy float64
				ts, cx, cy = p.taps(ts, float64(grid[2*q]), float64(grid[2*q+1]))
				o := q - n*ohw
				for c := range p.C {
					xp := x[(n*p.C+c)*hw:]
					g := float64(dy[(n*p.C+c)*ohw+o])
					for _, t := range ts {
						v := float64(xp[t.off]) * g
						ddx += t.dwdx * v
						ddy += t.dwdy * v
					}
				}
				dgrid[2*q], dgrid[2*q+1] = T(ddx*cx), T(ddy*cy)
			}
		}
	})
}
