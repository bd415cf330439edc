package timeline_test

import (
	"bytes"
	"context"
	"encoding/json"
	"encoding/xml"
	"image"
	"image/color"
	_ "image/png"
	"io"
	"os"
	"strings"
	"testing"

	"github.com/gopir/gopir/exec"
	"github.com/gopir/gopir/ir"
	"github.com/gopir/gopir/memory"
	"github.com/gopir/gopir/tensor"
	"github.com/gopir/gopir/timeline"
)

// record runs the program in file n times, each run recorded, and
// returns the runs with the allocator's peak during each.
func record(t *testing.T, file string, feeds func(a *memory.Allocator) map[string]*tensor.Tensor, n int) ([]*timeline.Run, []int64, *memory.Allocator) {
	t.Helper()
	src, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	prog, err := ir.Parse(file, src)
	if err != nil {
		t.Fatal(err)
	}
	a := memory.New(memory.Options{})
	var rec timeline.Recorder
	x, err := exec.Compile(prog, exec.Options{Alloc: a, MemoryLog: rec.Instr})
	if err != nil {
		t.Fatal(err)
	}
	in := feeds(a)
	defer func() {
		for _, f := range in {
			f.Release()
		}
	}()
	var runs []*timeline.Run
	var peaks []int64
	for i := range n {
		a.ResetPeak()
		rec.Begin(a, "run")
		res, err := x.Run(context.Background(), in)
		if err != nil {
			t.Fatal(err)
		}
		res.Release()
		peaks = append(peaks, a.Stats().Allocated.Peak)
		run := rec.End()
		if run == nil || len(run.Instrs) == 0 || len(run.Events) == 0 {
			t.Fatalf("run %d: nothing recorded: %+v", i, run)
		}
		runs = append(runs, run)
	}
	return runs, peaks, a
}

func stepFeeds(a *memory.Allocator) map[string]*tensor.Tensor {
	v := make([]float32, 64*256)
	for i := range v {
		v[i] = float32(i%7) / 7
	}
	x, _ := tensor.FromF32(a, v, 64, 256)
	n, _ := tensor.FromI64(a, []int64{3}, []int{}...)
	return map[string]*tensor.Tensor{"x": x, "n": n}
}

// The layout stacks every buffer exactly: at the peak, the bytes held
// from before plus the buffers alive add up to the allocator's peak, and
// the top of the stack is there.
func TestLayoutIsExact(t *testing.T) {
	runs, peaks, a := record(t, "testdata/step.pir", stepFeeds, 3)
	for i, run := range runs {
		l := timeline.Lay(run)
		if l.Peak != peaks[i] || run.Peak() != peaks[i] {
			t.Fatalf("run %d: layout peak %d, run peak %d, allocator peak %d", i, l.Peak, run.Peak(), peaks[i])
		}
		base := l.Base[0]
		for k, x := range l.BaseX {
			if x <= l.PeakX {
				base = l.Base[k]
			}
		}
		sum, top := base, 0.0
		for _, b := range l.AtPeak {
			if b.From > l.PeakX || b.To < l.PeakX {
				t.Errorf("run %d: buffer %s alive at the peak %g lives [%g, %g]", i, b.Tag.Value, l.PeakX, b.From, b.To)
			}
			sum += float64(b.Bytes)
			bottom := b.Bottom[0]
			for k, x := range b.X {
				if x <= l.PeakX {
					bottom = b.Bottom[k]
				}
			}
			top = max(top, bottom+float64(b.Bytes))
		}
		if int64(sum) != peaks[i] || int64(top) != peaks[i] {
			t.Errorf("run %d: at the peak the stack sums to %g, tops at %g; the allocator peaked at %d", i, sum, top, peaks[i])
		}
		if len(l.Buffers) == 0 || l.Width != float64(len(run.Instrs))+1 {
			t.Errorf("run %d: %d buffers over width %g for %d instructions", i, len(l.Buffers), l.Width, len(run.Instrs))
		}
	}
	// Recording holds nothing on the allocator: with the feeds released,
	// nothing is left.
	if got := a.Stats().Allocated.Current; got != 0 {
		t.Errorf("after the runs %d bytes are still allocated", got)
	}
}

func TestRecorderIgnoresInstructionsOutsideARun(t *testing.T) {
	var rec timeline.Recorder
	rec.Instr(exec.MemoryRecord{Op: "add"})
	if run := rec.End(); run != nil {
		t.Fatalf("End without Begin returned %+v", run)
	}
}

func TestDrawPNG(t *testing.T) {
	runs, peaks, _ := record(t, "testdata/step.pir", stepFeeds, 4)
	var steps []timeline.StepStat
	for i, p := range peaks {
		steps = append(steps, timeline.StepStat{Step: i + 1, Peak: p, Reserved: 32 << 20})
	}
	var buf bytes.Buffer
	if err := timeline.Draw(&buf, "png", timeline.Picture{Run: runs[0], Steps: steps}); err != nil {
		t.Fatal(err)
	}
	img, format, err := image.Decode(&buf)
	if err != nil || format != "png" {
		t.Fatalf("decode: %v (%s)", err, format)
	}
	b := img.Bounds()
	if b.Dx() != 1152 || b.Dy() != 768 {
		t.Errorf("picture is %dx%d, want 1152x768", b.Dx(), b.Dy())
	}
	colors := map[color.RGBA]int{}
	ink := 0
	for y := b.Min.Y; y < b.Max.Y; y++ {
		for x := b.Min.X; x < b.Max.X; x++ {
			r, g, bl, _ := img.At(x, y).RGBA()
			c := color.RGBA{uint8(r >> 8), uint8(g >> 8), uint8(bl >> 8), 255}
			colors[c]++
			if c != (color.RGBA{255, 255, 255, 255}) {
				ink++
			}
		}
	}
	// Axes and text alone cover a few percent; the stacks much more.
	if frac := float64(ink) / float64(b.Dx()*b.Dy()); frac < 0.1 {
		t.Errorf("only %.1f%% of the picture is drawn on", 100*frac)
	}
	if colors[color.RGBA{0x4e, 0x79, 0xa7, 255}]+colors[color.RGBA{0x44, 0x69, 0x92, 255}] < 1000 {
		t.Errorf("the op drawn most is hardly in the picture")
	}
}

func TestDrawSVG(t *testing.T) {
	runs, _, _ := record(t, "testdata/step.pir", stepFeeds, 1)
	var buf bytes.Buffer
	if err := timeline.Draw(&buf, "svg", timeline.Picture{Title: "nested", Run: runs[0]}); err != nil {
		t.Fatal(err)
	}
	d := xml.NewDecoder(bytes.NewReader(buf.Bytes()))
	root := ""
	for {
		tok, err := d.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("the SVG does not parse: %v", err)
		}
		if s, ok := tok.(xml.StartElement); ok && root == "" {
			root = s.Name.Local
		}
	}
	if root != "svg" || !strings.Contains(buf.String(), "nested") {
		t.Errorf("root element %q; title missing or not an SVG", root)
	}
}

func TestDrawErrors(t *testing.T) {
	runs, _, _ := record(t, "testdata/step.pir", stepFeeds, 1)
	if err := timeline.Draw(io.Discard, "gif", timeline.Picture{Run: runs[0]}); err == nil || !strings.Contains(err.Error(), "gif") {
		t.Errorf("gif: %v", err)
	}
	if err := timeline.Draw(io.Discard, "png", timeline.Picture{}); err == nil {
		t.Error("no run: no error")
	}
}

// The trace parses, has a slice per instruction, and its allocated
// counter peaks where the allocator did.
func TestTrace(t *testing.T) {
	runs, peaks, _ := record(t, "testdata/step.pir", stepFeeds, 3)
	var buf bytes.Buffer
	w := timeline.NewTraceWriter(&buf)
	instrs := 0
	for _, r := range runs {
		if err := w.Add(r); err != nil {
			t.Fatal(err)
		}
		instrs += len(r.Instrs)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	var doc struct {
		TraceEvents []struct {
			Name string  `json:"name"`
			Ph   string  `json:"ph"`
			Ts   float64 `json:"ts"`
			Args struct {
				Bytes *int64 `json:"bytes"`
				Pos   string `json:"pos"`
			} `json:"args"`
		} `json:"traceEvents"`
	}
	if err := json.Unmarshal(buf.Bytes(), &doc); err != nil {
		t.Fatalf("the trace does not parse: %v", err)
	}
	slices, maxAlloc, reserved := 0, int64(0), 0
	for _, e := range doc.TraceEvents {
		switch {
		case e.Ph == "X" && e.Args.Pos != "":
			slices++
		case e.Ph == "C" && e.Name == "allocated":
			maxAlloc = max(maxAlloc, *e.Args.Bytes)
		case e.Ph == "C" && e.Name == "reserved":
			reserved++
		}
	}
	want := max(peaks[0], peaks[1], peaks[2])
	if slices != instrs || maxAlloc != want || reserved == 0 {
		t.Errorf("%d instruction slices (want %d), allocated counter peaks at %d (want %d), %d reserved samples", slices, instrs, maxAlloc, want, reserved)
	}
}
