package ir

import (
	"fmt"
	"unicode/utf8"
)

// token is a lexical token of the text format.
type token int

const (
	tEOF     token = iota
	tIllegal       // a character or literal the scanner cannot read
	tValue         // %name
	tIdent         // true, f32, else, attribute names, ...
	tInt           // 42, -1
	tFloat         // 0.5, -1e-3
	tString        // "quoted"
	tType          // tensor<...>; lit holds the text between the angle brackets
	tLParen        // (
	tRParen        // )
	tLBrace        // {
	tRBrace        // }
	tLBrack        // [
	tRBrack        // ]
	tComma         // ,
	tColon         // :
	tEqual         // =
	tArrow         // ->
	tCaret         // ^
	tMinus         // - (before inf)
	tLAngle        // < (after stack)
	tRAngle        // > (closing stack<...>)
)

var tokenNames = [...]string{
	tEOF: "end of file", tIllegal: "illegal token", tValue: "value", tIdent: "identifier",
	tInt: "integer", tFloat: "float", tString: "string", tType: "type",
	tLParen: "'('", tRParen: "')'", tLBrace: "'{'", tRBrace: "'}'", tLBrack: "'['", tRBrack: "']'",
	tComma: "','", tColon: "':'", tEqual: "'='", tArrow: "'->'", tCaret: "'^'", tMinus: "'-'",
	tLAngle: "'<'", tRAngle: "'>'",
}

func (t token) String() string { return tokenNames[t] }

// scanner splits the text format into tokens, as go/scanner does for Go.
type scanner struct {
	src  []byte
	file string
	off  int // offset of the next unread byte
	line int
	col  int // column of the next unread byte
}

func newScanner(file string, src []byte) *scanner {
	return &scanner{src: src, file: file, line: 1, col: 1}
}

func (s *scanner) pos() Pos { return Pos{File: s.file, Line: s.line, Col: s.col} }

func (s *scanner) peekByte(ahead int) byte {
	if s.off+ahead < len(s.src) {
		return s.src[s.off+ahead]
	}
	return 0
}

func (s *scanner) advance() {
	if s.src[s.off] == '\n' {
		s.line++
		s.col = 1
	} else {
		s.col++
	}
	s.off++
}

func isLetter(c byte) bool { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c == '_' }
func isDigit(c byte) bool  { return c >= '0' && c <= '9' }

// isNameByte reports whether c may appear in a %value name.
func isNameByte(c byte) bool { return isLetter(c) || isDigit(c) || c == '.' || c == '$' }

func (s *scanner) skipSpaceAndComments() {
	for s.off < len(s.src) {
		c := s.src[s.off]
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			s.advance()
		case c == '/' && s.peekByte(1) == '/':
			for s.off < len(s.src) && s.src[s.off] != '\n' {
				s.advance()
			}
		default:
			return
		}
	}
}

// scan returns the next token, its position and its literal text. For
// tIllegal the literal is a message saying what is wrong.
func (s *scanner) scan() (tok token, pos Pos, lit string) {
	s.skipSpaceAndComments()
	pos = s.pos()
	if s.off >= len(s.src) {
		return tEOF, pos, ""
	}
	start := s.off
	c := s.src[s.off]
	switch {
	case c == '%':
		s.advance()
		for s.off < len(s.src) && isNameByte(s.src[s.off]) {
			s.advance()
		}
		if s.off == start+1 {
			return tIllegal, pos, "expected a value name after '%'"
		}
		return tValue, pos, string(s.src[start+1 : s.off])
	case isLetter(c):
		for s.off < len(s.src) && (isLetter(s.src[s.off]) || isDigit(s.src[s.off])) {
			s.advance()
		}
		word := string(s.src[start:s.off])
		if word == "tensor" && s.peekByte(0) == '<' {
			return s.typeBody(pos)
		}
		return tIdent, pos, word
	case isDigit(c) || (c == '-' || c == '+') && (isDigit(s.peekByte(1)) || s.peekByte(1) == '.'):
		return s.number(pos)
	case c == '"':
		return s.str(pos)
	case c == '-' && s.peekByte(1) == '>':
		s.advance()
		s.advance()
		return tArrow, pos, "->"
	}
	s.advance()
	switch c {
	case '(':
		return tLParen, pos, "("
	case ')':
		return tRParen, pos, ")"
	case '{':
		return tLBrace, pos, "{"
	case '}':
		return tRBrace, pos, "}"
	case '[':
		return tLBrack, pos, "["
	case ']':
		return tRBrack, pos, "]"
	case ',':
		return tComma, pos, ","
	case ':':
		return tColon, pos, ":"
	case '=':
		return tEqual, pos, "="
	case '^':
		return tCaret, pos, "^"
	case '-':
		return tMinus, pos, "-"
	case '<':
		return tLAngle, pos, "<"
	case '>':
		return tRAngle, pos, ">"
	}
	r, size := utf8.DecodeRune(s.src[start:])
	if r == utf8.RuneError && size == 1 {
		return tIllegal, pos, "invalid UTF-8 byte"
	}
	for s.off < len(s.src) && !utf8.RuneStart(s.src[s.off]) {
		s.off++ // finish the rune; it counts as one column
	}
	return tIllegal, pos, fmt.Sprintf("unexpected character %q", r)
}

func (s *scanner) number(pos Pos) (token, Pos, string) {
	start := s.off
	tok := tInt
	if c := s.src[s.off]; c == '-' || c == '+' {
		s.advance()
	}
	digits := 0
	for s.off < len(s.src) && isDigit(s.src[s.off]) {
		s.advance()
		digits++
	}
	if s.peekByte(0) == '.' {
		tok = tFloat
		s.advance()
		for s.off < len(s.src) && isDigit(s.src[s.off]) {
			s.advance()
			digits++
		}
	}
	if digits == 0 {
		// "+." or "-.": a sign and a point with no digits around it.
		s.skipNameBytes()
		return tIllegal, pos, "malformed number " + string(s.src[start:s.off])
	}
	if c := s.peekByte(0); c == 'e' || c == 'E' {
		tok = tFloat
		s.advance()
		if c := s.peekByte(0); c == '-' || c == '+' {
			s.advance()
		}
		if !isDigit(s.peekByte(0)) {
			return tIllegal, pos, "malformed exponent in number " + string(s.src[start:s.off])
		}
		for s.off < len(s.src) && isDigit(s.src[s.off]) {
			s.advance()
		}
	}
	if s.off < len(s.src) && (isLetter(s.src[s.off]) || s.src[s.off] == '.') {
		s.skipNameBytes()
		return tIllegal, pos, "malformed number " + string(s.src[start:s.off])
	}
	return tok, pos, string(s.src[start:s.off])
}

// skipNameBytes consumes letters, digits and dots, to quote the whole of a
// malformed number in a message.
func (s *scanner) skipNameBytes() {
	for s.off < len(s.src) && (isLetter(s.src[s.off]) || isDigit(s.src[s.off]) || s.src[s.off] == '.') {
		s.advance()
	}
}

func (s *scanner) str(pos Pos) (token, Pos, string) {
	start := s.off
	s.advance() // opening quote
	for {
		if s.off >= len(s.src) || s.src[s.off] == '\n' {
			return tIllegal, pos, "string literal not terminated"
		}
		c := s.src[s.off]
		s.advance()
		if c == '\\' && s.off < len(s.src) && s.src[s.off] != '\n' {
			s.advance()
			continue
		}
		if c == '"' {
			lit := s.src[start:s.off]
			if !utf8.Valid(lit) {
				return tIllegal, pos, "invalid UTF-8 in string literal"
			}
			return tString, pos, string(lit)
		}
	}
}

// typeBody scans "<...>" after "tensor" and returns the text inside.
func (s *scanner) typeBody(pos Pos) (token, Pos, string) {
	s.advance() // '<'
	start := s.off
	for s.off < len(s.src) && s.src[s.off] != '>' {
		c := s.src[s.off]
		if !isLetter(c) && !isDigit(c) && c != '?' && c != '*' {
			return tIllegal, s.pos(), fmt.Sprintf("unexpected %q in tensor type", rune(c))
		}
		s.advance()
	}
	if s.off >= len(s.src) {
		return tIllegal, pos, "tensor type not terminated: expected '>'"
	}
	body := string(s.src[start:s.off])
	s.advance() // '>'
	return tType, pos, body
}
