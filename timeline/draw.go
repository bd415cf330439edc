package timeline

import (
	"fmt"
	"image/color"
	"io"
	"sort"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// StepStat is the allocator's figures after one step of a run.
type StepStat struct {
	Step                      int
	Allocated, Reserved, Peak int64
}

// Picture is what Draw draws: one recorded run and the figures after
// every step of the whole run it belongs to.
type Picture struct {
	Title string // of the top panel; "" for a default
	Run   *Run
	Steps []StepStat
	// Unit names a step of Steps ("step" when empty; "run" for repeated
	// runs).
	Unit string
	// Width and Height of the picture; zero for 12in x 8in.
	Width, Height vg.Length
}

// Formats Draw writes, by file extension.
var Formats = []string{"png", "svg"}

// Draw writes the picture in format ("png" or "svg"): on top, the bytes
// alive over the run's instructions as a stack of its buffers, coloured
// by the op that made them, the largest labelled, the peak marked and
// the phases shaded; below, allocated, reserved and peak bytes after
// every step.
func Draw(w io.Writer, format string, pic Picture) error {
	if format != "png" && format != "svg" {
		return fmt.Errorf("timeline: format %q: want png or svg", format)
	}
	if pic.Run == nil {
		return fmt.Errorf("timeline: no run was recorded")
	}
	width, height := pic.Width, pic.Height
	if width == 0 || height == 0 {
		width, height = 12*vg.Inch, 8*vg.Inch
	}
	c, err := draw.NewFormattedCanvas(width, height, format)
	if err != nil {
		return err
	}
	dc := draw.New(c)
	if len(pic.Steps) == 0 { // not one step finished
		stepPlot(Lay(pic.Run), pic.Title).Draw(dc)
	} else {
		top, bottom := dc, dc
		h := dc.Max.Y - dc.Min.Y
		top.Min.Y = dc.Min.Y + h*0.3
		bottom.Max.Y = dc.Min.Y + h*0.29
		stepPlot(Lay(pic.Run), pic.Title).Draw(top)
		unit := pic.Unit
		if unit == "" {
			unit = "step"
		}
		runPlot(pic.Steps, unit).Draw(bottom)
	}
	_, err = c.WriteTo(w)
	return err
}

func mib(n float64) float64 { return n / (1 << 20) }

// palette colours the ops that hold the most bytes over the run; the rest
// share other.
var (
	palette = []color.RGBA{
		{0x4e, 0x79, 0xa7, 255}, {0xf2, 0x8e, 0x2b, 255}, {0xe1, 0x57, 0x59, 255},
		{0x76, 0xb7, 0xb2, 255}, {0x59, 0xa1, 0x4f, 255}, {0xed, 0xc9, 0x48, 255},
		{0xb0, 0x7a, 0xa1, 255}, {0xff, 0x9d, 0xa7, 255}, {0x9c, 0x75, 0x5f, 255},
	}
	other     = color.RGBA{0xba, 0xb0, 0xac, 255}
	baseColor = color.RGBA{0xd9, 0xd9, 0xd9, 255}
	phaseFill = map[string]color.RGBA{
		"forward":  {0xe8, 0xf0, 0xfb, 255},
		"backward": {0xfb, 0xec, 0xe3, 255},
		"update":   {0xe6, 0xf5, 0xe4, 255},
	}
)

// opColors ranks ops by bytes × instructions held and gives the first
// ones a colour each.
func opColors(l *Layout) (map[string]color.RGBA, []string) {
	weight := map[string]float64{}
	for _, b := range l.Buffers {
		weight[b.Tag.Op] += float64(b.Bytes) * (b.To - b.From)
	}
	ops := make([]string, 0, len(weight))
	for op := range weight {
		ops = append(ops, op)
	}
	sort.Slice(ops, func(i, j int) bool {
		if weight[ops[i]] != weight[ops[j]] {
			return weight[ops[i]] > weight[ops[j]]
		}
		return ops[i] < ops[j]
	})
	if len(ops) > len(palette) {
		ops = ops[:len(palette)]
	}
	colors := map[string]color.RGBA{}
	for i, op := range ops {
		colors[op] = palette[i]
	}
	return colors, ops
}

// shade darkens c a little, so that neighbouring buffers of one op stay
// apart.
func shade(c color.RGBA) color.RGBA {
	return color.RGBA{uint8(int(c.R) * 7 / 8), uint8(int(c.G) * 7 / 8), uint8(int(c.B) * 7 / 8), 255}
}

func textStyle(size vg.Length) draw.TextStyle {
	return draw.TextStyle{Color: color.Black, Font: font.From(plot.DefaultFont, size), Handler: plot.DefaultTextHandler}
}

func stepPlot(l *Layout, title string) *plot.Plot {
	p := plot.New()
	if title == "" {
		title = l.Run.Label
	}
	p.Title.Text = fmt.Sprintf("%s: bytes alive over %d instructions, peak %.2f MB", title, len(l.Run.Instrs), mib(float64(l.Peak)))
	p.X.Label.Text = "instruction"
	p.Y.Label.Text = "allocated (MB = 2^20 bytes)"
	colors, ranked := opColors(l)
	p.Add(&phases{l}, &stack{l, colors}, &peakMark{l})
	// Top right, below the phase names: the stack rarely reaches there.
	p.Legend.Top, p.Legend.Left = true, false
	p.Legend.YOffs = -vg.Points(14)
	p.Legend.TextStyle.Font.Size = 8
	p.Legend.ThumbnailWidth = 8
	p.Legend.Add("held before the run", swatch(baseColor))
	for _, op := range ranked {
		p.Legend.Add(op, swatch(colors[op]))
	}
	if len(ranked) == len(palette) {
		p.Legend.Add("other ops", swatch(other))
	}
	return p
}

type swatch color.RGBA

func (s swatch) Thumbnail(c *draw.Canvas) {
	r := c.Rectangle
	c.FillPolygon(color.RGBA(s), []vg.Point{r.Min, {X: r.Max.X, Y: r.Min.Y}, r.Max, {X: r.Min.X, Y: r.Max.Y}})
}

// phases shades the run's phases.
type phases struct{ l *Layout }

func (ph *phases) Plot(c draw.Canvas, p *plot.Plot) {
	trX, _ := p.Transforms(&c)
	sty := textStyle(9)
	sty.XAlign, sty.YAlign = draw.XCenter, draw.YTop
	for _, f := range ph.l.Phases() {
		x0, x1 := trX(f.From), trX(f.To)
		fill, ok := phaseFill[f.Name]
		if !ok {
			fill = color.RGBA{0xf2, 0xf2, 0xf2, 255}
		}
		c.FillPolygon(fill, c.ClipPolygonXY([]vg.Point{{X: x0, Y: c.Min.Y}, {X: x1, Y: c.Min.Y}, {X: x1, Y: c.Max.Y}, {X: x0, Y: c.Max.Y}}))
		c.FillText(sty, vg.Point{X: (x0 + x1) / 2, Y: c.Max.Y - 2}, f.Name)
	}
}

// stack draws the bytes held from before the run and every buffer.
type stack struct {
	l      *Layout
	colors map[string]color.RGBA
}

func (s *stack) DataRange() (xmin, xmax, ymin, ymax float64) {
	return 0, max(s.l.Width, 1), 0, mib(float64(s.l.Peak)) * 1.1
}

// steps returns the polygon between the step function (xs, ys) up to end
// and the same raised by h.
func steps(xs, ys []float64, end, h float64) []plotter.XY {
	var bottom, top []plotter.XY
	for i, x := range xs {
		x1 := end
		if i+1 < len(xs) {
			x1 = xs[i+1]
		}
		bottom = append(bottom, plotter.XY{X: x, Y: ys[i]}, plotter.XY{X: x1, Y: ys[i]})
		top = append(top, plotter.XY{X: x, Y: ys[i] + h}, plotter.XY{X: x1, Y: ys[i] + h})
	}
	for i := len(top) - 1; i >= 0; i-- {
		bottom = append(bottom, top[i])
	}
	return bottom
}

func (s *stack) Plot(c draw.Canvas, p *plot.Plot) {
	trX, trY := p.Transforms(&c)
	poly := func(col color.Color, xys []plotter.XY) {
		pts := make([]vg.Point, len(xys))
		for i, xy := range xys {
			pts[i] = vg.Point{X: trX(xy.X), Y: trY(mib(xy.Y))}
		}
		c.FillPolygon(col, c.ClipPolygonXY(pts))
	}
	for i := range s.l.Base {
		x1 := s.l.Width
		if i+1 < len(s.l.BaseX) {
			x1 = s.l.BaseX[i+1]
		}
		poly(baseColor, []plotter.XY{{X: s.l.BaseX[i], Y: 0}, {X: x1, Y: 0}, {X: x1, Y: s.l.Base[i]}, {X: s.l.BaseX[i], Y: s.l.Base[i]}})
	}
	for i, b := range s.l.Buffers {
		if len(b.X) == 0 {
			continue
		}
		col, ok := s.colors[b.Tag.Op]
		if !ok {
			col = other
		}
		if i%2 == 1 {
			col = shade(col)
		}
		poly(col, steps(b.X, b.Bottom, b.To, float64(b.Bytes)))
	}
}

// peakMark marks the peak and labels the largest buffers alive there.
type peakMark struct{ l *Layout }

func (m *peakMark) Plot(c draw.Canvas, p *plot.Plot) {
	trX, trY := p.Transforms(&c)
	x := trX(m.l.PeakX)
	c.StrokeLine2(draw.LineStyle{Color: color.Black, Width: vg.Points(0.8), Dashes: []vg.Length{vg.Points(3), vg.Points(2)}}, x, c.Min.Y, x, c.Max.Y)
	sty := textStyle(9)
	sty.XAlign, sty.YAlign = draw.XLeft, draw.YBottom
	c.FillText(sty, vg.Point{X: x + 3, Y: trY(mib(float64(m.l.Peak)))}, fmt.Sprintf("peak %.2f MB", mib(float64(m.l.Peak))))
	small := textStyle(7)
	small.XAlign, small.YAlign = draw.XLeft, draw.YCenter
	height := small.Font.Size
	for i, b := range m.l.AtPeak {
		if i == 6 {
			break
		}
		bottom := b.Bottom[0]
		for k, bx := range b.X {
			if bx <= m.l.PeakX {
				bottom = b.Bottom[k]
			}
		}
		y0, y1 := trY(mib(bottom)), trY(mib(bottom+float64(b.Bytes)))
		if y1-y0 < height {
			continue
		}
		label := fmt.Sprintf("%s %s %.2f MB", b.Tag.Op, b.Tag.Value, mib(float64(b.Bytes)))
		c.FillText(small, vg.Point{X: x + 3, Y: (y0 + y1) / 2}, label)
	}
}

func runPlot(steps []StepStat, unit string) *plot.Plot {
	p := plot.New()
	p.Title.Text = fmt.Sprintf("after every %s: allocated and reserved bytes (flat lines: nothing leaks)", unit)
	p.Title.TextStyle.Font.Size = 10
	p.X.Label.Text = unit
	p.Y.Label.Text = "MB"
	p.Y.Min = 0
	series := []struct {
		name  string
		value func(StepStat) int64
		color color.RGBA
		dash  []vg.Length
	}{
		{"reserved", func(s StepStat) int64 { return s.Reserved }, palette[1], nil},
		{"peak allocated", func(s StepStat) int64 { return s.Peak }, palette[2], []vg.Length{vg.Points(4), vg.Points(2)}},
		{"allocated", func(s StepStat) int64 { return s.Allocated }, palette[0], nil},
	}
	for _, sr := range series {
		xys := make(plotter.XYs, len(steps))
		for i, s := range steps {
			xys[i] = plotter.XY{X: float64(s.Step), Y: mib(float64(sr.value(s)))}
		}
		line, points, err := plotter.NewLinePoints(xys)
		if err != nil {
			continue // no steps
		}
		line.Color, line.Dashes = sr.color, sr.dash
		points.Color, points.Radius = sr.color, vg.Points(1.2)
		p.Add(line)
		if len(steps) < 50 {
			p.Add(points)
		}
		p.Legend.Add(sr.name, line)
	}
	p.Legend.Top, p.Legend.Left = false, true
	p.Legend.YOffs = vg.Points(10)
	return p
}
