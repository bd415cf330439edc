package ir

import "fmt"

// "yield" ends every region: it hands its operands to the op that owns the
// region (see "if" and "while" for what they become). It has no results,
// attributes or regions, and the verifier checks that it is the last op of
// a region and appears nowhere else.

func init() {
	registerBuiltin("yield", OpSpec{Terminator: true, BuiltBy: "Yield", Verify: verifyYield})
}

func verifyYield(op *Op) error {
	if len(op.results) != 0 || len(op.regions) != 0 || len(op.Attrs) != 0 {
		return fmt.Errorf("yield takes no results, attributes or regions")
	}
	return nil
}

// registerBuiltin registers one of the ops package ir defines itself; the
// map is set up before package ops registers its catalog.
func registerBuiltin(name string, spec OpSpec) { Register(name, spec) }

// opErrors collects problems found at several ops, for Verify hooks.
type opErrors ErrorList

func (e *opErrors) add(op *Op, format string, args ...any) {
	*e = append(*e, &Error{Pos: op.Pos, Op: op.name, Msg: fmt.Sprintf(format, args...)})
}

func (e opErrors) err() error { return ErrorList(e).Err() }

func isBoolScalar(t Type) bool { return t.DType == I1 && t.Rank() == 0 }
