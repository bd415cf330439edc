package ops_test

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/gopir/gopir/ir"
	"github.com/gopir/gopir/memory"
	"github.com/gopir/gopir/ops"
	"github.com/gopir/gopir/tensor"
)

func TestNNCrossEntropy(t *testing.T) {
	nnDebug(t)
	r := rand.New(rand.NewPCG(19, 20))
	cases := []struct {
		shape  []int
		axis   int
		ignore int
	}{
		{[]int{6, 5}, -1, -100}, {[]int{6, 5}, 0, -100}, {[]int{2, 4, 3, 3}, 1, -100}, {[]int{7, 4}, 1, 2},
		{[]int{7}, 0, -100}, {[]int{1, 1}, 1, -100}, {[]int{0, 5}, 1, -100}, {[]int{3, 1, 0}, 1, -100},
		{[]int{13, 11}, -1, 0}, {[]int{256, 1000}, 1, -100}, {[]int{5, 0}, 1, -1},
	}
	for _, dt := range nnDTypes {
		for _, ldt := range []tensor.DType{tensor.I64, tensor.I32} {
			for _, tc := range cases {
				t.Run(fmt.Sprintf("%s/%s/%v/%d/%d", dt, ldt, tc.shape, tc.axis, tc.ignore), func(t *testing.T) {
					a := memory.New(memory.Options{})
					axis := tc.axis
					if axis < 0 {
						axis += len(tc.shape)
					}
					n := tc.shape[axis]
					lshape := append(append([]int(nil), tc.shape[:axis]...), tc.shape[axis+1:]...)
					labs := make([]float64, nnSize(lshape))
					for i := range labs {
						if n == 0 || r.IntN(5) == 0 {
							labs[i] = float64(tc.ignore)
						} else {
							labs[i] = float64(r.IntN(n))
						}
					}
					x := randTensor(t, a, r, dt, tc.shape...)
					l := nnFrom(t, a, ldt, labs, lshape...)
					logp := nnRefSoftmax(nnVals(x), tc.shape, axis, true)
					probs := nnRefSoftmax(nnVals(x), tc.shape, axis, false)
					inner := nnSize(tc.shape[axis+1:])
					want := make([]float64, len(labs))
					for i, lab := range labs {
						if int(lab) != tc.ignore {
							o, in := i/inner, i%inner
							want[i] = -logp[(o*n+int(lab))*inner+in]
						}
					}
					attrs := ir.A("axis", tc.axis, "ignore_index", tc.ignore)
					outs := mustRun(t, a, "cross_entropy_with_softmax", attrs, x, l)
					closeEnough(t, "loss", outs[0], want, lshape, nnTol(dt))
					closeEnough(t, "softmax", outs[1], probs, tc.shape, nnTol(dt))
					for _, th := range []int{1, 3} {
						o := nnRunThreads(t, a, th, "cross_entropy_with_softmax", attrs, x, l)
						for i := range o {
							nnSameBits(t, fmt.Sprintf("result %d with %d threads", i, th), o[i], outs[i])
						}
						release(o...)
					}
					release(outs...)
					release(x, l)
					wantAllocated(t, a, 0)
				})
			}
		}
	}
}

func TestNNCrossEntropyBadLabel(t *testing.T) {
	a := memory.New(memory.Options{})
	x := randTensor(t, a, rand.New(rand.NewPCG(1, 2)), tensor.F32, 2, 4, 3)
	for _, tc := range []struct {
		labels []float64
		want   []string
	}{
		{[]float64{0, 1, 2, 3, -100, 7}, []string{"label 7", "position [1 2]", "tensor<2x3xi64>", "[0, 4)"}},
		{[]float64{0, -1, 2, 9, -100, 7}, []string{"label -1", "position [0 1]"}},
		{[]float64{4, 1, 2, 3, 3, 3}, []string{"label 4", "position [0 0]"}},
	} {
		l := nnFrom(t, a, tensor.I64, tc.labels, 2, 3)
		for _, th := range []int{1, 2, 3} {
			b := ir.NewBuilder(ir.NewProgram())
			op := b.Op("cross_entropy_with_softmax", ir.A("axis", 1), ops.Data(b, "x", ir.F32, 2, 4, 3), ops.Data(b, "l", ir.I64, 2, 3))
			k, err := ops.Bind(op)
			if err != nil {
				t.Fatal(err)
			}
			_, err = k(&ops.Ctx{Alloc: a, Threads: th}, []*tensor.Tensor{x, l})
			if err == nil {
				t.Fatalf("labels %v: no error", tc.labels)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Fatalf("labels %v: error %q does not mention %q", tc.labels, err, w)
				}
			}
		}
		release(l)
	}
	release(x)
	wantAllocated(t, a, 0)
}

func TestNNCrossEntropyInfer(t *testing.T) {
	got := nnInferOK(t, "cross_entropy_with_softmax", nil, nnT(ir.F32, -1, 10), nnT(ir.I64, 64))
	if got[0].String() != "tensor<64xf32>" || got[1].String() != "tensor<?x10xf32>" {
		t.Fatalf("types %v", got)
	}
	got = nnInferOK(t, "cross_entropy_with_softmax", ir.A("axis", 1), nnT(ir.F64, 2, 5, 3, 3), nnT(ir.I32, 2, 3, -1))
	if got[0].String() != "tensor<2x3x3xf64>" {
		t.Fatalf("types %v", got)
	}
	nnInferErr(t, "cross_entropy_with_softmax", nil, []string{"tensor<4x1xi64>", "[4]", "tensor<4x10xf32>"}, nnT(ir.F32, 4, 10), nnT(ir.I64, 4, 1))
	nnInferErr(t, "cross_entropy_with_softmax", ir.A("axis", 1), []string{"tensor<2x5xi64>", "[2 3 3]"}, nnT(ir.F32, 2, 5, 3, 3), nnT(ir.I64, 2, 5))
	nnInferErr(t, "cross_entropy_with_softmax", nil, []string{"tensor<4xf32>", "i64 or i32"}, nnT(ir.F32, 4, 10), nnT(ir.F32, 4))
	nnInferErr(t, "cross_entropy_with_softmax", nil, []string{"tensor<4x10xi64>", "f32 or f64"}, nnT(ir.I64, 4, 10), nnT(ir.I64, 4))
	nnInferErr(t, "cross_entropy_with_softmax", ir.A("axis", 2), []string{"axis 2", "tensor<4x10xf32>"}, nnT(ir.F32, 4, 10), nnT(ir.I64, 4))
	nnInferErr(t, "cross_entropy_with_softmax", nil, []string{"tensor<f32>"}, nnT(ir.F32), nnT(ir.I64))
	b := ir.NewBuilder(ir.NewProgram())
	loss, sm := ops.CrossEntropyWithSoftmax(b, ops.Data(b, "x", ir.F32, 8, 10), ops.Data(b, "l", ir.I64, 8), -1, -100)
	if b.Err() != nil || loss.Type().String() != "tensor<8xf32>" || sm.Type().String() != "tensor<8x10xf32>" {
		t.Fatal(b.Err())
	}
}

func TestNNBCEWithLogits(t *testing.T) {
	nnDebug(t)
	r := rand.New(rand.NewPCG(21, 22))
	for _, dt := range nnDTypes {
		for _, shape := range [][]int{{4, 5}, {7}, {}, {0, 3}, {1, 1, 1}, {300, 301}} {
			t.Run(fmt.Sprintf("%s/%v", dt, shape), func(t *testing.T) {
				a := memory.New(memory.Options{})
				x := randTensor(t, a, r, dt, shape...)
				tg := randTensor(t, a, r, dt, shape...)
				for i := range tg.Len() {
					nnSetAt(tg, i, (tg.Float64At(i)+2)/4) // targets in [0, 1)
					if i%7 == 3 {
						nnSetAt(x, i, 50*x.Float64At(i)) // far saturated logits
					}
				}
				want := make([]float64, x.Len())
				for i := range want {
					v, tv := x.Float64At(i), tg.Float64At(i)
					sig := 1 / (1 + math.Exp(-v))
					switch {
					case math.Abs(v) < 15:
						want[i] = -(tv*math.Log(sig) + (1-tv)*math.Log(1-sig))
					case v > 0: // log σ(v) = −log(1+e^−v), log(1−σ(v)) = −v − log(1+e^−v)
						want[i] = (1-tv)*v + math.Log(1+math.Exp(-v))
					default:
						want[i] = -tv*v + math.Log(1+math.Exp(v))
					}
				}
				outs := mustRun(t, a, "binary_cross_entropy_with_logits", nil, x, tg)
				closeEnough(t, "bce", outs[0], want, shape, max(nnTol(dt), 1e-8))
				o := nnRunThreads(t, a, 1, "binary_cross_entropy_with_logits", nil, x, tg)
				nnSameBits(t, "bce with 1 thread", o[0], outs[0])
				release(o...)
				release(outs...)
				release(x, tg)
				wantAllocated(t, a, 0)
			})
		}
	}
}

func TestNNBCEInfer(t *testing.T) {
	got := nnInferOK(t, "binary_cross_entropy_with_logits", nil, nnT(ir.F32, -1, 3), nnT(ir.F32, 4, -1))
	if got[0].String() != "tensor<4x3xf32>" {
		t.Fatalf("type %s", got[0])
	}
	nnInferErr(t, "binary_cross_entropy_with_logits", nil, []string{"tensor<4x3xf32>", "tensor<4x1xf32>", "same shape"}, nnT(ir.F32, 4, 3), nnT(ir.F32, 4, 1))
	nnInferErr(t, "binary_cross_entropy_with_logits", nil, []string{"tensor<4x3xf32>", "tensor<4x3x1xf32>", "same shape"}, nnT(ir.F32, 4, 3), nnT(ir.F32, 4, 3, 1))
	nnInferErr(t, "binary_cross_entropy_with_logits", nil, []string{"tensor<4xf64>", "dtype"}, nnT(ir.F32, 4), nnT(ir.F64, 4))
	nnInferErr(t, "binary_cross_entropy_with_logits", nil, []string{"tensor<4xi32>", "f32 or f64"}, nnT(ir.I32, 4), nnT(ir.I32, 4))
	b := ir.NewBuilder(ir.NewProgram())
	if y := ops.BinaryCrossEntropyWithLogits(b, ops.Data(b, "x", ir.F32, 3), ops.Data(b, "t", ir.F32, 3)); b.Err() != nil || y.Type().String() != "tensor<3xf32>" {
		t.Fatal(b.Err())
	}
}

func TestNNLossOOMSweep(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	a := memory.New(memory.Options{})
	x := randTensor(t, a, r, tensor.F32, 6, 5)
	l := nnFrom(t, a, tensor.I64, []float64{0, 4, -100, 2, 3, 1}, 6)
	checkOOMSweep(t, "cross_entropy_with_softmax", nil, x, l)
	tg := randTensor(t, a, r, tensor.F32, 6, 5)
	checkOOMSweep(t, "binary_cross_entropy_with_logits", nil, x, tg)
	release(x, l, tg)
}
