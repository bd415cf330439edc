package ir_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/gopir/gopir/ir"
)

// captureSrc has an if whose branches use %a, defined outside them.
const captureSrc = `{
  (%a) = "data" () {name:"a", shape:[2], dtype:f32} : () -> tensor<2xf32>
  (%c) = "data" () {name:"c", shape:[], dtype:i1} : () -> tensor<i1>
  (%r) = "if" (%c) : (tensor<i1>) -> tensor<2xf32> {
    (%t) = "neg" (%a) : (tensor<2xf32>) -> tensor<2xf32>
    () = "yield" (%t) : (tensor<2xf32>) -> ()
  } else {
    () = "yield" (%a) : (tensor<2xf32>) -> ()
  }
  () = "fetch" (%r) {name:"r"} : (tensor<2xf32>) -> ()
}`

func TestReorder(t *testing.T) {
	p := parseFile(t, "nested.pir")
	top := p.Body()
	orig := slices.Clone(top.Ops())
	find := func(name string) int {
		for i, op := range orig {
			if op.Name() == name {
				return i
			}
		}
		t.Fatalf("no %q", name)
		return -1
	}
	full, iff := find("full"), find("if")
	capture, err := ir.Parse("capture.pir", []byte(captureSrc))
	if err != nil {
		t.Fatal(err)
	}
	cops := slices.Clone(capture.Body().Ops())
	branch := orig[iff].Region(0).Block()
	swap := func(ops []*ir.Op, i, j int) []*ir.Op {
		o := slices.Clone(ops)
		o[i], o[j] = o[j], o[i]
		return o
	}
	for _, tc := range []struct {
		name  string
		block *ir.Block
		order []*ir.Op
		err   string // "" for none
	}{
		{"the two data ops swapped", top, swap(orig, 0, 1), ""},
		{"an op before the definition of a value its regions use", capture.Body(), []*ir.Op{cops[1], cops[2], cops[0], cops[3]}, `"if" would come before "data", which defines its operand`},
		{"an op before its operand's definition", top, swap(orig, full, find("greater_than")), `"greater_than" would come before "full"`},
		{"too few ops", top, orig[1:], "ops for a block of"},
		{"an op twice", top, append(slices.Clone(orig[:len(orig)-1]), orig[0]), "appears twice"},
		{"an op of another block", top, append(slices.Clone(orig[:len(orig)-1]), branch.Ops()[0]), "not an op of the block"},
		{"the terminator moved", branch, swap(branch.Ops(), 0, len(branch.Ops())-1), "terminator must stay last"},
	} {
		before := slices.Clone(tc.block.Ops())
		err := tc.block.Reorder(tc.order)
		switch {
		case tc.err == "" && err != nil:
			t.Errorf("%s: %v", tc.name, err)
		case tc.err == "" && !slices.Equal(tc.block.Ops(), tc.order):
			t.Errorf("%s: the block's ops are not in the given order", tc.name)
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("%s: error %v, want one containing %q", tc.name, err, tc.err)
		case tc.err != "" && !slices.Equal(tc.block.Ops(), before):
			t.Errorf("%s: the block changed on an error", tc.name)
		}
		if tc.err == "" {
			if err := ir.Verify(p); err != nil {
				t.Errorf("%s: %v", tc.name, err)
			}
			if err := tc.block.Reorder(before); err != nil {
				t.Fatal(err)
			}
		}
	}
}
