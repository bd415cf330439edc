package ir

import (
	"fmt"
	"sort"
	"sync"
)

// OpSpec is what the IR needs to know about an op that it does not define
// itself: how to infer its result types and how to check it. Package ops
// registers one for every op in its catalog.
type OpSpec struct {
	// Infer returns the result types for the given operand types and
	// attributes, or an error saying what is wrong with them.
	Infer func(operands []Type, attrs Attrs) ([]Type, error)
	// Verify, if set, checks what Infer does not (e.g. where the op may
	// appear). It runs after the result types were checked against Infer.
	Verify func(op *Op) error
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

// Register makes spec the hook for ops named name. Registering a name twice,
// or one of the built-in control-flow ops, panics: it is a programming error
// caught at init time, as with database/sql.Register.
func Register(name string, spec OpSpec) {
	if IsControlFlow(name) {
		panic(fmt.Sprintf("ir.Register: %q is built into package ir", name))
	}
	if spec.Infer == nil {
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

// IsControlFlow reports whether name is one of the ops package ir defines
// itself: "if", "while" and "yield".
func IsControlFlow(name string) bool {
	return name == "if" || name == "while" || name == "yield"
}
