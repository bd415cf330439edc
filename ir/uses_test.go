package ir_test

import (
	"fmt"
	"sort"
	"testing"

	"github.com/gopir/gopir/ir"
)

// checkUses checks that every value's Uses() lists exactly the operand
// slots that refer to it.
func checkUses(t *testing.T, p *ir.Program) {
	t.Helper()
	want := map[*ir.Value][]string{}
	var all []*ir.Value
	slot := func(u ir.Use) string { return fmt.Sprintf("%p/%d", u.Op, u.Index) }
	p.Walk(func(op *ir.Op) bool {
		for i, v := range op.Operands() {
			if v != nil {
				want[v] = append(want[v], slot(ir.Use{Op: op, Index: i}))
			}
		}
		all = append(all, op.Results()...)
		for _, r := range op.Regions() {
			all = append(all, r.Block().Args()...)
		}
		return true
	})
	for v := range want {
		all = append(all, v) // values of other programs, if any
	}
	for _, v := range all {
		var got []string
		for _, u := range v.Uses() {
			if u.Op.Operand(u.Index) != v {
				t.Errorf("value %%%d: use %s of %q does not refer to it", v.ID(), slot(u), u.Op.Name())
			}
			got = append(got, slot(u))
		}
		w := want[v]
		sort.Strings(got)
		sort.Strings(w)
		if fmt.Sprint(got) != fmt.Sprint(w) {
			t.Errorf("value %%%d: Uses() = %v, want %v", v.ID(), got, w)
		}
	}
}

func useOps(v *ir.Value) []string {
	var out []string
	for _, u := range v.Uses() {
		out = append(out, fmt.Sprintf("%s#%d", u.Op.Name(), u.Index))
	}
	return out
}

// TestUses mutates a program in every way the API allows and checks
// Uses() after each step.
func TestUses(t *testing.T) {
	p, b, x, c := start()
	add := b.Op("add", nil, x, x) // x used twice by one op
	y := add.Result(0)
	r := b.If(c, func(b *ir.Builder) values { return values{b.Op1("relu", nil, y)} }, func(b *ir.Builder) values { return values{x} })
	w := b.While(c, values{r[0]}, func(b *ir.Builder, args values) (*ir.Value, values) {
		return c, values{b.Op1("exp", nil, args[0])}
	})
	f := b.Op("fetch", ir.A("name", "out"), w[0])
	finish(t, b)
	checkUses(t, p)
	if got := fmt.Sprint(useOps(x)); got != "[add#0 add#1 yield#0]" {
		t.Errorf("x is used by %s", got)
	}

	steps := []struct {
		name string
		do   func()
	}{
		{"SetOperand", func() { add.SetOperand(1, c) }},
		{"SetOperand back", func() { add.SetOperand(1, x) }},
		{"SetOperand to the same value", func() { add.SetOperand(0, x) }},
		{"SetOperand nil", func() { f.SetOperand(0, nil) }},
		{"SetOperand from nil", func() { f.SetOperand(0, w[0]) }},
		{"AppendOperand", func() { f.AppendOperand(x) }},
		{"AppendOperand nil", func() { f.AppendOperand(nil) }},
		{"AppendResult", func() { add.AppendResult(x.Type()) }},
		{"AppendArg", func() { w[0].Def().Region(0).Block().AppendArg(x.Type()) }},
		{"ReplaceAllUsesWith", func() { x.ReplaceAllUsesWith(y) }},
		{"ReplaceAllUsesWith itself", func() { y.ReplaceAllUsesWith(y) }},
		{"ReplaceAllUsesWith back", func() { y.ReplaceAllUsesWith(x) }},
		{"ReplaceAllUsesWith an unused value", func() { add.Result(1).ReplaceAllUsesWith(c) }},
		{"ReplaceAllUsesWith a block argument", func() { c.ReplaceAllUsesWith(w[0].Def().Region(0).Block().Args()[1]) }},
		{"ReplaceAllUsesWith nil", func() { w[0].ReplaceAllUsesWith(nil) }},
	}
	for _, s := range steps {
		s.do()
		t.Run(s.name, func(t *testing.T) { checkUses(t, p) })
	}
	// x took y's uses and gave them back with its own.
	got := useOps(x)
	sort.Strings(got)
	if fmt.Sprint(got) != "[add#0 add#1 fetch#1 relu#0 yield#0]" {
		t.Errorf("x is used by %v", got)
	}
	if n := len(y.Uses()); n != 0 {
		t.Errorf("y has %d uses, want 0: %v", n, useOps(y))
	}
	if n := len(w[0].Uses()); n != 0 {
		t.Errorf("w has %d uses after ReplaceAllUsesWith(nil)", n)
	}
	if y2 := add.Result(1); y2.Index() != 1 || y2.Def() != add || y2.IsBlockArg() || y2.Block() != p.Body() {
		t.Error("appended result has the wrong links")
	}
	arg := w[0].Def().Region(0).Block().Args()[1]
	if arg.Index() != 1 || !arg.IsBlockArg() || arg.Def() != nil || arg.Block() != w[0].Def().Region(0).Block() {
		t.Error("appended block argument has the wrong links")
	}
	if arg.ID() != p.NumValues()-1 {
		t.Errorf("appended block argument has ID %d, want %d", arg.ID(), p.NumValues()-1)
	}
}
