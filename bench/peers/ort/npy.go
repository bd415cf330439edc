package ort

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math"
	"os"
	"regexp"
	"strconv"
	"strings"
)

// Array is a dense, row-major array: what an .npy file holds and what goes
// in and out of a session. Exactly one of F32 and I64 is set, by DType.
type Array struct {
	DType string // "float32" or "int64"
	Shape []int64
	F32   []float32
	I64   []int64
}

// Len is the number of elements the shape says.
func (a *Array) Len() int {
	n := 1
	for _, d := range a.Shape {
		n *= int(d)
	}
	return n
}

// Float64s returns the elements as float64, whatever the dtype.
func (a *Array) Float64s() []float64 {
	out := make([]float64, 0, a.Len())
	for _, v := range a.F32 {
		out = append(out, float64(v))
	}
	for _, v := range a.I64 {
		out = append(out, float64(v))
	}
	return out
}

var npyMagic = []byte("\x93NUMPY")

var (
	descrRE = regexp.MustCompile(`'descr'\s*:\s*'([^']*)'`)
	orderRE = regexp.MustCompile(`'fortran_order'\s*:\s*(True|False)`)
	shapeRE = regexp.MustCompile(`'shape'\s*:\s*\(([^)]*)\)`)
)

// ReadNPY reads an .npy file (format versions 1 to 3) of little-endian
// float32, float64 (converted to float32), int64 or int32 (converted to
// int64) in C order.
func ReadNPY(path string) (*Array, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	a, err := ParseNPY(b)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return a, nil
}

// ParseNPY is ReadNPY on the file's bytes.
func ParseNPY(b []byte) (*Array, error) {
	if len(b) < 10 || !bytes.HasPrefix(b, npyMagic) {
		return nil, fmt.Errorf("not an .npy file")
	}
	var hlen, start int
	switch b[6] {
	case 1:
		hlen, start = int(binary.LittleEndian.Uint16(b[8:10])), 10
	case 2, 3:
		if len(b) < 12 {
			return nil, fmt.Errorf("truncated .npy header")
		}
		hlen, start = int(binary.LittleEndian.Uint32(b[8:12])), 12
	default:
		return nil, fmt.Errorf(".npy format version %d.%d is not supported", b[6], b[7])
	}
	if hlen > len(b)-start {
		return nil, fmt.Errorf("truncated .npy header")
	}
	header, data := string(b[start:start+hlen]), b[start+hlen:]
	d, o, s := descrRE.FindStringSubmatch(header), orderRE.FindStringSubmatch(header), shapeRE.FindStringSubmatch(header)
	if d == nil || o == nil || s == nil {
		return nil, fmt.Errorf("bad .npy header %q", header)
	}
	if o[1] == "True" {
		return nil, fmt.Errorf("Fortran-order .npy files are not supported")
	}
	a := &Array{Shape: []int64{}}
	for _, f := range strings.Split(s[1], ",") {
		if f = strings.TrimSpace(f); f == "" {
			continue
		}
		n, err := strconv.ParseInt(f, 10, 64)
		if err != nil || n < 0 {
			return nil, fmt.Errorf("bad .npy shape %q", s[1])
		}
		a.Shape = append(a.Shape, n)
	}
	n := a.Len()
	size := map[string]int{"<f4": 4, "<f8": 8, "<i8": 8, "<i4": 4}[d[1]]
	if size == 0 {
		return nil, fmt.Errorf(".npy dtype %q is not supported (want <f4, <f8, <i8 or <i4)", d[1])
	}
	if len(data) != n*size {
		return nil, fmt.Errorf(".npy data has %d bytes, shape %v of %s needs %d", len(data), a.Shape, d[1], n*size)
	}
	le := binary.LittleEndian
	switch d[1] {
	case "<f4", "<f8":
		a.DType, a.F32 = "float32", make([]float32, n)
		for i := range n {
			if size == 4 {
				a.F32[i] = math.Float32frombits(le.Uint32(data[4*i:]))
			} else {
				a.F32[i] = float32(math.Float64frombits(le.Uint64(data[8*i:])))
			}
		}
	default:
		a.DType, a.I64 = "int64", make([]int64, n)
		for i := range n {
			if size == 8 {
				a.I64[i] = int64(le.Uint64(data[8*i:]))
			} else {
				a.I64[i] = int64(int32(le.Uint32(data[4*i:])))
			}
		}
	}
	return a, nil
}
