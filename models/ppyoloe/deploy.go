package ppyoloe

import (
	"fmt"
	"math"
	"strings"

	"github.com/gopir/gopir/ir"
	"github.com/gopir/gopir/memory"
	"github.com/gopir/gopir/nn"
	"github.com/gopir/gopir/tensor"
)

// Reparameterize computes the deployed network's parameters from the
// training form's (models.Deployable), by name:
//
//   - NAME.fused.weight and .bias, a conv-BN folded into one convolution:
//     W·γ/√(σ²+ε) per output channel, and β − μ·γ/√(σ²+ε), with the batch
//     norm's running statistics (the evaluation network's);
//   - NAME.deploy.weight and .bias, a RepVGG block: each branch folded so,
//     the 1×1 kernel added at the centre of the 3×3 one, the biases added;
//   - every other parameter (attention fcs, prediction convs) copied.
//
// The arithmetic is in float64. The caller owns the results.
func (d *task) Reparameterize(a *memory.Allocator, params map[string]*tensor.Tensor) (map[string]*tensor.Tensor, error) {
	specs, err := deploySpecs(d.size)
	if err != nil {
		return nil, err
	}
	get := func(name string) ([]float64, []int, error) {
		t, ok := params[name]
		if !ok {
			return nil, nil, fmt.Errorf("%s: reparameterize: parameter %s missing", Name, name)
		}
		v := make([]float64, t.Len())
		for i := range v {
			v[i] = t.Float64At(i)
		}
		return v, t.Shape(), nil
	}
	out := map[string]*tensor.Tensor{}
	fail := func(err error) (map[string]*tensor.Tensor, error) {
		for _, t := range out {
			t.Release()
		}
		return nil, err
	}
	for _, s := range specs {
		var vals []float64
		switch {
		case strings.HasSuffix(s.Name, ".fused.weight"), strings.HasSuffix(s.Name, ".fused.bias"):
			prefix := strings.TrimSuffix(strings.TrimSuffix(s.Name, ".weight"), ".bias")
			w, b, err := foldConvBN(get, strings.TrimSuffix(prefix, ".fused"))
			if err != nil {
				return fail(err)
			}
			vals = pick(s.Name, w, b)
		case strings.HasSuffix(s.Name, ".deploy.weight"), strings.HasSuffix(s.Name, ".deploy.bias"):
			prefix := strings.TrimSuffix(strings.TrimSuffix(strings.TrimSuffix(s.Name, ".weight"), ".bias"), ".deploy")
			w3, b3, err := foldConvBN(get, prefix+".conv1")
			if err != nil {
				return fail(err)
			}
			w1, b1, err := foldConvBN(get, prefix+".conv2")
			if err != nil {
				return fail(err)
			}
			co := len(b3)
			ci := len(w3) / (co * 9)
			for o := range co {
				b3[o] += b1[o]
				for i := range ci {
					w3[(o*ci+i)*9+4] += w1[o*ci+i] // the 1×1 kernel at the 3×3 one's centre
				}
			}
			vals = pick(s.Name, w3, b3)
		default:
			v, _, err := get(s.Name)
			if err != nil {
				return fail(err)
			}
			vals = v
		}
		if len(vals) != s.Type.NumElements() {
			return fail(fmt.Errorf("%s: reparameterize: %s has %d elements, want %d", Name, s.Name, len(vals), s.Type.NumElements()))
		}
		t, err := tensor.New(a, tensor.DType(s.Type.DType), s.Type.Dims...)
		if err != nil {
			return fail(err)
		}
		for i, v := range vals {
			t.SetFloat64At(i, v)
		}
		out[s.Name] = t
	}
	return out, nil
}

// pick returns w for a NAME.weight and b for a NAME.bias.
func pick(name string, w, b []float64) []float64 {
	if strings.HasSuffix(name, ".weight") {
		return w
	}
	return b
}

// foldConvBN folds the conv-BN named prefix (prefix.conv.weight,
// prefix.bn.*) into a kernel and a bias.
func foldConvBN(get func(string) ([]float64, []int, error), prefix string) (w, b []float64, err error) {
	w, _, err = get(prefix + ".conv.weight")
	if err != nil {
		return nil, nil, err
	}
	var gamma, beta, mean, variance []float64
	for _, p := range []struct {
		dst  *[]float64
		name string
	}{{&gamma, ".bn.weight"}, {&beta, ".bn.bias"}, {&mean, ".bn.running_mean"}, {&variance, ".bn.running_var"}} {
		if *p.dst, _, err = get(prefix + p.name); err != nil {
			return nil, nil, err
		}
	}
	co := len(gamma)
	per := len(w) / co
	b = make([]float64, co)
	for o := range co {
		s := gamma[o] / math.Sqrt(variance[o]+bnEpsilon)
		for k := range per {
			w[o*per+k] *= s
		}
		b[o] = beta[o] - mean[o]*s
	}
	return w, b, nil
}

// deploySpecs lists the deployed evaluation network's parameters.
func deploySpecs(size int) ([]nn.ParamSpec, error) {
	m := nn.NewModule(ir.F32, false)
	d := &task{size: size, deploy: true}
	if _, err := d.Build(ir.NewBuilder(ir.NewProgram()), m); err != nil {
		return nil, err
	}
	return m.Params(), nil
}
