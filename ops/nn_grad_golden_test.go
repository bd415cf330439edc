package ops_test

import (
	"context"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"sort"
	"testing"

	"github.com/gopir/gopir/autodiff"
	"github.com/gopir/gopir/exec"
	"github.com/gopir/gopir/ir"
	"github.com/gopir/gopir/memory"
	"github.com/gopir/gopir/ops"
	"github.com/gopir/gopir/tensor"
)

// Gradients of three small models (an MLP, a CNN with batch norm and max
// pooling, a tanh RNN whose time loop is a while op) against PyTorch,
// recorded by tools/golden_grad.py in testdata/golden/grad_*.json.

type nnGradGoldenTensor struct {
	Shape []int     `json:"shape"`
	Data  []float64 `json:"data"`
}

type nnGradGolden struct {
	Model  string                        `json:"model"`
	Inputs map[string]nnGradGoldenTensor `json:"inputs"`
	Params map[string]nnGradGoldenTensor `json:"params"`
	Loss   float64                       `json:"loss"`
	Grads  map[string]nnGradGoldenTensor `json:"grads"`
}

// nnGradModel builds a model on b from its feeds (inputs and parameters,
// by name) and returns its loss.
type nnGradModel func(b *ir.Builder, v map[string]*ir.Value) *ir.Value

// nnIntInputs are the golden inputs fed as i64.
var nnIntInputs = map[string]bool{"labels": true, "T": true}

func nnRunGradGolden(t *testing.T, file string, dims map[string][]int, model nnGradModel) {
	raw, err := os.ReadFile(filepath.Join("testdata", "golden", file))
	if err != nil {
		t.Fatal(err)
	}
	var g nnGradGolden
	if err := json.Unmarshal(raw, &g); err != nil {
		t.Fatal(err)
	}
	b := ir.NewBuilder(ir.NewProgram())
	vals := map[string]*ir.Value{}
	feeds := map[string]*tensor.Tensor{}
	all := map[string]nnGradGoldenTensor{}
	for k, v := range g.Inputs {
		all[k] = v
	}
	for k, v := range g.Params {
		all[k] = v
	}
	names := make([]string, 0, len(all))
	for k := range all {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		v := all[k]
		dt := tensor.F64
		if nnIntInputs[k] {
			dt = tensor.I64
		}
		shape := v.Shape
		if d, ok := dims[k]; ok {
			shape = d // declared with dynamic dims
		}
		vals[k] = ops.Data(b, k, ir.DType(dt), shape...)
		x := nnFrom(t, host, dt, v.Data, v.Shape...)
		defer x.Release()
		feeds[k] = x
	}
	loss := model(b, vals)
	gradNames := make([]string, 0, len(g.Grads))
	for k := range g.Grads {
		gradNames = append(gradNames, k)
	}
	sort.Strings(gradNames)
	wrt := make([]*ir.Value, len(gradNames))
	for i, k := range gradNames {
		wrt[i] = vals[k]
	}
	grads, err := autodiff.Backward(b, loss, wrt)
	if err != nil {
		t.Fatal(err)
	}
	ops.Fetch(b, "loss", loss)
	for i, k := range gradNames {
		ops.Fetch(b, k+"@GRAD", grads[i])
	}
	p, err := b.Finish()
	if err != nil {
		t.Fatalf("%v\n%s", err, b.Program())
	}
	a := memory.New(memory.Options{})
	x, err := exec.Compile(p, exec.Options{Alloc: a, CheckLeaks: true})
	if err != nil {
		t.Fatalf("%v\n%s", err, p)
	}
	for run := range 2 { // a second run must give the same and leave nothing
		res, err := x.Run(context.Background(), feeds)
		if err != nil {
			t.Fatalf("%v\n%s", err, p)
		}
		const tol = 1e-9
		if got := res["loss"].F64()[0]; math.Abs(got-g.Loss) > tol*(1+math.Abs(g.Loss)) {
			t.Errorf("run %d: loss = %.17g, PyTorch %.17g", run, got, g.Loss)
		}
		for _, k := range gradNames {
			want := g.Grads[k]
			got := res[k+"@GRAD"]
			if !equalInts(got.Shape(), want.Shape) {
				t.Fatalf("gradient of %s has shape %v, want %v", k, got.Shape(), want.Shape)
			}
			for i, w := range want.Data {
				if v := got.F64()[i]; math.Abs(v-w) > tol*(1+math.Abs(w)) {
					t.Errorf("run %d: d loss / d %s[%d] = %.17g, PyTorch %.17g", run, k, i, v, w)
					break
				}
			}
		}
		res.Release()
		wantAllocated(t, a, 0)
	}
}

// nnLinear is x·w + b.
func nnLinear(b *ir.Builder, x, w, bias *ir.Value) *ir.Value {
	return ops.Add(b, ops.Matmul(b, x, w, false, false), bias)
}

func TestNNGradGoldenMLP(t *testing.T) {
	nnRunGradGolden(t, "grad_mlp.json", map[string][]int{"x": {-1, 8}, "labels": {-1}},
		func(b *ir.Builder, v map[string]*ir.Value) *ir.Value {
			h := ops.Relu(b, nnLinear(b, v["x"], v["W1"], v["b1"]))
			loss, _ := ops.CrossEntropyWithSoftmax(b, nnLinear(b, h, v["W2"], v["b2"]), v["labels"], -1, -100)
			return ops.ReduceMean(b, loss, nil, false)
		})
}

func TestNNGradGoldenCNN(t *testing.T) {
	nnRunGradGolden(t, "grad_cnn.json", nil,
		func(b *ir.Builder, v map[string]*ir.Value) *ir.Value {
			h := ops.Conv2D(b, v["x"], v["conv_w"], nil, []int{1, 1}, nil, 0)
			h, _, _, _, _ = ops.BatchNorm(b, h, v["bn_scale"], v["bn_bias"], v["running_mean"], v["running_var"], 1e-5, 0.1, true)
			h, _ = ops.MaxPool2D(b, ops.Relu(b, h), []int{2, 2}, nil, nil)
			logits := nnLinear(b, ops.Flatten(b, h, 1, -1), v["fc_w"], v["fc_b"])
			loss, _ := ops.CrossEntropyWithSoftmax(b, logits, v["labels"], -1, -100)
			return ops.ReduceMean(b, loss, nil, false)
		})
}

// TestNNGradGoldenRNN runs the time loop as a while op over the fed trip
// count T, taking x_t = x[t] with gather by the loop counter.
func TestNNGradGoldenRNN(t *testing.T) {
	nnRunGradGolden(t, "grad_rnn.json", map[string][]int{"x": {-1, 3, 4}},
		func(b *ir.Builder, v map[string]*ir.Value) *ir.Value {
			x, steps := v["x"], v["T"]
			i0 := ops.Full(b, ir.I64, 0)
			one := ops.Full(b, ir.I64, 1)
			h0 := ops.Full(b, ir.F64, 0, 3, 6)
			res := b.While(ops.LessThan(b, i0, steps), []*ir.Value{i0, h0}, func(b *ir.Builder, args []*ir.Value) (*ir.Value, []*ir.Value) {
				i, h := args[0], args[1]
				xt := ops.Gather(b, x, i, 0)
				pre := ops.Add(b, ops.Add(b, ops.Matmul(b, xt, v["Wx"], false, false), ops.Matmul(b, h, v["Wh"], false, false)), v["b"])
				i1 := ops.Add(b, i, one)
				return ops.LessThan(b, i1, steps), []*ir.Value{i1, ops.Tanh(b, pre)}
			})
			d := ops.Subtract(b, nnLinear(b, res[1], v["Wo"], v["bo"]), v["target"])
			return ops.ReduceMean(b, ops.Multiply(b, d, d), nil, false)
		})
}
