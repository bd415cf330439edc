package ir

import (
	"errors"
	"fmt"
	"sort"
	"unicode/utf8"
)

// VerifyOptions adjust Verify.
type VerifyOptions struct {
	// AllowUnregistered accepts ops that have no registered OpSpec, checking
	// only their structure. Tools that handle programs without knowing
	// their ops (a formatter, say) set it.
	AllowUnregistered bool
}

// Verify checks p against the structural rules of the IR and the hooks
// registered for its ops; see VerifyWith.
func Verify(p *Program) error { return VerifyWith(p, VerifyOptions{}) }

// VerifyWith checks that:
//   - every operand is defined before its use, in the same block or an
//     enclosing one (never in a sibling region or later);
//   - every region ends in "yield", and "yield" appears nowhere else;
//   - "if" has an i1 scalar condition and two regions whose yields match its
//     results; "while" has an i1 scalar condition, one region whose block
//     arguments match the loop-carried operands and results, and a yield of
//     the next condition and values;
//   - "data" and "fetch" sit at the top level with unique names, and
//     "parameter" ops of one name agree on the type;
//   - every other op is registered, its result types equal what its Infer
//     hook computes, and its Verify hook passes;
//   - every op has a name, and its attributes can be printed and parsed
//     back: names are identifiers and unique, values are not nil, dtypes
//     are valid, strings are valid UTF-8.
//
// The error is an ErrorList whose entries name the op and its position,
// sorted by position.
func VerifyWith(p *Program, opts VerifyOptions) error {
	v := &verifier{
		prog:    p,
		opts:    opts,
		visible: map[*Value]bool{},
		names:   map[string]map[string]*Op{},
	}
	v.block(p.body)
	sort.SliceStable(v.errs, func(i, j int) bool { return posLess(v.errs[i].Pos, v.errs[j].Pos) })
	return v.errs.Err()
}

type verifier struct {
	prog    *Program
	opts    VerifyOptions
	visible map[*Value]bool
	names   map[string]map[string]*Op // op kind -> name attribute -> first op
	errs    ErrorList
}

func (v *verifier) errorf(op *Op, format string, args ...any) {
	v.errs = append(v.errs, &Error{Pos: op.Pos, Op: op.name, Msg: fmt.Sprintf(format, args...)})
}

func (v *verifier) block(b *Block) {
	var defined []*Value
	define := func(x *Value) {
		v.visible[x] = true
		defined = append(defined, x)
	}
	for _, a := range b.args {
		define(a)
	}
	for i, op := range b.ops {
		if op.block != b {
			v.errorf(op, "op's parent link does not point to its block")
		}
		v.operands(op)
		if op.Terminator() && (i != len(b.ops)-1 || b.region == nil) {
			if b.region == nil {
				v.errorf(op, "yield outside a region")
			} else {
				v.errorf(op, "yield must be the last op of its region")
			}
		}
		for _, r := range op.regions {
			v.block(r.block)
		}
		v.op(op)
		for _, res := range op.results {
			define(res)
		}
	}
	if b.region != nil && b.Terminator() == nil {
		parent := b.region.parent
		v.errorf(parent, "region %d does not end with yield", regionIndex(parent, b.region))
	}
	for _, x := range defined {
		delete(v.visible, x)
	}
}

// posLess orders positions by file, line and column.
func posLess(a, b Pos) bool {
	if a.File != b.File {
		return a.File < b.File
	}
	if a.Line != b.Line {
		return a.Line < b.Line
	}
	return a.Col < b.Col
}

func regionIndex(op *Op, r *Region) int {
	for i, x := range op.regions {
		if x == r {
			return i
		}
	}
	return -1
}

// operands reports operands that are not visible where op uses them, with
// the reason.
func (v *verifier) operands(op *Op) {
	for i, x := range op.operands {
		switch {
		case x == nil:
			v.errorf(op, "operand %d is nil", i)
		case x.id < 0:
			v.errorf(op, "operand %d comes from an op that failed to build", i)
		case v.visible[x]:
		case x.Block() == nil || x.Block().program() != v.prog:
			v.errorf(op, "operand %d belongs to another program", i)
		case x.Block().Encloses(op.block):
			v.errorf(op, "operand %d (%s) is used before it is defined", i, describe(x))
		default:
			v.errorf(op, "operand %d (%s) is defined in a region that does not enclose this op", i, describe(x))
		}
	}
}

// describe names a value by where it comes from, for messages.
func describe(x *Value) string {
	if x.def != nil {
		return fmt.Sprintf("result %d of %q at %s", x.index, x.def.name, x.def.Pos)
	}
	if p := x.block.ParentOp(); p != nil {
		return fmt.Sprintf("block argument %d of %q at %s", x.index, p.name, p.Pos)
	}
	return fmt.Sprintf("block argument %d", x.index)
}

func (v *verifier) op(op *Op) {
	if op.name == "" {
		v.errorf(op, "op has an empty name")
	}
	v.attrs(op)
	for i, r := range op.results {
		if err := r.typ.Check(); err != nil {
			v.errorf(op, "result %d has an invalid type %s: %v", i, r.typ, err)
		}
	}
	v.registered(op)
}

func (v *verifier) operandType(op *Op, i int) (Type, bool) { return operandType(op, i) }

// operandType is the type of operand i, or false when the operand is
// missing or comes from a failed op (reported elsewhere).
func operandType(op *Op, i int) (Type, bool) {
	x := op.operands[i]
	if x == nil || x.id < 0 {
		return Type{}, false
	}
	return x.typ, true
}

// programIO names the ops that connect a program to its caller.
var programIO = map[string]bool{"data": true, "fetch": true, "parameter": true}

func (v *verifier) registered(op *Op) {
	if programIO[op.name] {
		v.programIO(op)
	}
	spec, ok := LookupSpec(op.name)
	if !ok {
		if !v.opts.AllowUnregistered {
			v.errorf(op, "unknown op")
		}
		return
	}
	if spec.Regions > 0 || spec.Terminator {
		// Ops with regions and terminators declare their result types;
		// their Verify hook checks operands, regions and results.
		v.hookErrors(op, spec.Verify(op))
		return
	}
	if len(op.regions) != 0 {
		v.errorf(op, "op takes no regions, has %d", len(op.regions))
	}
	types := make([]Type, len(op.operands))
	for i := range op.operands {
		t, ok := v.operandType(op, i)
		if !ok {
			return // reported by operands
		}
		types[i] = t
	}
	if i := stackOperand(types); i >= 0 && !spec.Stacks {
		v.errorf(op, "%v", stackOperandError(i, types[i]))
		return
	}
	want, err := spec.Infer(types, op.Attrs)
	if err != nil {
		v.errs = append(v.errs, &Error{Pos: op.Pos, Op: op.name, Msg: err.Error(), Err: err})
		return
	}
	if len(want) != len(op.results) {
		v.errorf(op, "op has %d results, want %d", len(op.results), len(want))
		return
	}
	for i, r := range op.results {
		if !r.typ.Equal(want[i]) {
			v.errorf(op, "result %d has type %s, want %s", i, r.typ, want[i])
		}
	}
	if spec.Verify != nil {
		v.hookErrors(op, spec.Verify(op))
	}
}

// hookErrors records what a Verify hook found: each entry of an ErrorList
// at its own position, any other error at op's.
func (v *verifier) hookErrors(op *Op, err error) {
	var list ErrorList
	switch {
	case err == nil:
	case errors.As(err, &list):
		v.errs = append(v.errs, list...)
	default:
		v.errs = append(v.errs, &Error{Pos: op.Pos, Op: op.name, Msg: err.Error(), Err: err})
	}
}

// programIO checks placement and naming of data, fetch and parameter.
func (v *verifier) programIO(op *Op) {
	if op.block.region != nil {
		v.errorf(op, "%s must be at the top level of the program", op.name)
	}
	name, err := op.Attrs.Str("name")
	if err != nil || name == "" {
		v.errorf(op, "needs a non-empty string attribute name")
		return
	}
	seen := v.names[op.name]
	if seen == nil {
		seen = map[string]*Op{}
		v.names[op.name] = seen
	}
	first, dup := seen[name]
	switch {
	case !dup:
		seen[name] = op
	case op.name == "parameter":
		if len(op.results) == 1 && len(first.results) == 1 && !op.results[0].typ.Equal(first.results[0].typ) {
			v.errorf(op, "parameter %q has type %s here and %s at %s", name, op.results[0].typ, first.results[0].typ, first.Pos)
		}
	default:
		v.errorf(op, "%s name %q is already used at %s", op.name, name, first.Pos)
	}
}

// attrs checks that op's attributes print as text that parses back.
func (v *verifier) attrs(op *Op) {
	for i, a := range op.Attrs {
		if !isIdent(a.Name) {
			v.errorf(op, "attribute name %q is not an identifier", a.Name)
		}
		for _, b := range op.Attrs[:i] {
			if b.Name == a.Name {
				v.errorf(op, "attribute %s given twice", a.Name)
				break
			}
		}
		if msg := badAttr(a.Value); msg != "" {
			v.errorf(op, "attribute %s: %s", a.Name, msg)
		}
	}
}

// badAttr says what is wrong with an attribute value, or returns "".
func badAttr(a Attr) string {
	switch a := a.(type) {
	case nil:
		return "nil value"
	case DType:
		if _, ok := ParseDType(a.String()); !ok {
			return "invalid dtype " + a.String()
		}
	case List:
		for _, e := range a {
			if msg := badAttr(e); msg != "" {
				return msg
			}
		}
	case Str:
		// Names reach JSON, file names and terminals, where invalid UTF-8
		// turns into U+FFFD and two different names could print alike.
		if !utf8.ValidString(string(a)) {
			return fmt.Sprintf("string %s is not valid UTF-8", a)
		}
	case Dense:
		if _, err := NewDense(a.Type, a.raw); err != nil {
			return "invalid constant: " + err.Error()
		}
	case TypeAttr:
		if !a.Type.IsValid() {
			return "invalid type " + a.Type.String()
		}
	}
	return ""
}

// isIdent reports whether s is an identifier of the text format: a letter
// or '_', then letters, digits and '_'.
func isIdent(s string) bool {
	if s == "" || !isLetter(s[0]) {
		return false
	}
	for i := 1; i < len(s); i++ {
		if !isLetter(s[i]) && !isDigit(s[i]) {
			return false
		}
	}
	return true
}
