package ir

import (
	"bufio"
	"io"
	"strconv"
	"strings"
)

// Print writes p in the text format with canonical value names: %0, %1, ...
// in order of definition (an op's results before the values of its
// regions).
func Print(w io.Writer, p *Program) error {
	bw := bufio.NewWriter(w)
	pr := &printer{w: bw, names: map[*Value]string{}}
	bw.WriteString("{\n")
	pr.ops(p.body, 1)
	bw.WriteString("}\n")
	return bw.Flush()
}

// PrintNoted is Print with a comment at the end of an op's line (after
// its regions, for an op that has some) wherever note returns text; note
// may name values already printed with name.
func PrintNoted(w io.Writer, p *Program, note func(op *Op, name func(*Value) string) string) error {
	bw := bufio.NewWriter(w)
	pr := &printer{w: bw, names: map[*Value]string{}, note: note}
	bw.WriteString("{\n")
	pr.ops(p.body, 1)
	bw.WriteString("}\n")
	return bw.Flush()
}

// String returns the program's text.
func (p *Program) String() string {
	var sb strings.Builder
	Print(&sb, p)
	return sb.String()
}

// String returns the op's text as one line, without its regions, numbering
// values by their IDs; for messages and debugging.
func (o *Op) String() string {
	var sb strings.Builder
	pr := &printer{w: bufio.NewWriter(&sb), byID: true}
	pr.header(o)
	pr.w.Flush()
	return sb.String()
}

type printer struct {
	w     *bufio.Writer
	names map[*Value]string
	next  int
	byID  bool // name values %ID instead of canonical numbers
	note  func(*Op, func(*Value) string) string
}

func (pr *printer) define(v *Value) string {
	name := "%" + strconv.Itoa(pr.next)
	pr.next++
	pr.names[v] = name
	return name
}

func (pr *printer) name(v *Value) string {
	if v == nil {
		return "%<nil>"
	}
	if pr.byID {
		return "%" + strconv.Itoa(v.id)
	}
	if n, ok := pr.names[v]; ok {
		return n
	}
	return "%<undefined:" + strconv.Itoa(v.id) + ">"
}

func (pr *printer) indent(depth int) {
	for range depth {
		pr.w.WriteString("  ")
	}
}

func (pr *printer) ops(b *Block, depth int) {
	for _, op := range b.ops {
		pr.indent(depth)
		if !pr.byID {
			for _, r := range op.results {
				pr.define(r)
			}
		}
		pr.header(op)
		keyword := ""
		if spec, ok := LookupSpec(op.name); ok && spec.Keyword != "" {
			keyword = " " + spec.Keyword
		}
		for i, r := range op.regions {
			if i > 0 {
				pr.w.WriteString(keyword)
			}
			pr.w.WriteString(" {\n")
			pr.blockArgs(r.block, depth)
			pr.ops(r.block, depth+1)
			pr.indent(depth)
			pr.w.WriteString("}")
		}
		if pr.note != nil {
			if n := pr.note(op, pr.name); n != "" {
				pr.w.WriteString("  // ")
				pr.w.WriteString(n)
			}
		}
		pr.w.WriteString("\n")
	}
}

func (pr *printer) blockArgs(b *Block, depth int) {
	if len(b.args) == 0 {
		return
	}
	pr.indent(depth)
	pr.w.WriteString("^(")
	for i, a := range b.args {
		if i > 0 {
			pr.w.WriteString(", ")
		}
		pr.w.WriteString(pr.define(a))
		pr.w.WriteString(": ")
		pr.w.WriteString(a.typ.String())
	}
	pr.w.WriteString("):\n")
}

// header writes everything of an op but its regions.
func (pr *printer) header(op *Op) {
	w := pr.w
	pr.valueList(op.results)
	w.WriteString(" = ")
	w.WriteString(strconv.Quote(op.name))
	w.WriteString(" ")
	pr.valueList(op.operands)
	if len(op.Attrs) > 0 {
		w.WriteString(" ")
		w.WriteString(op.Attrs.String())
	}
	w.WriteString(" : ")
	w.WriteString("(")
	for i, v := range op.operands {
		if i > 0 {
			w.WriteString(", ")
		}
		if v == nil {
			w.WriteString("<nil>")
		} else {
			w.WriteString(v.typ.String())
		}
	}
	w.WriteString(") -> ")
	if len(op.results) == 1 {
		w.WriteString(op.results[0].typ.String())
		return
	}
	w.WriteString("(")
	for i, v := range op.results {
		if i > 0 {
			w.WriteString(", ")
		}
		w.WriteString(v.typ.String())
	}
	w.WriteString(")")
}

func (pr *printer) valueList(vs []*Value) {
	pr.w.WriteString("(")
	for i, v := range vs {
		if i > 0 {
			pr.w.WriteString(", ")
		}
		pr.w.WriteString(pr.name(v))
	}
	pr.w.WriteString(")")
}
