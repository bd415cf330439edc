package tensor_test

import (
	"bytes"
	"testing"

	"github.com/gopir/gopir/memory"
	"github.com/gopir/gopir/tensor"
)

func sampleFile(t testing.TB) []byte {
	a := memory.New(memory.Options{})
	x, _ := tensor.FromF32(a, []float32{1, 2, 3, 4, 5, 6}, 2, 3)
	y, _ := tensor.FromI64(a, []int64{7}, []int{}...)
	defer x.Release()
	defer y.Release()
	var buf bytes.Buffer
	if err := tensor.WriteSafetensors(&buf, map[string]*tensor.Tensor{"w": x, "step": y}, map[string]string{"model": "m"}); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func TestSafetensorsRoundTrip(t *testing.T) {
	ts, meta, err := tensor.ParseSafetensors(sampleFile(t))
	if err != nil {
		t.Fatal(err)
	}
	if meta["model"] != "m" || len(ts) != 2 || ts["w"].DType != tensor.F32 || len(ts["w"].Data) != 24 || ts["step"].Data[0] != 7 {
		t.Fatalf("read back %v %v", ts, meta)
	}
}

// FuzzSafetensors: the reader never panics, and whatever it accepts has
// offsets inside the data.
func FuzzSafetensors(f *testing.F) {
	f.Add(sampleFile(f))
	f.Add([]byte{})
	f.Add([]byte{255, 255, 255, 255, 255, 255, 255, 255})
	f.Fuzz(func(t *testing.T, file []byte) {
		ts, _, err := tensor.ParseSafetensors(file)
		if err != nil {
			return
		}
		for name, x := range ts {
			n := 1
			for _, d := range x.Shape {
				n *= d
			}
			if len(x.Data) != n*x.DType.Size() {
				t.Fatalf("%s: %d bytes for shape %v", name, len(x.Data), x.Shape)
			}
		}
	})
}
