package ir

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// maxDepth bounds the nesting of regions and attribute lists, so that a
// hostile input cannot exhaust the stack.
const maxDepth = 512

// Parse reads a program in the text format. file names the source in
// positions and messages. The ops are built generically, with the types the
// text gives; call Verify to check them. A syntax error is returned as an
// ErrorList holding one *Error with the position and what was expected.
func Parse(file string, src []byte) (prog *Program, err error) {
	p := &parser{sc: newScanner(file, src), prog: NewProgram()}
	p.prog.File = file
	p.b = NewBuilder(p.prog)
	defer func() {
		if r := recover(); r != nil {
			e, ok := r.(bailout)
			if !ok {
				panic(r)
			}
			prog, err = nil, ErrorList{e.err}
		}
	}()
	p.next()
	p.program()
	return p.prog, nil
}

// bailout carries the first syntax error out of the recursive descent.
type bailout struct{ err *Error }

type parser struct {
	sc   *scanner
	prog *Program
	b    *Builder

	tok   token
	pos   Pos
	lit   string
	depth int

	// names holds every name in scope; scopes lists the names each open
	// region (the program first) defined, to drop them at its '}'. Names
	// are never shadowed, so one map serves all levels.
	names  map[string]definition
	scopes [][]string
}

// definition is a value name in scope and where it was defined.
type definition struct {
	v   *Value
	pos Pos
}

func (p *parser) next() {
	p.tok, p.pos, p.lit = p.sc.scan()
	if p.tok == tIllegal {
		p.errorAt(p.pos, "%s", p.lit)
	}
}

func (p *parser) errorAt(pos Pos, format string, args ...any) {
	panic(bailout{&Error{Pos: pos, Msg: fmt.Sprintf(format, args...)}})
}

// found describes the current token for "expected X, found Y" messages.
func (p *parser) found() string {
	switch p.tok {
	case tEOF:
		return "end of file"
	case tValue:
		return "%" + p.lit
	case tIdent, tInt, tFloat, tString:
		return p.lit
	case tType:
		return "tensor<" + p.lit + ">"
	}
	return "'" + p.lit + "'"
}

func (p *parser) expect(t token) Pos {
	pos := p.pos
	if p.tok != t {
		p.errorAt(p.pos, "expected %s, found %s", t, p.found())
	}
	p.next()
	return pos
}

func (p *parser) got(t token) bool {
	if p.tok == t {
		p.next()
		return true
	}
	return false
}

// sep is called before every element of a list but the first: it consumes
// the ',' between elements, or says that one, or the list's closing token,
// was expected.
func (p *parser) sep(close token, list string) {
	if p.tok != tComma {
		p.errorAt(p.pos, "expected ',' or %s in %s, found %s", close, list, p.found())
	}
	p.next()
}

func (p *parser) enter() {
	p.depth++
	if p.depth > maxDepth {
		p.errorAt(p.pos, "nesting deeper than %d levels", maxDepth)
	}
}

func (p *parser) leave() { p.depth-- }

// program = "{" { op } "}" EOF .
func (p *parser) program() {
	p.expect(tLBrace)
	p.names, p.scopes = map[string]definition{}, [][]string{nil}
	p.ops()
	p.expect(tRBrace)
	if p.tok != tEOF {
		p.errorAt(p.pos, "expected end of file after the program's closing '}', found %s", p.found())
	}
}

// ops parses ops until the closing '}' of the current block.
func (p *parser) ops() {
	for p.tok != tRBrace {
		if p.tok == tEOF {
			p.errorAt(p.pos, "expected an op or '}', found end of file")
		}
		p.op()
	}
}

type namePos struct {
	name string
	pos  Pos
}

// op = results "=" STRING operands [attrs] ":" signature [regions] .
func (p *parser) op() {
	start := p.pos
	if p.tok != tLParen {
		p.errorAt(p.pos, "expected an op: '(' starting its result list, found %s", p.found())
	}
	results := p.resultNames()
	p.expect(tEqual)
	if p.tok != tString {
		p.errorAt(p.pos, "expected the op name as a quoted string, found %s", p.found())
	}
	name, err := strconv.Unquote(p.lit)
	if err != nil || name == "" {
		p.errorAt(p.pos, "invalid op name %s", p.lit)
	}
	p.next()
	operands, operandPos := p.operands()
	var attrs Attrs
	if p.tok == tLBrace {
		attrs = p.attrDict()
	}
	p.expect(tColon)
	inTypes, inPos := p.typeList()
	for i, t := range inTypes {
		if i < len(operands) && !t.Equal(operands[i].typ) {
			p.errorAt(inPos[i], "operand %%%s has type %s, but the signature says %s", operands[i].Name, operands[i].typ, t)
		}
	}
	if len(inTypes) != len(operands) {
		p.errorAt(operandPos, "op %q has %d operands but its signature lists %d types", name, len(operands), len(inTypes))
	}
	p.expect(tArrow)
	var outTypes []Type
	outPos := p.pos
	if p.tok == tLParen {
		outTypes, _ = p.typeList()
	} else {
		outTypes = []Type{p.typ()}
	}
	if len(outTypes) != len(results) {
		p.errorAt(outPos, "op %q has %d results but its signature lists %d types", name, len(results), len(outTypes))
	}
	op := p.b.Generic(name, operands, attrs, outTypes, 0)
	op.Pos = start
	for p.tok == tLBrace || (p.tok == tIdent && p.lit == "else" && len(op.regions) > 0) {
		if p.tok == tIdent {
			p.next()
			if p.tok != tLBrace {
				p.errorAt(p.pos, "expected '{' after else, found %s", p.found())
			}
		}
		p.region(op)
	}
	for i, r := range op.results {
		p.define(results[i], r)
	}
}

func (p *parser) resultNames() []namePos {
	p.expect(tLParen)
	var names []namePos
	for p.tok != tRParen {
		if len(names) > 0 {
			p.sep(tRParen, "result list")
		}
		if p.tok != tValue {
			p.errorAt(p.pos, "expected a result name like %%x, found %s", p.found())
		}
		names = append(names, namePos{p.lit, p.pos})
		p.next()
	}
	p.next()
	return names
}

func (p *parser) operands() ([]*Value, Pos) {
	pos := p.pos
	if p.tok != tLParen {
		p.errorAt(p.pos, "expected '(' starting the operand list, found %s", p.found())
	}
	p.next()
	var vals []*Value
	for p.tok != tRParen {
		if len(vals) > 0 {
			p.sep(tRParen, "operand list")
		}
		if p.tok != tValue {
			p.errorAt(p.pos, "expected an operand like %%x, found %s", p.found())
		}
		vals = append(vals, p.lookup(p.lit, p.pos))
		p.next()
	}
	p.next()
	return vals, pos
}

func (p *parser) lookup(name string, pos Pos) *Value {
	if d, ok := p.names[name]; ok {
		return d.v
	}
	p.errorAt(pos, "use of undefined value %%%s", name)
	return nil
}

func (p *parser) define(n namePos, v *Value) {
	if d, dup := p.names[n.name]; dup {
		p.errorAt(n.pos, "value %%%s is already defined at %d:%d", n.name, d.pos.Line, d.pos.Col)
	}
	v.Name = n.name
	p.names[n.name] = definition{v, n.pos}
	top := len(p.scopes) - 1
	p.scopes[top] = append(p.scopes[top], n.name)
}

// region = "{" [ "^" "(" args ")" ":" ] { op } "}" .
func (p *parser) region(op *Op) {
	p.enter()
	defer p.leave()
	p.expect(tLBrace)
	r := &Region{parent: op}
	r.block = &Block{region: r}
	op.regions = append(op.regions, r)
	p.scopes = append(p.scopes, nil)
	if p.got(tCaret) {
		p.expect(tLParen)
		for p.tok != tRParen {
			if len(r.block.args) > 0 {
				p.sep(tRParen, "block argument list")
			}
			if p.tok != tValue {
				p.errorAt(p.pos, "expected a block argument like %%x, found %s", p.found())
			}
			n := namePos{p.lit, p.pos}
			p.next()
			p.expect(tColon)
			p.define(n, r.block.AppendArg(p.typ()))
		}
		p.next()
		p.expect(tColon)
	}
	saved := *p.b
	p.b.SetInsertionPoint(r.block, -1)
	p.ops()
	*p.b = saved
	for _, name := range p.scopes[len(p.scopes)-1] {
		delete(p.names, name)
	}
	p.scopes = p.scopes[:len(p.scopes)-1]
	p.expect(tRBrace)
}

// typeList = "(" [ type { "," type } ] ")" .
func (p *parser) typeList() ([]Type, []Pos) {
	p.expect(tLParen)
	var types []Type
	var pos []Pos
	for p.tok != tRParen {
		if len(types) > 0 {
			p.sep(tRParen, "type list")
		}
		pos = append(pos, p.pos)
		types = append(types, p.typ())
	}
	p.next()
	return types, pos
}

// typ = "tensor<" { dim "x" } dtype ">" .
func (p *parser) typ() Type {
	if p.tok == tIdent && p.lit == "stack" {
		p.enter()
		defer p.leave()
		p.next()
		p.expect(tLAngle)
		elem := p.typ()
		p.expect(tRAngle)
		return StackOf(elem)
	}
	if p.tok != tType {
		p.errorAt(p.pos, "expected a type like tensor<2x?xf32>, found %s", p.found())
	}
	body, pos := p.lit, p.pos
	parts := strings.Split(body, "x")
	col := pos.Col + len("tensor<")
	var t Type
	for i, part := range parts {
		at := Pos{File: pos.File, Line: pos.Line, Col: col}
		col += len(part) + 1
		if i == len(parts)-1 {
			dt, ok := ParseDType(part)
			if !ok {
				p.errorAt(at, "unknown dtype %q in tensor type (want f32, f64, i32, i64 or i1)", part)
			}
			t.DType = dt
			break
		}
		if part == "?" {
			t.Dims = append(t.Dims, Dynamic)
			continue
		}
		if part == "*" && i == 0 && len(parts) == 2 {
			t.Unranked = true
			continue
		}
		d, err := strconv.Atoi(part)
		if err != nil || d < 0 || part[0] == '+' {
			p.errorAt(at, "invalid dimension %q in tensor type (want a size or ?)", part)
		}
		t.Dims = append(t.Dims, d)
	}
	p.next()
	return t
}

// attrDict = "{" [ IDENT ":" attrValue { "," IDENT ":" attrValue } ] "}" .
func (p *parser) attrDict() Attrs {
	p.expect(tLBrace)
	attrs := Attrs{}
	for p.tok != tRBrace {
		if len(attrs) > 0 {
			p.sep(tRBrace, "attribute dictionary")
		}
		if p.tok != tIdent {
			p.errorAt(p.pos, "expected an attribute name, found %s", p.found())
		}
		name, pos := p.lit, p.pos
		if attrs.Has(name) {
			p.errorAt(pos, "attribute %s given twice", name)
		}
		p.next()
		p.expect(tColon)
		attrs = append(attrs, NamedAttr{name, p.attrValue()})
	}
	p.next()
	if len(attrs) == 0 {
		return nil
	}
	return attrs
}

func (p *parser) attrValue() Attr {
	pos, lit := p.pos, p.lit
	switch p.tok {
	case tInt:
		p.next()
		v, err := strconv.ParseInt(lit, 10, 64)
		if err != nil {
			p.errorAt(pos, "integer %s out of range", lit)
		}
		return Int(v)
	case tFloat:
		p.next()
		v, err := strconv.ParseFloat(lit, 64)
		if err != nil {
			p.errorAt(pos, "float %s out of range", lit)
		}
		return Float(v)
	case tString:
		p.next()
		s, err := strconv.Unquote(lit)
		if err != nil {
			p.errorAt(pos, "invalid string literal %s", lit)
		}
		return Str(s)
	case tMinus:
		p.next()
		if p.tok != tIdent || p.lit != "inf" {
			p.errorAt(p.pos, "expected a number or inf after '-', found %s", p.found())
		}
		p.next()
		return Float(math.Inf(-1))
	case tType:
		t := p.typ()
		if p.tok == tLBrack {
			return p.dense(pos, t)
		}
		return TypeAttr{t}
	case tIdent:
		if lit == "stack" {
			return TypeAttr{p.typ()}
		}
		p.next()
		switch lit {
		case "true", "false":
			return Bool(lit == "true")
		case "inf":
			return Float(math.Inf(1))
		case "nan":
			return Float(math.NaN())
		}
		if dt, ok := ParseDType(lit); ok {
			return dt
		}
		p.errorAt(pos, "unknown attribute value %s (want a number, string, bool, dtype or list)", lit)
	case tLBrack:
		p.enter()
		defer p.leave()
		p.next()
		l := List{}
		for p.tok != tRBrack {
			if len(l) > 0 {
				p.sep(tRBrack, "attribute list")
			}
			l = append(l, p.attrValue())
		}
		p.next()
		return l
	}
	p.errorAt(pos, "expected an attribute value, found %s", p.found())
	return nil
}

// dense = TYPE "[" [ element { "," element } ] "]" .
// element = INT | FLOAT | "inf" | "-" "inf" | "nan" | "true" | "false" .
func (p *parser) dense(pos Pos, t Type) Attr {
	if !t.IsStatic() {
		p.errorAt(pos, "a constant needs a static type, not %s", t)
	}
	// The bytes grow with the elements read, never from the type alone: a
	// type may promise more than the text holds.
	n := t.NumElements()
	var raw []byte
	p.next()
	i := 0
	for p.tok != tRBrack {
		if i > 0 {
			p.sep(tRBrack, "constant")
		}
		at, lit := p.pos, p.lit
		var f float64
		var k int64
		isInt := false
		switch {
		case p.tok == tInt:
			v, err := strconv.ParseInt(lit, 10, 64)
			if err != nil {
				p.errorAt(at, "integer %s out of range", lit)
			}
			k, isInt = v, true
		case p.tok == tFloat:
			v, err := strconv.ParseFloat(lit, 64)
			if err != nil {
				p.errorAt(at, "float %s out of range", lit)
			}
			f = v
		case p.tok == tMinus:
			p.next()
			if p.tok != tIdent || p.lit != "inf" {
				p.errorAt(p.pos, "expected a number or inf after '-', found %s", p.found())
			}
			f = math.Inf(-1)
		case p.tok == tIdent && (lit == "inf" || lit == "nan"):
			f = map[string]float64{"inf": math.Inf(1), "nan": math.NaN()}[lit]
		case p.tok == tIdent && (lit == "true" || lit == "false"):
			k, isInt = map[string]int64{"true": 1, "false": 0}[lit], true
		default:
			p.errorAt(at, "expected a constant element, found %s", p.found())
		}
		p.next()
		if i >= n {
			p.errorAt(at, "constant of type %s has more than %d elements", t, n)
		}
		raw = append(raw, make([]byte, t.DType.Size())...)
		if err := putElem(raw, t.DType, i, f, k, isInt); err != nil {
			p.errorAt(at, "element %d of %s: %v", i, t, err)
		}
		i++
	}
	if i != n {
		p.errorAt(p.pos, "constant of type %s has %d elements, want %d", t, i, n)
	}
	p.next()
	d, err := NewDense(t, raw)
	if err != nil {
		p.errorAt(pos, "%v", err)
	}
	return d
}
