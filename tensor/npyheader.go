package tensor

import (
	"fmt"
	"strconv"
	"strings"
)

// npyHeader is the dictionary at the start of a .npy file.
type npyHeader struct {
	descr   string
	fortran bool
	shape   []int
}

// parseNpyHeader parses the header dictionary, a Python literal such as
//
//	{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }
//
// We parse it ourselves rather than with npyio's reader, which panics when
// the keys come in another order and silently drops the last dimension
// when the trailing ", " is missing; numpy accepts both.
func parseNpyHeader(src string) (npyHeader, error) {
	p := &pyParser{s: strings.TrimRight(src, " \t\r\n\x00")}
	h, err := p.header()
	if err != nil {
		return h, fmt.Errorf("npy: malformed header %q: %w", src, err)
	}
	return h, nil
}

// pyParser reads the small subset of Python literals a .npy header uses.
type pyParser struct {
	s   string
	pos int
}

func (p *pyParser) skipSpace() {
	for p.pos < len(p.s) && strings.IndexByte(" \t\r\n", p.s[p.pos]) >= 0 {
		p.pos++
	}
}

// eat consumes c after optional spaces, reporting whether it was there.
func (p *pyParser) eat(c byte) bool {
	p.skipSpace()
	if p.pos < len(p.s) && p.s[p.pos] == c {
		p.pos++
		return true
	}
	return false
}

func (p *pyParser) expect(c byte) error {
	if !p.eat(c) {
		return fmt.Errorf("expected %q at offset %d", c, p.pos)
	}
	return nil
}

func (p *pyParser) header() (npyHeader, error) {
	var h npyHeader
	if err := p.expect('{'); err != nil {
		return h, err
	}
	seen := map[string]bool{}
	for !p.eat('}') {
		key, err := p.str()
		if err != nil {
			return h, fmt.Errorf("key: %w", err)
		}
		if seen[key] {
			return h, fmt.Errorf("duplicate key %q", key)
		}
		seen[key] = true
		if err := p.expect(':'); err != nil {
			return h, err
		}
		switch key {
		case "descr":
			p.skipSpace()
			if p.pos < len(p.s) && p.s[p.pos] == '[' {
				return h, fmt.Errorf("unsupported dtype: structured (record) arrays are not supported")
			}
			h.descr, err = p.str()
		case "fortran_order":
			h.fortran, err = p.boolean()
		case "shape":
			h.shape, err = p.tuple()
		default:
			return h, fmt.Errorf("unexpected key %q", key)
		}
		if err != nil {
			return h, fmt.Errorf("%s: %w", key, err)
		}
		if !p.eat(',') {
			if err := p.expect('}'); err != nil {
				return h, err
			}
			break
		}
	}
	if p.skipSpace(); p.pos != len(p.s) {
		return h, fmt.Errorf("trailing text at offset %d", p.pos)
	}
	for _, k := range []string{"descr", "fortran_order", "shape"} {
		if !seen[k] {
			return h, fmt.Errorf("missing key %q", k)
		}
	}
	return h, nil
}

// str reads a quoted string without escapes (none occur in dtype names).
func (p *pyParser) str() (string, error) {
	p.skipSpace()
	if p.pos >= len(p.s) || (p.s[p.pos] != '\'' && p.s[p.pos] != '"') {
		return "", fmt.Errorf("expected a quoted string at offset %d", p.pos)
	}
	q := p.s[p.pos]
	end := strings.IndexByte(p.s[p.pos+1:], q)
	if end < 0 {
		return "", fmt.Errorf("unterminated string at offset %d", p.pos)
	}
	v := p.s[p.pos+1 : p.pos+1+end]
	p.pos += end + 2
	return v, nil
}

func (p *pyParser) boolean() (bool, error) {
	p.skipSpace()
	for _, lit := range []string{"True", "False"} {
		if strings.HasPrefix(p.s[p.pos:], lit) {
			p.pos += len(lit)
			return lit == "True", nil
		}
	}
	return false, fmt.Errorf("expected True or False at offset %d", p.pos)
}

// tuple reads (), (n,) or (a, b, ...) of non-negative ints; Python 2 wrote
// longs with an L suffix.
func (p *pyParser) tuple() ([]int, error) {
	if err := p.expect('('); err != nil {
		return nil, err
	}
	shape := []int{}
	for !p.eat(')') {
		p.skipSpace()
		start := p.pos
		for p.pos < len(p.s) && p.s[p.pos] >= '0' && p.s[p.pos] <= '9' {
			p.pos++
		}
		d, err := strconv.Atoi(p.s[start:p.pos])
		if err != nil {
			return nil, fmt.Errorf("expected a non-negative dimension at offset %d", start)
		}
		if p.pos < len(p.s) && p.s[p.pos] == 'L' {
			p.pos++
		}
		shape = append(shape, d)
		if !p.eat(',') {
			if err := p.expect(')'); err != nil {
				return nil, err
			}
			break
		}
	}
	return shape, nil
}
