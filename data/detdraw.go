package data

import "math"

// classStyle is how a class looks: a shape and the color (a weight per RGB
// channel) it is painted in.
type classStyle struct {
	name   string
	color  [3]float32
	inside func(u, v, w, h int) bool // is pixel (u, v) of a w×h box part of the shape
}

// classStyles are the classes in order; NumClasses takes the first ones.
var classStyles = [...]classStyle{
	{"filled-rect", [3]float32{1, 0.25, 0.25}, func(u, v, w, h int) bool { return true }},
	{"hollow-rect", [3]float32{0.25, 1, 0.25}, func(u, v, w, h int) bool {
		const t = 2
		return u < t || v < t || u >= w-t || v >= h-t
	}},
	{"cross", [3]float32{0.25, 0.25, 1}, func(u, v, w, h int) bool {
		return inBar(u, w) || inBar(v, h)
	}},
	{"disk", [3]float32{1, 1, 0.2}, func(u, v, w, h int) bool {
		return ellipse(u, v, float64(w)/2, float64(h)/2, w, h) <= 1
	}},
	{"ring", [3]float32{0.2, 1, 1}, func(u, v, w, h int) bool {
		return ellipse(u, v, float64(w)/2, float64(h)/2, w, h) <= 1 &&
			ellipse(u, v, float64(w)/2-2, float64(h)/2-2, w, h) > 1
	}},
	{"x", [3]float32{1, 0.2, 1}, func(u, v, w, h int) bool {
		fu, fv := (float64(u)+0.5)/float64(w), (float64(v)+0.5)/float64(h)
		return math.Abs(fu-fv) < 0.18 || math.Abs(fu+fv-1) < 0.18
	}},
}

// ClassName names class c of the detection set ("filled-rect", ...).
func ClassName(c int) string {
	if c < 0 || c >= len(classStyles) {
		return "?"
	}
	return classStyles[c].name
}

// inBar says whether u lies in the middle third (at least 2 pixels) of n.
func inBar(u, n int) bool {
	t := max(2, n/3)
	lo := (n - t) / 2
	return u >= lo && u < lo+t
}

// ellipse is the normalized squared distance of pixel (u, v)'s center from
// the center of a w×h box, for semi-axes a and b.
func ellipse(u, v int, a, b float64, w, h int) float64 {
	if a <= 0 || b <= 0 {
		return math.Inf(1)
	}
	du := (float64(u) + 0.5 - float64(w)/2) / a
	dv := (float64(v) + 0.5 - float64(h)/2) / b
	return du*du + dv*dv
}

// Pixel values: background noise in [0, bgNoise), a shape pixel is its
// color times an intensity in [0.75, 1) per object plus noise in
// [0, fgNoise), clamped to 1.
const (
	bgNoise = 0.35
	fgNoise = 0.1
)

// render writes image i, 3×H×W, into dst.
func (d *Detection) render(i int, dst []float32) {
	c := d.cfg
	r := newRNG(c.Seed, streamID(domainDetPixels, i))
	for j := range dst {
		dst[j] = bgNoise * r.float32()
	}
	plane := c.H * c.W
	for _, o := range d.objs[i] {
		st := &classStyles[o.Class]
		intensity := 0.75 + 0.25*r.float32()
		x0, y0 := int(o.Box[0]), int(o.Box[1])
		w, h := int(o.Box[2])-x0, int(o.Box[3])-y0
		for v := range h {
			for u := range w {
				if !st.inside(u, v, w, h) {
					continue
				}
				p := (y0+v)*c.W + x0 + u
				for ch := range 3 {
					dst[ch*plane+p] = min(1, st.color[ch]*intensity+fgNoise*r.float32())
				}
			}
		}
	}
}
