package data

import (
	"fmt"
	"os"

	"github.com/gopir/gopir/memory"
	"github.com/gopir/gopir/tensor"
)

// MNIST image geometry and the usual normalization constants (the mean and
// standard deviation of the training pixels scaled to [0, 1]).
const (
	MNISTRows    = 28
	MNISTCols    = 28
	MNISTPixels  = MNISTRows * MNISTCols
	MNISTClasses = 10
	MNISTMean    = 0.1307
	MNISTStd     = 0.3081
)

// MNIST is one split of the MNIST digits held in memory: N images of
// 28×28 bytes (0 background … 255 ink), row-major, one after another, and
// their labels 0..9.
type MNIST struct {
	N      int
	Images []uint8 // N*28*28
	Labels []uint8 // N
}

// LoadMNIST reads the training (60000) and test (10000) splits from dir, or
// from wherever FindMNIST finds them when dir is "".
func LoadMNIST(dir string) (train, test *MNIST, err error) {
	dir, _, err = FindMNIST(dir)
	if err != nil {
		return nil, nil, err
	}
	if train, err = loadSplit(dir, MNISTFiles[0], MNISTFiles[1]); err != nil {
		return nil, nil, err
	}
	if test, err = loadSplit(dir, MNISTFiles[2], MNISTFiles[3]); err != nil {
		return nil, nil, err
	}
	return train, test, nil
}

func loadSplit(dir, images, labels string) (*MNIST, error) {
	img, ipath, err := readIDXFile(dir, images)
	if err != nil {
		return nil, err
	}
	if len(img.Dims) != 3 || img.Dims[1] != MNISTRows || img.Dims[2] != MNISTCols {
		return nil, fmt.Errorf("%s: images of shape %v, want [N 28 28]", ipath, img.Dims)
	}
	lab, lpath, err := readIDXFile(dir, labels)
	if err != nil {
		return nil, err
	}
	if len(lab.Dims) != 1 {
		return nil, fmt.Errorf("%s: labels of shape %v, want [N]", lpath, lab.Dims)
	}
	if lab.Dims[0] != img.Dims[0] {
		return nil, fmt.Errorf("%s has %d labels but %s has %d images", lpath, lab.Dims[0], ipath, img.Dims[0])
	}
	for i, l := range lab.Data {
		if l >= MNISTClasses {
			return nil, fmt.Errorf("%s: label %d of item %d is not a digit", lpath, l, i)
		}
	}
	return &MNIST{N: img.Dims[0], Images: img.Data, Labels: lab.Data}, nil
}

func readIDXFile(dir, name string) (*IDX, string, error) {
	path := mnistPath(dir, name)
	if path == "" {
		return nil, "", fmt.Errorf("MNIST file %s not found in %s", name, dir)
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, path, err
	}
	defer f.Close()
	x, err := ReadIDX(f)
	if err != nil {
		return nil, path, fmt.Errorf("%s: %w", path, err)
	}
	return x, path, nil
}

// mnistLUT maps a pixel byte to its normalized value (p/255 - mean)/std.
var mnistLUT = func() (t [256]float32) {
	for p := range t {
		t[p] = float32((float64(p)/255 - MNISTMean) / MNISTStd)
	}
	return t
}()

// Batch gathers the items idx into x, f32 [B,1,28,28] normalized as
// (p/255 - 0.1307)/0.3081, and y, i64 [B] with the labels. The caller owns
// both and releases them. An index out of range is an error and allocates
// nothing.
func (m *MNIST) Batch(a *memory.Allocator, idx []int) (x, y *tensor.Tensor, err error) {
	for _, i := range idx {
		if i < 0 || i >= m.N {
			return nil, nil, fmt.Errorf("mnist: index %d out of range [0, %d)", i, m.N)
		}
	}
	b := len(idx)
	if x, err = tensor.New(a, tensor.F32, b, 1, MNISTRows, MNISTCols); err != nil {
		return nil, nil, err
	}
	if y, err = tensor.New(a, tensor.I64, b); err != nil {
		x.Release()
		return nil, nil, err
	}
	xs, ys := x.F32(), y.I64()
	for k, i := range idx {
		src := m.Images[i*MNISTPixels : (i+1)*MNISTPixels]
		dst := xs[k*MNISTPixels : (k+1)*MNISTPixels]
		for j, p := range src {
			dst[j] = mnistLUT[p]
		}
		ys[k] = int64(m.Labels[i])
	}
	return x, y, nil
}
