package main

import (
	"encoding/json"
	"image"
	_ "image/png"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A training run's picture decodes to a drawn-on PNG, and its trace's
// allocated counter peaks at the highest peak_allocated the steps report.
func TestTrainMemoryTimelineAndTrace(t *testing.T) {
	dir := t.TempDir()
	png, trace := filepath.Join(dir, "tinydet.png"), filepath.Join(dir, "tinydet.json")
	r := gopir("train", "--model", "tinydet", "--steps", "3", "--log-every", "1", "--json",
		"--memory-timeline", png, "--trace", trace)
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	var peak int64
	for _, line := range strings.Split(strings.TrimSpace(r.stdout), "\n") {
		var rec struct {
			Peak *int64 `json:"peak_allocated"`
		}
		if json.Unmarshal([]byte(line), &rec) == nil && rec.Peak != nil {
			peak = max(peak, *rec.Peak)
		}
	}
	if peak == 0 {
		t.Fatalf("no peak_allocated in %q", r.stdout)
	}
	f, err := os.Open(png)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	img, _, err := image.Decode(f)
	if err != nil {
		t.Fatalf("the picture does not decode: %v", err)
	}
	b := img.Bounds()
	ink := 0
	for y := b.Min.Y; y < b.Max.Y; y += 2 {
		for x := b.Min.X; x < b.Max.X; x += 2 {
			if r, g, bl, _ := img.At(x, y).RGBA(); r&g&bl < 0xf000 {
				ink++
			}
		}
	}
	if b.Dx() < 800 || b.Dy() < 500 || float64(ink) < 0.1*float64(b.Dx()*b.Dy()/4) {
		t.Errorf("picture %dx%d with %d of %d sampled pixels drawn", b.Dx(), b.Dy(), ink, b.Dx()*b.Dy()/4)
	}
	data, err := os.ReadFile(trace)
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		TraceEvents []struct {
			Name string `json:"name"`
			Ph   string `json:"ph"`
			Cat  string `json:"cat"`
			Args struct {
				Bytes int64 `json:"bytes"`
			} `json:"args"`
		} `json:"traceEvents"`
	}
	if err := json.Unmarshal(data, &doc); err != nil {
		t.Fatalf("the trace does not parse: %v", err)
	}
	var maxAlloc int64
	cats := map[string]bool{}
	for _, e := range doc.TraceEvents {
		if e.Ph == "C" && e.Name == "allocated" {
			maxAlloc = max(maxAlloc, e.Args.Bytes)
		}
		cats[e.Cat] = true
	}
	if maxAlloc != peak {
		t.Errorf("the trace's allocated counter peaks at %d, the steps at %d", maxAlloc, peak)
	}
	for _, c := range []string{"forward", "backward", "update", "run"} {
		if !cats[c] {
			t.Errorf("no slice of category %q in the trace", c)
		}
	}
}

// A run that runs out of memory still leaves its picture: the failed run.
func TestRunTimelineOfAFailedRun(t *testing.T) {
	png := filepath.Join(t.TempDir(), "oom.png")
	r := gopir("run", "testdata/big.pir", "--mem-limit", "6MiB", "--memory-timeline", png)
	if r.code != 1 || !strings.Contains(r.stderr, "ResourceExhaustedError") {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	f, err := os.Open(png)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, _, err := image.Decode(f); err != nil {
		t.Fatalf("the picture does not decode: %v", err)
	}
}

func TestTimelineBadInput(t *testing.T) {
	dir := t.TempDir()
	for _, args := range [][]string{
		{"run", "testdata/big.pir", "--memory-timeline", filepath.Join(dir, "t.gif")},
		{"run", "testdata/big.pir", "--memory-timeline", filepath.Join(dir, "no", "t.png")},
		{"run", "testdata/big.pir", "--trace", filepath.Join(dir, "no", "t.json")},
		{"train", "--model", "mlp", "--steps", "1", "--memory-timeline", "t.jpeg"},
		{"train", "--model", "nosuch", "--trace", filepath.Join(dir, "t.json")},
	} {
		r := gopir(args...)
		if r.code != 2 || strings.Count(strings.TrimSpace(r.stderr), "\n") != 0 {
			t.Errorf("%v: exit %d, stderr %q; want 2 and one line", args, r.code, r.stderr)
		}
	}
	// The run that never started leaves no trace file behind.
	if _, err := os.Stat(filepath.Join(dir, "t.json")); !os.IsNotExist(err) {
		t.Errorf("a trace file was left: %v", err)
	}
}
