package ir

import (
	"fmt"
	"strings"
)

// Error is a problem at a position in a program: a syntax error from Parse,
// a rule broken found by Verify, or a failed build step.
type Error struct {
	Pos Pos
	Op  string // the op concerned, if any
	Msg string
	Err error // the underlying error, if any (for errors.Is/As)
}

func (e *Error) Error() string {
	if e.Op != "" {
		return fmt.Sprintf("%s: %q: %s", e.Pos, e.Op, e.Msg)
	}
	return fmt.Sprintf("%s: %s", e.Pos, e.Msg)
}

func (e *Error) Unwrap() error { return e.Err }

// ErrorList is a list of errors in source order, as go/scanner.ErrorList.
type ErrorList []*Error

func (l ErrorList) Error() string {
	switch len(l) {
	case 0:
		return "no errors"
	case 1:
		return l[0].Error()
	}
	var sb strings.Builder
	sb.WriteString(l[0].Error())
	fmt.Fprintf(&sb, " (and %d more errors)", len(l)-1)
	return sb.String()
}

// Unwrap exposes every error to errors.Is and errors.As.
func (l ErrorList) Unwrap() []error {
	out := make([]error, len(l))
	for i, e := range l {
		out[i] = e
	}
	return out
}

// Err returns nil for an empty list and the list otherwise.
func (l ErrorList) Err() error {
	if len(l) == 0 {
		return nil
	}
	return l
}
