package ir

import "fmt"

// Pos is a source position: the file, line and column an op or value came
// from. Ops built from Go record the Go caller's file and line (Col 0).
type Pos struct {
	File string
	Line int // 1-based; 0 means unknown
	Col  int // 1-based byte column; 0 means unknown
}

// IsValid reports whether the position carries a line.
func (p Pos) IsValid() bool { return p.Line > 0 }

// String formats the position as file:line:col, dropping the parts that are
// unknown.
func (p Pos) String() string {
	file := p.File
	if file == "" {
		file = "<input>"
	}
	switch {
	case !p.IsValid():
		return file
	case p.Col == 0:
		return fmt.Sprintf("%s:%d", file, p.Line)
	default:
		return fmt.Sprintf("%s:%d:%d", file, p.Line, p.Col)
	}
}
