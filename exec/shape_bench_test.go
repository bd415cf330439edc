package exec_test

import (
	"context"
	"math/rand/v2"
	"testing"

	"github.com/gopir/gopir/exec"
	"github.com/gopir/gopir/ir"
	"github.com/gopir/gopir/ops"
	"github.com/gopir/gopir/tensor"
)

// BenchmarkShapeOps runs the shape and indexing ops through the executor,
// one op (or a chain of cheap views) per program, on one thread: the time
// per run is the kernel's plus the executor's allocation of its result.
// "views" is a chain of 64 reshapes, squeezes and unsqueezes of a small
// tensor: the executor's cost per view. cpu-ns/op is the process's CPU
// time per run, steadier than wall time on a shared machine.
func BenchmarkShapeOps(b *testing.B) {
	r := rand.New(rand.NewPCG(5, 6))
	f32 := func(shape ...int) *tensor.Tensor {
		x, err := tensor.New(host, tensor.F32, shape...)
		if err != nil {
			b.Fatal(err)
		}
		for i := range x.F32() {
			x.F32()[i] = r.Float32()
		}
		return x
	}
	i64 := func(hi int, shape ...int) *tensor.Tensor {
		x, err := tensor.New(host, tensor.I64, shape...)
		if err != nil {
			b.Fatal(err)
		}
		for i := range x.I64() {
			x.I64()[i] = int64(r.IntN(hi))
		}
		return x
	}
	type tc struct {
		name  string
		build func(bl *ir.Builder) *ir.Value
		feeds map[string]*tensor.Tensor
	}
	for _, c := range []tc{
		{"transpose", func(bl *ir.Builder) *ir.Value {
			return ops.Transpose(bl, ops.Data(bl, "x", ir.F32, 64, 128, 128), 0, 2, 1)
		}, map[string]*tensor.Tensor{"x": f32(64, 128, 128)}},
		{"concat", func(bl *ir.Builder) *ir.Value {
			return ops.Concat(bl, 1, ops.Data(bl, "x", ir.F32, 256, 1024), ops.Data(bl, "y", ir.F32, 256, 1024))
		}, map[string]*tensor.Tensor{"x": f32(256, 1024), "y": f32(256, 1024)}},
		{"split", func(bl *ir.Builder) *ir.Value {
			parts := ops.Split(bl, ops.Data(bl, "x", ir.F32, 256, 2048), 1, 1024, -1)
			return ops.Add(bl, parts[0], parts[1])
		}, map[string]*tensor.Tensor{"x": f32(256, 2048)}},
		{"slice", func(bl *ir.Builder) *ir.Value {
			return ops.Slice(bl, ops.Data(bl, "x", ir.F32, 256, 1024), []int{1}, []int{100}, []int{900})
		}, map[string]*tensor.Tensor{"x": f32(256, 1024)}},
		{"expand", func(bl *ir.Builder) *ir.Value {
			return ops.Expand(bl, ops.Data(bl, "x", ir.F32, 1, 1024), 256, 1024)
		}, map[string]*tensor.Tensor{"x": f32(1, 1024)}},
		{"gather", func(bl *ir.Builder) *ir.Value {
			return ops.Gather(bl, ops.Data(bl, "x", ir.F32, 1000, 256), ops.Data(bl, "i", ir.I64, 512), 0)
		}, map[string]*tensor.Tensor{"x": f32(1000, 256), "i": i64(1000, 512)}},
		{"gather_grad", func(bl *ir.Builder) *ir.Value {
			return ops.GatherGrad(bl, ops.Data(bl, "dy", ir.F32, 512, 256), ops.Data(bl, "i", ir.I64, 512), nil, 0, 1000)
		}, map[string]*tensor.Tensor{"dy": f32(512, 256), "i": i64(1000, 512)}},
		{"slice_grad", func(bl *ir.Builder) *ir.Value {
			return ops.SliceGrad(bl, ops.Data(bl, "dy", ir.F32, 256, 800), nil, []int{256, 1024}, []int{1}, []int{100}, []int{900}, []int{1})
		}, map[string]*tensor.Tensor{"dy": f32(256, 800)}},
		{"take_along_axis", func(bl *ir.Builder) *ir.Value {
			return ops.TakeAlongAxis(bl, ops.Data(bl, "x", ir.F32, 256, 1024), ops.Data(bl, "i", ir.I64, 256, 64), 1)
		}, map[string]*tensor.Tensor{"x": f32(256, 1024), "i": i64(1024, 256, 64)}},
		{"scatter_elements", func(bl *ir.Builder) *ir.Value {
			y := ops.Scale(bl, ops.Data(bl, "x", ir.F32, 256, 1024), 2, 0)
			return ops.ScatterElements(bl, y, ops.Data(bl, "i", ir.I64, 256, 64), ops.Data(bl, "u", ir.F32, 256, 64), 1, "add")
		}, map[string]*tensor.Tensor{"x": f32(256, 1024), "i": i64(1024, 256, 64), "u": f32(256, 64)}},
		{"cumsum", func(bl *ir.Builder) *ir.Value {
			return ops.CumSum(bl, ops.Data(bl, "x", ir.F32, 256, 1024), 1, false, false)
		}, map[string]*tensor.Tensor{"x": f32(256, 1024)}},
		{"tile", func(bl *ir.Builder) *ir.Value {
			return ops.Tile(bl, ops.Data(bl, "x", ir.F32, 64, 256), 4, 4)
		}, map[string]*tensor.Tensor{"x": f32(64, 256)}},
		{"views", func(bl *ir.Builder) *ir.Value {
			v := ops.Data(bl, "x", ir.F32, 4, 8)
			for range 16 {
				v = ops.Reshape(bl, v, 8, 4)
				v = ops.Unsqueeze(bl, v, 0)
				v = ops.Squeeze(bl, v, 0)
				v = ops.Flatten(bl, ops.Reshape(bl, v, 4, 8), 0, 1)
				v = ops.Reshape(bl, v, 4, 8)
			}
			return v
		}, map[string]*tensor.Tensor{"x": f32(4, 8)}},
	} {
		b.Run(c.name, func(b *testing.B) {
			bl := ir.NewBuilder(ir.NewProgram())
			ops.Fetch(bl, "y", c.build(bl))
			p, err := bl.Finish()
			if err != nil {
				b.Fatal(err)
			}
			ex, err := exec.Compile(p, exec.Options{Threads: 1})
			if err != nil {
				b.Fatal(err)
			}
			run := func() {
				res, err := ex.Run(context.Background(), c.feeds)
				if err != nil {
					b.Fatal(err)
				}
				res.Release()
			}
			run()
			cpu0 := cpuTime()
			b.ResetTimer()
			for range b.N {
				run()
			}
			b.StopTimer()
			b.ReportMetric(float64((cpuTime()-cpu0).Nanoseconds())/float64(b.N), "cpu-ns/op")
		})
		for _, f := range c.feeds {
			f.Release()
		}
	}
}
