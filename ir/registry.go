package ir

import (
	"fmt"
	"sort"
	"sync"
)

// OpSpec is what the IR needs to know about an op: how to infer its result
// types, how to check it, and its traits. Package ir registers the
// structured control flow ops ("if", "while" and their terminator
// "yield", one file each); package ops registers one for every op of its
// catalog.
type OpSpec struct {
	// Infer returns the result types for the given operand types and
	// attributes, or an error saying what is wrong with them. Ops with
	// regions and terminators have none: their result types are declared
	// when they are built, and Verify checks them.
	Infer func(operands []Type, attrs Attrs) ([]Type, error)
	// Verify, if set, checks what Infer does not (e.g. where the op may
	// appear). It runs after the result types were checked against Infer.
	// For ops with regions it checks everything: operands, regions,
	// block arguments, yields and results. It may return an ErrorList to
	// report problems at other ops (a yield, say).
	Verify func(op *Op) error
	// Regions is the number of regions of an op that has them.
	Regions int
	// Terminator marks the op that ends every region ("yield"): it must be
	// the last op of a region and appears nowhere else.
	Terminator bool
	// BuiltBy names the Builder method that builds the op, for ops that
	// Builder.Op cannot (their regions need closures): "If".
	BuiltBy string
	// Keyword, if set, is printed before every region but the first, as
	// "else" is between the branches of "if".
	Keyword string
	// Writes lists the operands the op updates in place (its effects):
	// persistable values such as parameters and optimizer state. Passes
	// that move, drop or repeat ops must keep these in order.
	Writes []int
	// Stacks says the op takes or makes stack values, and tensors of
	// unknown rank (the items of sequences). Other ops never see one: the
	// builder and the verifier reject such operands for them.
	Stacks bool
}

// stackOperandError says that operand i of type t is for stack ops only.
func stackOperandError(i int, t Type) error {
	if t.Unranked {
		return fmt.Errorf("operand %d is a %s of unknown rank; the op takes tensors of known rank only", i, t)
	}
	return fmt.Errorf("operand %d is a %s; the op takes tensors only", i, t)
}

// stackOperand returns the index of the first stack or unranked type, or
// -1.
func stackOperand(types []Type) int {
	for i, t := range types {
		if t.IsStack() || t.Unranked {
			return i
		}
	}
	return -1
}

var registry = struct {
	sync.RWMutex
	specs map[string]OpSpec
}{specs: map[string]OpSpec{}}

// Register makes spec the hook for ops named name. Registering a name twice
// panics: it is a programming error caught at init time, as with
// database/sql.Register. An op without regions needs an Infer hook; one
// with regions (or a terminator) needs a Verify hook.
func Register(name string, spec OpSpec) {
	switch {
	case spec.Regions > 0 || spec.Terminator:
		if spec.Verify == nil {
			panic(fmt.Sprintf("ir.Register: %q has regions or ends them, and no Verify hook", name))
		}
	case spec.Infer == nil:
		panic(fmt.Sprintf("ir.Register: %q has no Infer hook", name))
	}
	registry.Lock()
	defer registry.Unlock()
	if _, dup := registry.specs[name]; dup {
		panic(fmt.Sprintf("ir.Register: %q registered twice", name))
	}
	registry.specs[name] = spec
}

// LookupSpec returns the hook registered for name.
func LookupSpec(name string) (OpSpec, bool) {
	registry.RLock()
	defer registry.RUnlock()
	s, ok := registry.specs[name]
	return s, ok
}

// RegisteredOps lists the names of the registered ops, sorted.
func RegisteredOps() []string {
	registry.RLock()
	defer registry.RUnlock()
	names := make([]string, 0, len(registry.specs))
	for n := range registry.specs {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}
