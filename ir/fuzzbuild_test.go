package ir_test

import (
	"fmt"
	"math"
	"testing"

	"github.com/gopir/gopir/ir"
)

// FuzzBuild builds programs with the Builder, steered by the fuzzer's
// bytes: nested if and while, captured values, odd attribute values. Every
// program that Finish accepts must print as text that parses, verifies and
// prints identically, and the Builder must never panic.
func FuzzBuild(f *testing.F) {
	f.Add([]byte{})
	f.Add([]byte{3, 2, 4, 1, 0, 0, 2, 3, 9, 9, 9, 9, 9, 9, 9, 9, 7, 7})
	f.Add([]byte("\x04\x03\x01\x00\x03\x02\x00\x01\x02\x00\x06\x05\x07"))
	f.Add([]byte("\x02\x05\x03\x01\xff\xff\xff\xff\xff\xff\xf7\x7f\x02\x04abc\"\n\x03\x03\x00\x04\x02\x01"))
	f.Fuzz(func(t *testing.T, data []byte) {
		g := &gen{data: data}
		b := ir.NewBuilder(ir.NewProgram())
		x := b.Op1("data", ir.A("name", "x", "shape", []int{ir.Dynamic, 3}, "dtype", ir.F32))
		n := b.Op1("data", ir.A("name", "n", "shape", []int{}, "dtype", ir.I64))
		vals := g.block(b, []*ir.Value{x, n}, 0)
		for i, v := range vals {
			if g.byte()%2 == 0 {
				b.Op("fetch", ir.A("name", fmt.Sprint("out", i)), v)
			}
		}
		p, err := b.Finish()
		if err != nil {
			return
		}
		text := p.String()
		q, err := ir.Parse("printed.pir", []byte(text))
		if err != nil {
			t.Fatalf("printed program does not parse: %v\n%s", err, text)
		}
		if err := ir.Verify(q); err != nil {
			t.Fatalf("printed program does not verify: %v\n%s", err, text)
		}
		if again := q.String(); again != text {
			t.Fatalf("print is not a fixed point:\n%s", diff(text, again))
		}
	})
}

// gen turns fuzz bytes into building decisions; it reads zeros when the
// bytes run out.
type gen struct{ data []byte }

func (g *gen) byte() byte {
	if len(g.data) == 0 {
		return 0
	}
	c := g.data[0]
	g.data = g.data[1:]
	return c
}

func (g *gen) uint64() uint64 {
	var u uint64
	for i := range 8 {
		u |= uint64(g.byte()) << (8 * i)
	}
	return u
}

func (g *gen) pick(vals []*ir.Value) *ir.Value { return vals[int(g.byte())%len(vals)] }

var fuzzDTypes = []ir.DType{ir.F32, ir.F64, ir.I32, ir.I64, ir.I1}

// attr makes an attribute value of any kind.
func (g *gen) attr(depth int) ir.Attr {
	switch g.byte() % 8 {
	case 0:
		return ir.Int(int64(g.uint64()))
	case 1:
		return ir.Float(math.Float64frombits(g.uint64()))
	case 2:
		s := make([]byte, g.byte()%8)
		for i := range s {
			s[i] = g.byte()
		}
		return ir.Str(s)
	case 3:
		return ir.Bool(g.byte()%2 == 0)
	case 4:
		return fuzzDTypes[int(g.byte())%len(fuzzDTypes)]
	case 5:
		if depth < 4 {
			l := ir.List{}
			for range g.byte() % 4 {
				l = append(l, g.attr(depth+1))
			}
			return l
		}
	case 6:
		return ir.Float([]float64{math.Inf(1), math.Inf(-1), math.NaN(), math.Copysign(0, -1), 1e-05, 1e300}[g.byte()%6])
	}
	return ir.List{}
}

var fuzzAttrNames = []string{"a", "eps", "_x9", "true", "f32", "tensor", "else", "nan", "inf", "x"}

// block appends ops to b using vals (the values in scope) and returns the
// values it made and the ones it was given.
func (g *gen) block(b *ir.Builder, vals []*ir.Value, depth int) []*ir.Value {
	for range g.byte() % 6 {
		v := g.pick(vals)
		var out []*ir.Value
		switch g.byte() % 9 {
		case 0:
			out = []*ir.Value{b.Op1([]string{"relu", "exp", "neg"}[g.byte()%3], nil, v)}
		case 1:
			out = []*ir.Value{b.Op1([]string{"add", "multiply", "less_than"}[g.byte()%3], nil, v, v)}
		case 2:
			var shape []int
			for range g.byte() % 3 {
				shape = append(shape, int(g.byte()%4)-1)
			}
			value := ir.Float(math.Float64frombits(g.uint64()))
			attrs := ir.A("shape", shape, "value", value, "dtype", fuzzDTypes[int(g.byte())%len(fuzzDTypes)])
			for range g.byte() % 3 {
				name := fuzzAttrNames[int(g.byte())%len(fuzzAttrNames)]
				if !attrs.Has(name) {
					attrs = attrs.With(name, g.attr(0))
				}
			}
			out = []*ir.Value{b.Op1("full", attrs)}
		case 3:
			out = []*ir.Value{b.Op1("cast", ir.A("dtype", fuzzDTypes[int(g.byte())%len(fuzzDTypes)]), v)}
		case 4:
			out = []*ir.Value{g.scalarCond(b, v)}
		case 5, 6:
			if depth < 4 {
				out = g.ifOp(b, vals, depth)
			}
		case 7, 8:
			if depth < 4 {
				out = g.whileOp(b, vals, depth)
			}
		}
		vals = append(vals, out...)
	}
	return vals
}

// scalarCond reduces v to an i1 scalar.
func (g *gen) scalarCond(b *ir.Builder, v *ir.Value) *ir.Value {
	axes := make([]int, v.Type().Rank())
	for i := range axes {
		axes[i] = i
	}
	s := b.Op1("reduce_sum", ir.A("axes", axes, "keepdim", false), v)
	return b.Op1("greater_than", nil, s, s)
}

func (g *gen) ifOp(b *ir.Builder, vals []*ir.Value, depth int) []*ir.Value {
	cond := g.scalarCond(b, g.pick(vals))
	k := int(g.byte() % 3)
	var yielded []*ir.Value
	return b.If(cond, func(b *ir.Builder) []*ir.Value {
		inner := g.block(b, vals, depth+1)
		for range k {
			yielded = append(yielded, g.pick(inner))
		}
		return yielded
	}, func(b *ir.Builder) []*ir.Value {
		inner := g.block(b, vals, depth+1)
		var ys []*ir.Value
		for _, y := range yielded {
			// Yield a value of the same dtype and rank if there is one.
			w := g.pick(inner)
			for _, c := range inner {
				if _, ok := ir.Join(c.Type(), y.Type()); ok && g.byte()%2 == 0 {
					w = c
					break
				}
			}
			ys = append(ys, w)
		}
		return ys
	})
}

func (g *gen) whileOp(b *ir.Builder, vals []*ir.Value, depth int) []*ir.Value {
	var init []*ir.Value
	for range g.byte() % 3 {
		init = append(init, g.pick(vals))
	}
	cond := g.scalarCond(b, g.pick(vals))
	body := func(b *ir.Builder, args []*ir.Value) (*ir.Value, []*ir.Value) {
		inner := g.block(b, append(append([]*ir.Value(nil), vals...), args...), depth+1)
		next := make([]*ir.Value, len(args))
		for i, a := range args {
			next[i] = a // yield the argument unchanged, or a value of its type
			for _, c := range inner {
				if c.Type().Refines(a.Type()) && g.byte()%3 == 0 {
					next[i] = c
				}
			}
		}
		return g.scalarCond(b, g.pick(inner)), next
	}
	if g.byte()%2 == 0 {
		return b.While(cond, init, body)
	}
	types := make([]ir.Type, len(init))
	for i, v := range init {
		types[i] = ir.TensorOf(v.Type().DType, make([]int, v.Type().Rank())...)
		for d := range types[i].Dims {
			types[i].Dims[d] = ir.Dynamic
		}
	}
	return b.WhileTyped(cond, init, types, body)
}
