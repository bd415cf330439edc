package train_test

import (
	"math"
	"strings"
	"testing"

	"github.com/gopir/gopir/ir"
	"github.com/gopir/gopir/tensor"
	"github.com/gopir/gopir/train"
)

// TestFloat64Training: every model that builds in float64 trains in it
// with float64 parameters, its first loss that of float32 to rounding
// (both start from the same initial values), its memory flat with
// leak checks on and each step's peak the planner's to the byte.
func TestFloat64Training(t *testing.T) {
	for _, tc := range []struct {
		model string
		batch int
	}{{"mlp", 16}, {"lenet", 8}, {"gate", 16}, {"rnn", 0}, {"tinydet", 4}} {
		t.Run(tc.model, func(t *testing.T) {
			first := map[ir.DType]float64{}
			for dt, want := range map[ir.DType]tensor.DType{ir.F32: tensor.F32, ir.F64: tensor.F64} {
				tr, recs := trainPlanned(t, train.Config{Model: tc.model, Batch: tc.batch, Seed: 3, DType: dt, CheckLeaks: true}, 4)
				defer tr.Close()
				first[dt] = recs[0].Loss
				for i, rec := range recs {
					if rec.MemAllocated != recs[0].MemAllocated {
						t.Fatalf("%s step %d: %d bytes allocated, %d after the first", dt, i+1, rec.MemAllocated, recs[0].MemAllocated)
					}
				}
				for _, name := range tr.Store().Names() {
					p, _ := tr.Store().Get(name)
					if len(p.Shape()) > 0 && p.DType() != want { // not the optimizer's scalars
						t.Fatalf("%s: parameter %s is %s", dt, name, p.DType())
					}
				}
			}
			if d := math.Abs(first[ir.F64]-first[ir.F32]) / math.Abs(first[ir.F32]); !(d < 1e-5) {
				t.Errorf("first loss %.9g in f64, %.9g in f32 (relative difference %.3g)", first[ir.F64], first[ir.F32], d)
			}
		})
	}
}

func TestFloat64Refusals(t *testing.T) {
	dir := t.TempDir()
	runJSON(t, train.Config{Model: "lenet", Steps: 1, Save: dir})
	for _, tc := range []struct {
		cfg  train.Config
		want string
	}{
		{train.Config{Model: "ppyoloe_s", DType: ir.F64}, "model ppyoloe_s builds in f32 only"},
		{train.Config{Model: "lenet", DType: ir.I64}, "--dtype i64: want f32 or f64"},
		{train.Config{Model: "lenet", DType: ir.F64, Resume: dir}, `tensor "conv1.b" is f32 [6 1 1], the model has f64 [6 1 1]`},
	} {
		_, err := train.New(tc.cfg)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s in %s: err = %v, want one saying %q", tc.cfg.Model, tc.cfg.DType, err, tc.want)
		}
	}
}

// TestFloat64Programs: the printed and planned programs follow the dtype
// too: every parameter of lenet's evaluation and training programs is
// float64 at f64.
func TestFloat64Programs(t *testing.T) {
	cfg := train.Config{Model: "lenet", DType: ir.F64}
	eval, err := train.BuildInference(cfg, false)
	if err != nil {
		t.Fatal(err)
	}
	tr, err := train.BuildTraining(cfg)
	if err != nil {
		t.Fatal(err)
	}
	for name, p := range map[string]*ir.Program{"evaluation": eval, "training": tr} {
		n := 0
		for _, op := range p.Body().Ops() {
			if op.Name() == "parameter" && len(op.Result(0).Type().Dims) > 0 {
				n++
				if dt := op.Result(0).Type().DType; dt != ir.F64 {
					t.Errorf("%s program: parameter %s is %s", name, op.Result(0).Type(), dt)
				}
			}
		}
		if n == 0 {
			t.Errorf("%s program: no parameters", name)
		}
	}
}
