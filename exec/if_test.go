package exec_test

import (
	"slices"
	"testing"

	"github.com/gopir/gopir/exec"
	"github.com/gopir/gopir/ir"
	"github.com/gopir/gopir/ops"
)

// detectorLoss is the shape of the reference failure: a loss with
// `if num_gts > 0` whose taken branch makes fresh buffers every step.
const detectorLoss = `{
  (%x) = "data" () {name:"x", shape:[64,64], dtype:f32} : () -> tensor<64x64xf32>
  (%n) = "data" () {name:"num_gts", shape:[], dtype:i64} : () -> tensor<i64>
  (%zero) = "full" () {shape:[], value:0, dtype:i64} : () -> tensor<i64>
  (%c) = "greater_than" (%n, %zero) : (tensor<i64>, tensor<i64>) -> tensor<i1>
  (%loss) = "if" (%c) : (tensor<i1>) -> tensor<f32> {
    (%a) = "relu" (%x) : (tensor<64x64xf32>) -> tensor<64x64xf32>
    (%b) = "multiply" (%a, %x) : (tensor<64x64xf32>, tensor<64x64xf32>) -> tensor<64x64xf32>
    (%t) = "tanh" (%b) : (tensor<64x64xf32>) -> tensor<64x64xf32>
    (%s) = "reduce_sum" (%t) {axes:[], keepdim:false} : (tensor<64x64xf32>) -> tensor<f32>
    () = "yield" (%s) : (tensor<f32>) -> ()
  } else {
    (%s2) = "reduce_mean" (%x) {axes:[], keepdim:false} : (tensor<64x64xf32>) -> tensor<f32>
    () = "yield" (%s2) : (tensor<f32>) -> ()
  }
  () = "fetch" (%loss) {name:"loss"} : (tensor<f32>) -> ()
}`

// detectorLossInlined is detectorLoss with the if replaced by its taken
// branch. It computes and fetches the condition too, so that the same
// buffers are alive at the peak.
const detectorLossInlined = `{
  (%x) = "data" () {name:"x", shape:[64,64], dtype:f32} : () -> tensor<64x64xf32>
  (%n) = "data" () {name:"num_gts", shape:[], dtype:i64} : () -> tensor<i64>
  (%zero) = "full" () {shape:[], value:0, dtype:i64} : () -> tensor<i64>
  (%c) = "greater_than" (%n, %zero) : (tensor<i64>, tensor<i64>) -> tensor<i1>
  (%a) = "relu" (%x) : (tensor<64x64xf32>) -> tensor<64x64xf32>
  (%b) = "multiply" (%a, %x) : (tensor<64x64xf32>, tensor<64x64xf32>) -> tensor<64x64xf32>
  (%t) = "tanh" (%b) : (tensor<64x64xf32>) -> tensor<64x64xf32>
  (%s) = "reduce_sum" (%t) {axes:[], keepdim:false} : (tensor<64x64xf32>) -> tensor<f32>
  () = "fetch" (%s) {name:"loss"} : (tensor<f32>) -> ()
  () = "fetch" (%c) {name:"cond"} : (tensor<i1>) -> ()
}`

// TestIfBranchValuesAreFreedEveryRun guards against the reference failure:
// values computed inside a taken branch must be freed, so allocated bytes
// after every run equal the first run's, and the if costs no more memory
// than its taken branch written inline.
func TestIfBranchValuesAreFreedEveryRun(t *testing.T) {
	in := feeds{"x": f32(t, ramp(64*64), 64, 64), "num_gts": i64(t, 3)}
	defer releaseFeeds(in)

	measure := func(src string, runs int, opts exec.Options) (held, after, peak int64) {
		a := newAlloc()
		opts.Alloc = a
		x := compile(t, src, opts)
		for i := range runs {
			a.ResetPeak()
			res := mustRun(t, x, in)
			h := allocated(a)
			res.Release()
			af := allocated(a)
			if i == 0 {
				held, after, peak = h, af, a.Stats().Allocated.Peak
				continue
			}
			if h != held || af != after {
				t.Fatalf("run %d: allocated %d with fetches held, %d after release; run 0 had %d and %d", i, h, af, held, after)
			}
			if p := a.Stats().Allocated.Peak; p != peak {
				t.Fatalf("run %d: peak %d, run 0 had %d", i, p, peak)
			}
		}
		return held, after, peak
	}
	// Without donation the branch holds two 64x64 buffers at its peak;
	// with it, multiply writes into relu's result, and tanh into
	// multiply's if its op takes over its operand.
	inPlace := int64(2)
	if op := findOp(detectorLoss, "tanh"); op != nil && slices.Contains(ops.Takeable(op), 0) {
		inPlace = 1
	}
	for _, mode := range []struct {
		opts    exec.Options
		buffers int64
	}{{exec.Options{NoDonate: true}, 2}, {exec.Options{}, inPlace}} {
		_, afterIf, peakIf := measure(detectorLoss, 1000, mode.opts)
		_, afterInline, peakInline := measure(detectorLossInlined, 3, mode.opts)
		if afterIf != 0 || afterInline != 0 {
			t.Errorf("NoDonate %v: steady state: %d bytes with the if, %d inline; want 0 (no parameters)", mode.opts.NoDonate, afterIf, afterInline)
		}
		if peakIf != peakInline {
			t.Errorf("NoDonate %v: peak with the if = %d bytes, with the branch inline = %d", mode.opts.NoDonate, peakIf, peakInline)
		}
		if lo, hi := mode.buffers*64*64*4, (mode.buffers+1)*64*64*4; peakIf < lo || peakIf >= hi {
			t.Errorf("NoDonate %v: peak %d; the branch needs %d live 64x64 buffers (%d bytes) plus scalars; is it running?", mode.opts.NoDonate, peakIf, mode.buffers, lo)
		}
	}
}

// TestIfYieldOwnership covers every kind of value an if can yield; each
// program runs many times and must return to zero allocated bytes.
func TestIfYieldOwnership(t *testing.T) {
	cases := []struct {
		name string
		src  string
		cond bool
		want map[string]float64
	}{
		{
			name: "branch-local",
			src: `{
  (%c) = "data" () {name:"c", shape:[], dtype:i1} : () -> tensor<i1>
  (%x) = "data" () {name:"x", shape:[4], dtype:f32} : () -> tensor<4xf32>
  (%r) = "if" (%c) : (tensor<i1>) -> tensor<4xf32> {
    (%a) = "relu" (%x) : (tensor<4xf32>) -> tensor<4xf32>
    () = "yield" (%a) : (tensor<4xf32>) -> ()
  } else {
    (%b) = "neg" (%x) : (tensor<4xf32>) -> tensor<4xf32>
    () = "yield" (%b) : (tensor<4xf32>) -> ()
  }
  (%s) = "reduce_sum" (%r) {axes:[], keepdim:false} : (tensor<4xf32>) -> tensor<f32>
  () = "fetch" (%s) {name:"s"} : (tensor<f32>) -> ()
}`,
			cond: true, want: map[string]float64{"s": 6},
		},
		{
			name: "captured-outer",
			src: `{
  (%c) = "data" () {name:"c", shape:[], dtype:i1} : () -> tensor<i1>
  (%x) = "data" () {name:"x", shape:[4], dtype:f32} : () -> tensor<4xf32>
  (%y) = "relu" (%x) : (tensor<4xf32>) -> tensor<4xf32>
  (%r) = "if" (%c) : (tensor<i1>) -> tensor<4xf32> {
    () = "yield" (%y) : (tensor<4xf32>) -> ()
  } else {
    (%b) = "neg" (%y) : (tensor<4xf32>) -> tensor<4xf32>
    () = "yield" (%b) : (tensor<4xf32>) -> ()
  }
  (%s) = "reduce_sum" (%r) {axes:[], keepdim:false} : (tensor<4xf32>) -> tensor<f32>
  (%t) = "reduce_sum" (%y) {axes:[], keepdim:false} : (tensor<4xf32>) -> tensor<f32>
  () = "fetch" (%s) {name:"s"} : (tensor<f32>) -> ()
  () = "fetch" (%t) {name:"t"} : (tensor<f32>) -> ()
}`,
			cond: true, want: map[string]float64{"s": 6, "t": 6},
		},
		{
			name: "captured-outer-dead-after",
			src: `{
  (%c) = "data" () {name:"c", shape:[], dtype:i1} : () -> tensor<i1>
  (%x) = "data" () {name:"x", shape:[4], dtype:f32} : () -> tensor<4xf32>
  (%y) = "neg" (%x) : (tensor<4xf32>) -> tensor<4xf32>
  (%r) = "if" (%c) : (tensor<i1>) -> tensor<4xf32> {
    () = "yield" (%y) : (tensor<4xf32>) -> ()
  } else {
    () = "yield" (%x) : (tensor<4xf32>) -> ()
  }
  (%s) = "reduce_sum" (%r) {axes:[], keepdim:false} : (tensor<4xf32>) -> tensor<f32>
  () = "fetch" (%s) {name:"s"} : (tensor<f32>) -> ()
}`,
			cond: true, want: map[string]float64{"s": -2},
		},
		{
			name: "same-value-twice",
			src: `{
  (%c) = "data" () {name:"c", shape:[], dtype:i1} : () -> tensor<i1>
  (%x) = "data" () {name:"x", shape:[4], dtype:f32} : () -> tensor<4xf32>
  (%r1, %r2) = "if" (%c) : (tensor<i1>) -> (tensor<4xf32>, tensor<4xf32>) {
    (%a) = "neg" (%x) : (tensor<4xf32>) -> tensor<4xf32>
    () = "yield" (%a, %a) : (tensor<4xf32>, tensor<4xf32>) -> ()
  } else {
    () = "yield" (%x, %x) : (tensor<4xf32>, tensor<4xf32>) -> ()
  }
  (%s) = "add" (%r1, %r2) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  (%t) = "reduce_sum" (%s) {axes:[], keepdim:false} : (tensor<4xf32>) -> tensor<f32>
  () = "fetch" (%t) {name:"t"} : (tensor<f32>) -> ()
}`,
			cond: true, want: map[string]float64{"t": -4},
		},
		{
			name: "no-results",
			src: `{
  (%c) = "data" () {name:"c", shape:[], dtype:i1} : () -> tensor<i1>
  (%x) = "data" () {name:"x", shape:[4], dtype:f32} : () -> tensor<4xf32>
  () = "if" (%c) : (tensor<i1>) -> () {
    (%a) = "neg" (%x) : (tensor<4xf32>) -> tensor<4xf32>
    () = "yield" () : () -> ()
  } else {
    () = "yield" () : () -> ()
  }
  (%t) = "reduce_sum" (%x) {axes:[], keepdim:false} : (tensor<4xf32>) -> tensor<f32>
  () = "fetch" (%t) {name:"t"} : (tensor<f32>) -> ()
}`,
			cond: true, want: map[string]float64{"t": 2},
		},
		{
			name: "block-argument-of-enclosing-while",
			src: `{
  (%x) = "data" () {name:"x", shape:[4], dtype:f32} : () -> tensor<4xf32>
  (%i0) = "full" () {shape:[], value:0, dtype:i64} : () -> tensor<i64>
  (%n) = "full" () {shape:[], value:3, dtype:i64} : () -> tensor<i64>
  (%one) = "full" () {shape:[], value:1, dtype:i64} : () -> tensor<i64>
  (%c0) = "less_than" (%i0, %n) : (tensor<i64>, tensor<i64>) -> tensor<i1>
  (%iN, %xN) = "while" (%c0, %i0, %x) : (tensor<i1>, tensor<i64>, tensor<4xf32>) -> (tensor<i64>, tensor<4xf32>) {
  ^(%i: tensor<i64>, %v: tensor<4xf32>):
    (%odd) = "equal" (%i, %one) : (tensor<i64>, tensor<i64>) -> tensor<i1>
    (%w) = "if" (%odd) : (tensor<i1>) -> tensor<4xf32> {
      () = "yield" (%v) : (tensor<4xf32>) -> ()
    } else {
      (%d) = "add" (%v, %v) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
      () = "yield" (%d) : (tensor<4xf32>) -> ()
    }
    (%i1) = "add" (%i, %one) : (tensor<i64>, tensor<i64>) -> tensor<i64>
    (%c1) = "less_than" (%i1, %n) : (tensor<i64>, tensor<i64>) -> tensor<i1>
    () = "yield" (%c1, %i1, %w) : (tensor<i1>, tensor<i64>, tensor<4xf32>) -> ()
  }
  (%t) = "reduce_sum" (%xN) {axes:[], keepdim:false} : (tensor<4xf32>) -> tensor<f32>
  () = "fetch" (%t) {name:"t"} : (tensor<f32>) -> ()
}`,
			want: map[string]float64{"t": 8},
		},
		{
			name: "nested-three-deep",
			src: `{
  (%c) = "data" () {name:"c", shape:[], dtype:i1} : () -> tensor<i1>
  (%x) = "data" () {name:"x", shape:[4], dtype:f32} : () -> tensor<4xf32>
  (%r) = "if" (%c) : (tensor<i1>) -> tensor<4xf32> {
    (%a) = "neg" (%x) : (tensor<4xf32>) -> tensor<4xf32>
    (%r2) = "if" (%c) : (tensor<i1>) -> tensor<4xf32> {
      (%b) = "add" (%a, %x) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
      (%r3) = "if" (%c) : (tensor<i1>) -> tensor<4xf32> {
        (%d) = "add" (%a, %a) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
        (%e) = "add" (%d, %b) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
        () = "yield" (%e) : (tensor<4xf32>) -> ()
      } else {
        () = "yield" (%x) : (tensor<4xf32>) -> ()
      }
      () = "yield" (%r3) : (tensor<4xf32>) -> ()
    } else {
      () = "yield" (%a) : (tensor<4xf32>) -> ()
    }
    () = "yield" (%r2) : (tensor<4xf32>) -> ()
  } else {
    () = "yield" (%x) : (tensor<4xf32>) -> ()
  }
  (%t) = "reduce_sum" (%r) {axes:[], keepdim:false} : (tensor<4xf32>) -> tensor<f32>
  () = "fetch" (%t) {name:"t"} : (tensor<f32>) -> ()
}`,
			cond: true, want: map[string]float64{"t": -4},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			for _, cond := range []bool{tc.cond, !tc.cond} {
				a := newAlloc()
				x := compile(t, tc.src, exec.Options{Alloc: a, CheckLeaks: true})
				in := feeds{"x": f32(t, []float32{-1, 2, -3, 4}, 4)}
				if tc.name != "block-argument-of-enclosing-while" {
					in["c"] = boolean(t, cond)
				}
				for run := range 100 {
					res := mustRun(t, x, in)
					if cond == tc.cond && run == 0 {
						for name, want := range tc.want {
							if got := scalarOf(t, res, name); got != want {
								t.Errorf("%s = %v, want %v", name, got, want)
							}
						}
					}
					res.Release()
					if got := allocated(a); got != 0 {
						t.Fatalf("cond=%v run %d: %d bytes allocated after releasing fetches, want 0; live: %+v", cond, run, got, a.Live())
					}
				}
				releaseFeeds(in)
			}
		})
	}
}

// findOp parses src and returns its first op named name, in any region.
func findOp(src, name string) *ir.Op {
	p, err := ir.Parse("f.pir", []byte(src))
	if err != nil {
		return nil
	}
	var found *ir.Op
	var walk func(b *ir.Block)
	walk = func(b *ir.Block) {
		for _, op := range b.Ops() {
			if found == nil && op.Name() == name {
				found = op
			}
			for _, r := range op.Regions() {
				walk(r.Block())
			}
		}
	}
	walk(p.Body())
	return found
}
