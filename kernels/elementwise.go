package kernels

import (
	"errors"
	"fmt"
)

//go:generate go run ./internal/elemgen

// Elementwise kernels: binary arithmetic, comparisons and logical ops with
// numpy broadcasting, unary math, casts and where. The typed inner loops are
// generated (elementwise_gen.go); this file holds the drivers that pick a
// loop per row of the broadcast iteration and split large work over
// goroutines. Elementwise results never depend on the thread count.

// Numeric is the set of numeric element types.
type Numeric interface {
	float32 | float64 | int32 | int64
}

// Element is every element type: Numeric and bool (i1).
type Element interface {
	float32 | float64 | int32 | int64 | bool
}

// BinaryOp names a binary arithmetic op for Binary.
type BinaryOp uint8

// The binary arithmetic ops. BinDiv on integers truncates toward zero;
// BinMax and BinMin propagate NaN; BinPow is defined on floats only.
// BinMod is the remainder of floored division, with the divisor's sign
// (Python's %, numpy's remainder); BinFmod that of truncated division,
// with the dividend's sign (C's fmod, Go's % on integers). A float
// remainder by zero is NaN.
const (
	BinAdd BinaryOp = iota
	BinSub
	BinMul
	BinDiv
	BinMax
	BinMin
	BinPow
	BinMod
	BinFmod
)

// CompareOp names a comparison for Compare.
type CompareOp uint8

// The comparisons; CmpEQ and CmpNE are also defined on bool.
const (
	CmpEQ CompareOp = iota
	CmpNE
	CmpLT
	CmpLE
	CmpGT
	CmpGE
)

// LogicalOp names a binary logical op for Logical.
type LogicalOp uint8

// The binary logical ops.
const (
	LogicalAnd LogicalOp = iota
	LogicalOr
)

// UnaryOp names a unary op for Unary.
type UnaryOp uint8

// The unary ops. All are defined on floats; UnaryRelu, UnaryAbs, UnaryNeg,
// UnarySquare and UnarySign also on integers. UnaryGelu is the exact (erf)
// form, UnaryGeluTanh the tanh approximation; UnarySoftplus is
// log(1+exp(x)) computed without overflow. UnaryRound rounds half to even;
// UnarySign gives -1, 0 or 1 (NaN stays NaN). The float32 results of the
// trigonometric and hyperbolic functions and erf are those of package math
// in float64, rounded once.
const (
	UnaryRelu UnaryOp = iota
	UnarySigmoid
	UnaryTanh
	UnaryExp
	UnaryLog
	UnarySqrt
	UnaryRsqrt
	UnaryAbs
	UnaryNeg
	UnarySquare
	UnaryGelu
	UnaryGeluTanh
	UnarySilu
	UnarySoftplus
	UnaryFloor
	UnaryCeil
	UnaryRound
	UnarySign
	UnarySin
	UnaryCos
	UnaryTan
	UnaryAsin
	UnaryAcos
	UnaryAtan
	UnarySinh
	UnaryCosh
	UnaryAsinh
	UnaryAcosh
	UnaryAtanh
	UnaryErf
)

// ClassOp names a float classification for Classify.
type ClassOp uint8

// The classifications: x is NaN, ±Inf, +Inf, -Inf.
const (
	ClassNaN ClassOp = iota
	ClassInf
	ClassPosInf
	ClassNegInf
)

// ErrDivideByZero is returned by Binary for an integer division or
// remainder whose divisor holds a zero.
var ErrDivideByZero = errors.New("integer division by zero")

// Work split thresholds, in elements: below ewGrain a cheap loop stays on
// the calling goroutine; transcendental loops split from ewGrainHeavy.
const (
	ewGrain      = 32 << 10
	ewGrainHeavy = 4 << 10
)

// ewBlock is the block of the float32 loops that compute in float64.
const ewBlock = 256

// ewLoops holds the three layouts of one binary op: both operands
// contiguous, the second a scalar, the first a scalar.
type ewLoops[T, U any] struct {
	vv func(o []U, a, b []T)
	vs func(o []U, a []T, y T)
	sv func(o []U, x T, b []T)
}

// BroadcastShapes returns the numpy broadcast of the shapes: aligned from
// the right, a dim of 1 stretches to the other size.
func BroadcastShapes(shapes ...[]int) ([]int, error) {
	n := 0
	for _, s := range shapes {
		n = max(n, len(s))
	}
	out := make([]int, n)
	for i := range out {
		out[i] = 1
	}
	for _, s := range shapes {
		for i, d := range s {
			j := n - len(s) + i
			switch {
			case d == out[j] || d == 1:
			case out[j] == 1:
				out[j] = d
			default:
				return nil, ewShapesError(shapes)
			}
		}
	}
	return out, nil
}

func ewShapesError(shapes [][]int) error {
	s := ""
	for i, sh := range shapes {
		switch {
		case i == 0:
		case i == len(shapes)-1 && len(shapes) > 2:
			s += ", and "
		case i == len(shapes)-1:
			s += " and "
		default:
			s += ", "
		}
		s += fmt.Sprint(sh)
	}
	return fmt.Errorf("shapes %s are not broadcastable", s)
}

func ewNumel(shape []int) int {
	n := 1
	for _, d := range shape {
		n *= d
	}
	return n
}

func ewSameShape(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// ewCheckBroadcast verifies that out is the broadcast of the operand
// shapes and that every slice has the length of its shape. It allocates
// only to report an error.
func ewCheckBroadcast(outShape []int, lenOut int, shapes [][]int, lens []int) error {
	if !ewIsBroadcast(outShape, shapes) {
		want, err := BroadcastShapes(shapes...)
		if err != nil {
			return err
		}
		return fmt.Errorf("output shape %v is not the broadcast %v of the operand shapes", outShape, want)
	}
	if ewNumel(outShape) != lenOut {
		return fmt.Errorf("output has %d elements, shape %v holds %d", lenOut, outShape, ewNumel(outShape))
	}
	for i, s := range shapes {
		if ewNumel(s) != lens[i] {
			return fmt.Errorf("operand %d has %d elements, shape %v holds %d", i, lens[i], s, ewNumel(s))
		}
	}
	return nil
}

// ewIsBroadcast reports whether out is BroadcastShapes(shapes...).
func ewIsBroadcast(out []int, shapes [][]int) bool {
	n := 0
	for _, s := range shapes {
		n = max(n, len(s))
	}
	if len(out) != n {
		return false
	}
	for j := range out {
		want := 1
		for _, s := range shapes {
			i := j - (n - len(s))
			if i < 0 {
				continue
			}
			switch d := s[i]; {
			case d == want || d == 1:
			case want == 1:
				want = d
			default:
				return false
			}
		}
		if out[j] != want {
			return false
		}
	}
	return true
}

// ewPlan is the iteration plan of up to three operands broadcast to one
// output: the output shape with size-1 dims dropped and adjacent dims
// merged wherever every operand stays linear across them. Its last dim is
// the inner loop; along it each operand's stride is 0 (broadcast) or 1.
// A plan of up to ewPlanRank dims lives in an ewPlanBuf its maker
// provides, so that a kernel that keeps both on its stack allocates
// nothing.
type ewPlan struct {
	dims    []int
	strides [3][]int // per operand, per dim, in elements
	nops    int
}

// ewPlanRank is the most dims a plan holds in its ewPlanBuf.
const ewPlanRank = 8

// ewPlanBuf holds a plan's dims and strides.
type ewPlanBuf [4 * ewPlanRank]int

// ewMakePlan returns the plan of the given shapes, in buf as far as it
// fits (appends move longer ones to the heap).
func ewMakePlan(buf *ewPlanBuf, outShape []int, shapes ...[]int) ewPlan {
	n := len(outShape)
	p := ewPlan{nops: len(shapes)}
	// Full strides of each operand aligned to the output, in full[k],
	// then the plan's dims and strides, each in its own part of buf.
	var fullBuf [3 * ewPlanRank]int
	var full [3][]int
	part := func(i int) []int { return buf[i*ewPlanRank : i*ewPlanRank : (i+1)*ewPlanRank] }
	p.dims = part(0)
	for k := range shapes {
		p.strides[k] = part(k + 1)
		if n <= ewPlanRank {
			full[k] = fullBuf[k*ewPlanRank : k*ewPlanRank+n]
		} else {
			full[k] = make([]int, n)
		}
	}
	for k, s := range shapes {
		stride := 1
		for i := n - 1; i >= 0; i-- {
			j := i - (n - len(s))
			if j < 0 || s[j] == 1 {
				full[k][i] = 0
			} else {
				full[k][i] = stride
				stride *= s[j]
			}
		}
	}
	for i := 0; i < n; i++ {
		d := outShape[i]
		if d == 1 {
			continue
		}
		last := len(p.dims) - 1
		if last >= 0 {
			merge := true
			for k := range shapes {
				if p.strides[k][last] != full[k][i]*d {
					merge = false
					break
				}
			}
			if merge {
				p.dims[last] *= d
				for k := range shapes {
					p.strides[k][last] = full[k][i]
				}
				continue
			}
		}
		p.dims = append(p.dims, d) // past ewPlanRank dims, append moves them to the heap
		for k := range shapes {
			p.strides[k] = append(p.strides[k], full[k][i])
		}
	}
	if len(p.dims) == 0 { // a single element
		p.dims = append(p.dims, 1)
		for k := range shapes {
			p.strides[k] = append(p.strides[k], 0)
		}
	}
	return p
}

// walk calls row(pos, n, offs) for each run of output elements
// [pos, pos+n) within [lo, hi) that lies in one inner row; offs[k] is the
// offset in operand k of the run's first element.
func (p *ewPlan) walk(lo, hi int, row func(pos, n int, offs [3]int)) {
	r := len(p.dims)
	inner := p.dims[r-1]
	var idxBuf [ewPlanRank]int
	idx := idxBuf[:0]
	if r <= ewPlanRank {
		idx = idxBuf[:r]
	} else {
		idx = make([]int, r)
	}
	q := lo / inner
	idx[r-1] = lo % inner
	for d := r - 2; d >= 0; d-- {
		idx[d] = q % p.dims[d]
		q /= p.dims[d]
	}
	var offs [3]int
	for k := 0; k < p.nops; k++ {
		for d := range r {
			offs[k] += idx[d] * p.strides[k][d]
		}
	}
	pos := lo
	for pos < hi {
		j := idx[r-1]
		n := min(inner-j, hi-pos)
		row(pos, n, offs) // by value: a pointer would move offs to the heap
		pos += n
		if pos >= hi {
			return
		}
		// Next row: back to column 0, then carry through the outer dims.
		for k := 0; k < p.nops; k++ {
			offs[k] -= j * p.strides[k][r-1]
		}
		idx[r-1] = 0
		for d := r - 2; d >= 0; d-- {
			idx[d]++
			for k := 0; k < p.nops; k++ {
				offs[k] += p.strides[k][d]
			}
			if idx[d] < p.dims[d] {
				break
			}
			for k := 0; k < p.nops; k++ {
				offs[k] -= p.dims[d] * p.strides[k][d]
			}
			idx[d] = 0
		}
	}
}

// ewSerial reports whether n elements are too few to split over threads
// (fewer than two grains): callers then run their loop directly, else
// through a pooled job (elementwise_jobs.go).
func ewSerial(threads, n, grain int) bool { return threads <= 1 || n < 2*grain }

// ewBroadcast runs loops over out = a op b with broadcasting.
func ewBroadcast[T, U any](l ewLoops[T, U], threads, grain int, out []U, outShape []int, a []T, aShape []int, b []T, bShape []int) {
	n := len(out)
	switch {
	case n == 0:
	case ewSameShape(aShape, bShape) || len(a) == n && len(b) == n:
		ewLayout(l, ewVV, threads, grain, out, a, b)
	case len(b) == 1 && len(a) == n:
		ewLayout(l, ewVS, threads, grain, out, a, b)
	case len(a) == 1 && len(b) == n:
		ewLayout(l, ewSV, threads, grain, out, a, b)
	default:
		if ewSerial(threads, n, grain) {
			var buf ewPlanBuf
			p := ewMakePlan(&buf, outShape, aShape, bShape)
			ewBroadcastRange(l, &p, 0, n, out, a, b)
			return
		}
		j := getJob[ewBroadcastJob[T, U]]()
		j.l, j.out, j.a, j.b = l, out, a, b
		j.p = ewMakePlan(&j.buf, outShape, aShape, bShape)
		perfForRanger(threads, n, grain, j)
		putJob(j)
	}
}

// ewBroadcastJob is ewBroadcast's parallel loop; its plan lives in it.
type ewBroadcastJob[T, U any] struct {
	l   ewLoops[T, U]
	p   ewPlan
	buf ewPlanBuf
	out []U
	a   []T
	b   []T
}

func (j *ewBroadcastJob[T, U]) run(lo, hi int) { ewBroadcastRange(j.l, &j.p, lo, hi, j.out, j.a, j.b) }

// ewBroadcastRange computes out[lo:hi] of a broadcast binary op on plan p.
func ewBroadcastRange[T, U any](l ewLoops[T, U], p *ewPlan, lo, hi int, out []U, a, b []T) {
	if op, ok := p.repeatedRow(); ok {
		tile := getJob[[ewTileLen]T]()
		ewRepeatRange(l, p, op, lo, hi, out, a, b, tile)
		putJob(tile)
		return
	}
	r := len(p.dims)
	sa, sb := p.strides[0][r-1], p.strides[1][r-1]
	p.walk(lo, hi, func(pos, m int, offs [3]int) {
		o := out[pos : pos+m]
		oa, ob := offs[0], offs[1]
		switch {
		case sa == 1 && sb == 1:
			l.vv(o, a[oa:oa+m], b[ob:ob+m])
		case sb == 0:
			l.vs(o, a[oa:oa+m*sa+1-sa], b[ob])
		default:
			l.sv(o, a[oa], b[ob:ob+m])
		}
	})
}

// The layouts that need no broadcast plan: both operands have the
// output's length (VV), one of them is a single element (VS, SV), or one
// of them is a row repeated along the output (RowB: b is the row; RowA: a
// is), as in a bias add.
const (
	ewNoFast = iota
	ewVV
	ewVS
	ewSV
	ewRowB
	ewRowA
)

// ewLayout runs one of the plan-free layouts over all of out.
func ewLayout[T, U any](l ewLoops[T, U], layout, threads, grain int, out []U, a, b []T) {
	n := len(out)
	if n == 0 {
		return
	}
	if ewSerial(threads, n, grain) {
		switch layout {
		case ewVV:
			l.vv(out, a, b)
		case ewVS:
			l.vs(out, a, b[0])
		case ewSV:
			l.sv(out, a[0], b)
		case ewRowB:
			for lo, m := 0, len(b); lo < n; lo += m {
				l.vv(out[lo:lo+m], a[lo:lo+m], b)
			}
		case ewRowA:
			for lo, m := 0, len(a); lo < n; lo += m {
				l.vv(out[lo:lo+m], a, b[lo:lo+m])
			}
		}
		return
	}
	j := getJob[ewLayoutJob[T, U]]()
	j.l, j.layout, j.out, j.a, j.b = l, layout, out, a, b
	switch layout {
	case ewRowB, ewRowA: // split by whole rows
		m := len(b)
		if layout == ewRowA {
			m = len(a)
		}
		j.m = m
		perfForRanger(threads, n/m, max(1, grain/m), j)
	default:
		perfForRanger(threads, n, grain, j)
	}
	putJob(j)
}

// ewLayoutJob is ewLayout's parallel loop: over elements, or over rows
// of m elements for the row layouts.
type ewLayoutJob[T, U any] struct {
	l      ewLoops[T, U]
	layout int
	out    []U
	a, b   []T
	m      int
}

func (j *ewLayoutJob[T, U]) run(lo, hi int) {
	l, out, a, b := j.l, j.out, j.a, j.b
	switch j.layout {
	case ewVV:
		l.vv(out[lo:hi], a[lo:hi], b[lo:hi])
	case ewVS:
		l.vs(out[lo:hi], a[lo:hi], b[0])
	case ewSV:
		l.sv(out[lo:hi], a[0], b[lo:hi])
	case ewRowB:
		for r, m := lo, j.m; r < hi; r++ {
			l.vv(out[r*m:(r+1)*m], a[r*m:(r+1)*m], b)
		}
	case ewRowA:
		for r, m := lo, j.m; r < hi; r++ {
			l.vv(out[r*m:(r+1)*m], a, b[r*m:(r+1)*m])
		}
	}
}

// ewFastLayout recognises, without allocating, the operands that need no
// broadcast plan and no further shape check: one operand has the output's
// shape and the other has it too, or is a single element, or a row of it
// (see ewIsRow), each of no greater rank than the output. Every slice must
// hold exactly its shape's elements. Anything else is ewNoFast, for the
// general path (which also reports the errors).
func ewFastLayout(outShape []int, lenOut int, aShape []int, lenA int, bShape []int, lenB int) int {
	n, ok := ewNumelOK(outShape, lenOut)
	if !ok {
		return ewNoFast
	}
	aFull := lenA == n && ewSameShape(aShape, outShape)
	bFull := lenB == n && ewSameShape(bShape, outShape)
	switch {
	case aFull && bFull:
		return ewVV
	case aFull && lenB == 1 && len(bShape) <= len(outShape) && ewAllOnes(bShape):
		return ewVS
	case bFull && lenA == 1 && len(aShape) <= len(outShape) && ewAllOnes(aShape):
		return ewSV
	case aFull && lenB > 0 && ewIsRow(bShape, lenB, outShape):
		return ewRowB
	case bFull && lenA > 0 && ewIsRow(aShape, lenA, outShape):
		return ewRowA
	}
	return ewNoFast
}

// ewIsRow reports whether an operand of shape s holding n elements is a
// row of the output: s has no more dims than the output and, without its
// leading 1s, is the output's trailing dims, so it repeats along the
// leading ones.
func ewIsRow(s []int, n int, outShape []int) bool {
	if len(s) > len(outShape) { // the broadcast would have more dims
		return false
	}
	for len(s) > 0 && s[0] == 1 {
		s = s[1:]
	}
	if len(s) > len(outShape) || !ewSameShape(s, outShape[len(outShape)-len(s):]) {
		return false
	}
	_, ok := ewNumelOK(s, n)
	return ok
}

// ewNumelOK returns the element count of shape and whether it is n.
func ewNumelOK(shape []int, n int) (int, bool) {
	m := 1
	for _, d := range shape {
		m *= d
	}
	return m, m == n
}

func ewAllOnes(shape []int) bool {
	for _, d := range shape {
		if d != 1 {
			return false
		}
	}
	return true
}

// ewTable returns the entry op of the table for T, or false.
func ewTable[T, U any](tables []any, op int) (ewLoops[T, U], bool) {
	for _, t := range tables {
		if tab, ok := t.([]ewLoops[T, U]); ok {
			if op < len(tab) && tab[op].vv != nil {
				return tab[op], true
			}
			break
		}
	}
	return ewLoops[T, U]{}, false
}

var (
	ewArithTables   = []any{ewArithF32[:], ewArithF64[:], ewArithI32[:], ewArithI64[:]}
	ewCompareTables = []any{ewCompareF32[:], ewCompareF64[:], ewCompareI32[:], ewCompareI64[:], ewCompareB[:]}
)

// Binary computes out = a op b elementwise with numpy broadcasting; out
// has outShape, the broadcast of aShape and bShape. An integer BinDiv,
// BinMod or BinFmod whose divisor holds a zero returns ErrDivideByZero and
// writes nothing.
func Binary[T Numeric](op BinaryOp, threads int, out []T, outShape []int, a []T, aShape []int, b []T, bShape []int) error {
	l, ok := ewTable[T, T](ewArithTables, int(op))
	if !ok {
		var zero T
		return fmt.Errorf("binary op %d is not defined on %T", op, zero)
	}
	layout := ewFastLayout(outShape, len(out), aShape, len(a), bShape, len(b))
	if layout == ewNoFast {
		if err := ewCheckBroadcast(outShape, len(out), [][]int{aShape, bShape}, []int{len(a), len(b)}); err != nil {
			return err
		}
	}
	if (op == BinDiv || op == BinMod || op == BinFmod) && len(out) > 0 && ewIsInt[T]() {
		for _, v := range b {
			if v == 0 {
				return ErrDivideByZero
			}
		}
	}
	grain := ewGrain
	if op == BinPow || op == BinMod || op == BinFmod {
		grain = ewGrainHeavy
	}
	if layout != ewNoFast {
		ewLayout(l, layout, threads, grain, out, a, b)
		return nil
	}
	ewBroadcast(l, threads, grain, out, outShape, a, aShape, b, bShape)
	return nil
}

func ewIsInt[T Numeric]() bool {
	var one T = 1
	return one/2 == 0
}

// Compare computes out = a op b elementwise with numpy broadcasting.
func Compare[T Element](op CompareOp, threads int, out []bool, outShape []int, a []T, aShape []int, b []T, bShape []int) error {
	l, ok := ewTable[T, bool](ewCompareTables, int(op))
	if !ok {
		var zero T
		return fmt.Errorf("comparison %d is not defined on %T", op, zero)
	}
	if layout := ewFastLayout(outShape, len(out), aShape, len(a), bShape, len(b)); layout != ewNoFast {
		ewLayout(l, layout, threads, ewGrain, out, a, b)
		return nil
	}
	if err := ewCheckBroadcast(outShape, len(out), [][]int{aShape, bShape}, []int{len(a), len(b)}); err != nil {
		return err
	}
	ewBroadcast(l, threads, ewGrain, out, outShape, a, aShape, b, bShape)
	return nil
}

// Logical computes out = a op b on booleans with numpy broadcasting.
func Logical(op LogicalOp, threads int, out []bool, outShape []int, a []bool, aShape []int, b []bool, bShape []int) error {
	if int(op) >= len(ewLogicalB) {
		return fmt.Errorf("unknown logical op %d", op)
	}
	if layout := ewFastLayout(outShape, len(out), aShape, len(a), bShape, len(b)); layout != ewNoFast {
		ewLayout(ewLogicalB[op], layout, threads, ewGrain, out, a, b)
		return nil
	}
	if err := ewCheckBroadcast(outShape, len(out), [][]int{aShape, bShape}, []int{len(a), len(b)}); err != nil {
		return err
	}
	ewBroadcast(ewLogicalB[op], threads, ewGrain, out, outShape, a, aShape, b, bShape)
	return nil
}

// Not computes out = !x.
func Not(threads int, out, x []bool) error {
	if len(out) != len(x) {
		return fmt.Errorf("not: %d outputs for %d inputs", len(out), len(x))
	}
	ewMap(threads, ewGrain, ewNotB, out, x)
	return nil
}

// Unary computes out = op(x) elementwise; out and x have the same length.
func Unary[T Numeric](op UnaryOp, threads int, out, x []T) error {
	if len(out) != len(x) {
		return fmt.Errorf("unary op: %d outputs for %d inputs", len(out), len(x))
	}
	var f func(o, a []T)
	switch any(out).(type) {
	case []float32:
		f = any(ewUnaryAt(ewUnaryF32[:], op)).(func(o, a []T))
	case []float64:
		f = any(ewUnaryAt(ewUnaryF64[:], op)).(func(o, a []T))
	case []int32:
		f = any(ewUnaryAt(ewUnaryI32[:], op)).(func(o, a []T))
	case []int64:
		f = any(ewUnaryAt(ewUnaryI64[:], op)).(func(o, a []T))
	}
	if f == nil {
		var zero T
		return fmt.Errorf("unary op %d is not defined on %T", op, zero)
	}
	grain := ewGrainHeavy
	switch op {
	case UnaryRelu, UnaryAbs, UnaryNeg, UnarySquare, UnaryFloor, UnaryCeil, UnaryRound, UnarySign:
		grain = ewGrain
	}
	ewMap(threads, grain, f, out, x)
	return nil
}

// ewUnaryAt returns tab[op], or nil.
func ewUnaryAt[E any](tab []func(o, a []E), op UnaryOp) func(o, a []E) {
	if int(op) < len(tab) {
		return tab[op]
	}
	return nil
}

// Classify computes out = op(x) elementwise on floats; out and x have the
// same length.
func Classify[T float32 | float64](op ClassOp, threads int, out []bool, x []T) error {
	if len(out) != len(x) {
		return fmt.Errorf("classify: %d outputs for %d inputs", len(out), len(x))
	}
	var f func(o []bool, a []T)
	switch any(x).(type) {
	case []float32:
		if int(op) < len(ewClassF32) {
			f = any(ewClassF32[op]).(func(o []bool, a []T))
		}
	case []float64:
		if int(op) < len(ewClassF64) {
			f = any(ewClassF64[op]).(func(o []bool, a []T))
		}
	}
	if f == nil {
		return fmt.Errorf("unknown classification %d", op)
	}
	ewMap(threads, ewGrain, f, out, x)
	return nil
}

// Clip computes out = min(max(x, lo), hi); NaN stays NaN.
func Clip[T Numeric](threads int, out, x []T, lo, hi T) error {
	if len(out) != len(x) {
		return fmt.Errorf("clip: %d outputs for %d inputs", len(out), len(x))
	}
	var f func(o, a []T, lo, hi T)
	switch any(out).(type) {
	case []float32:
		f = any(ewClipF32).(func(o, a []T, lo, hi T))
	case []float64:
		f = any(ewClipF64).(func(o, a []T, lo, hi T))
	case []int32:
		f = any(ewClipI32).(func(o, a []T, lo, hi T))
	case []int64:
		f = any(ewClipI64).(func(o, a []T, lo, hi T))
	}
	ewMapScalars(threads, f, out, x, lo, hi)
	return nil
}

// Scale computes out = x*scale + bias.
func Scale[T Numeric](threads int, out, x []T, scale, bias T) error {
	if len(out) != len(x) {
		return fmt.Errorf("scale: %d outputs for %d inputs", len(out), len(x))
	}
	var f func(o, a []T, s, b T)
	switch any(out).(type) {
	case []float32:
		f = any(ewScaleF32).(func(o, a []T, s, b T))
	case []float64:
		f = any(ewScaleF64).(func(o, a []T, s, b T))
	case []int32:
		f = any(ewScaleI32).(func(o, a []T, s, b T))
	case []int64:
		f = any(ewScaleI64).(func(o, a []T, s, b T))
	}
	ewMapScalars(threads, f, out, x, scale, bias)
	return nil
}

// Cast converts x into out elementwise: float to integer truncates toward
// zero (out-of-range values are unspecified), anything to bool is x != 0,
// bool to a number is 0 or 1. Same-type casts copy.
func Cast[T, U Element](threads int, out []U, x []T) error {
	if len(out) != len(x) {
		return fmt.Errorf("cast: %d outputs for %d inputs", len(out), len(x))
	}
	same, ok := any(x).([]U)
	if !ok && len(out) > 0 && !ewCastRange(out[:0], x[:0], 0, 0) {
		return fmt.Errorf("cast from %T to %T is not supported", x, out)
	}
	if ewSerial(threads, len(out), ewGrain) {
		if ok {
			copy(out, same)
		} else {
			ewCastRange(out, x, 0, len(out))
		}
		return nil
	}
	j := getJob[ewCastJob[T, U]]()
	j.out, j.same, j.x = out, same, x
	perfForRanger(threads, len(out), ewGrain, j)
	putJob(j)
	return nil
}

// Where computes out = cond ? x : y elementwise with three-way numpy
// broadcasting; out has outShape, the broadcast of the three shapes.
func Where[T Element](threads int, out []T, outShape []int, cond []bool, cShape []int, x []T, xShape []int, y []T, yShape []int) error {
	n, ok := ewNumelOK(outShape, len(out))
	fast := ok && len(cond) == n && len(x) == n && len(y) == n &&
		ewSameShape(cShape, outShape) && ewSameShape(xShape, outShape) && ewSameShape(yShape, outShape)
	if !fast {
		if err := ewCheckBroadcast(outShape, len(out), [][]int{cShape, xShape, yShape}, []int{len(cond), len(x), len(y)}); err != nil {
			return err
		}
	}
	n = len(out)
	if n == 0 {
		return nil
	}
	if len(cond) == n && len(x) == n && len(y) == n {
		if ewSerial(threads, n, ewGrain) {
			ewWhereVVV(out, cond, x, y)
			return nil
		}
		j := getJob[ewWhereJob[T]]()
		j.out, j.cond, j.x, j.y = out, cond, x, y
		perfForRanger(threads, n, ewGrain, j)
		putJob(j)
		return nil
	}
	if ewSerial(threads, n, ewGrain) {
		var buf ewPlanBuf
		p := ewMakePlan(&buf, outShape, cShape, xShape, yShape)
		ewWhereRange(&p, 0, n, out, cond, x, y)
		return nil
	}
	j := getJob[ewWhereJob[T]]()
	j.out, j.cond, j.x, j.y = out, cond, x, y
	j.plan = ewMakePlan(&j.buf, outShape, cShape, xShape, yShape)
	j.p = &j.plan
	perfForRanger(threads, n, ewGrain, j)
	putJob(j)
	return nil
}

// ewWhereRange computes out[lo:hi] of a broadcast Where on plan p.
func ewWhereRange[T Element](p *ewPlan, lo, hi int, out []T, cond []bool, x, y []T) {
	r := len(p.dims)
	sc, sx, sy := p.strides[0][r-1], p.strides[1][r-1], p.strides[2][r-1]
	p.walk(lo, hi, func(pos, m int, offs [3]int) {
		o := out[pos : pos+m]
		c, xs, ys := cond[offs[0]:], x[offs[1]:], y[offs[2]:]
		if sc == 1 && sx == 1 && sy == 1 {
			ewWhereVVV(o, c[:m], xs[:m], ys[:m])
			return
		}
		for i := range o {
			if c[i*sc] {
				o[i] = xs[i*sx]
			} else {
				o[i] = ys[i*sy]
			}
		}
	})
}

func ewWhereVVV[T any](o []T, c []bool, x, y []T) {
	c = c[:len(o)]
	x = x[:len(o)]
	y = y[:len(o)]
	for i := range o {
		if c[i] {
			o[i] = x[i]
		} else {
			o[i] = y[i]
		}
	}
}
