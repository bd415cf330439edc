package onnx

import (
	"fmt"
	"slices"
	"strings"

	"github.com/gopir/gopir/ir"
	"github.com/gopir/gopir/ops"
)

// Einsum, lowered to gopir ops as numpy's einsum computes it:
//
//   - the equation gives each input a subscript (letters, at most one
//     "..." standing for the dims the letters leave); the output is the
//     subscript after "->", or else the ellipsis dims followed by the
//     letters that appear once, in ASCII order (capitals first);
//   - a letter repeated within one subscript takes the diagonal (a mask
//     and a sum), and a letter that appears in no other subscript and not
//     in the output is summed at once;
//   - the inputs are then contracted left to right, each pair as a
//     batched matmul ([batch, M, K]·[batch, K, N], after a transpose, or
//     with the matmul's transpose flags, and a reshape), or as a broadcast
//     multiply and a sum when nothing is contracted or the dtype is an
//     integer one (matmul has f32 and f64 only);
//   - the result is transposed into the output's order.
//
// Sizes broadcast like numpy's: a dim of 1 stretches to its label's size.
// Every dim must be known at import time (the reshapes need them).

func init() { register(convEinsum, "Einsum") }

// Labels: a letter is its byte value; dim j of the broadcast ellipsis
// (of rank E) is esEllipsis+j.
const esEllipsis = 256

// esTerm is an operand, or the running result, and its labels (one per
// dim).
type esTerm struct {
	v      *ir.Value
	labels []int
	dims   []int
}

// esParse splits eq into the labels of each input (of the given ranks) and
// of the output.
func esParse(eq string, ranks []int) (ins [][]int, outLabels []int, err error) {
	eq = strings.ReplaceAll(eq, " ", "")
	lhs, rhs, explicit := strings.Cut(eq, "->")
	if strings.Contains(rhs, "->") {
		return nil, nil, fmt.Errorf("equation %q has more than one ->", eq)
	}
	terms := strings.Split(lhs, ",")
	if len(terms) != len(ranks) {
		return nil, nil, fmt.Errorf("equation %q has %d input subscripts for %d inputs", eq, len(terms), len(ranks))
	}
	// Letters and the ellipsis position of each term.
	letters := make([][]int, len(terms))
	ell := make([]int, len(terms))
	maxEll := 0
	for i, term := range terms {
		var err error
		if letters[i], ell[i], err = esLetters(term); err != nil {
			return nil, nil, fmt.Errorf("equation %q: %w", eq, err)
		}
		n := len(letters[i])
		switch {
		case ell[i] < 0 && n != ranks[i]:
			return nil, nil, fmt.Errorf("equation %q: subscript %q has %d letters for input %d of rank %d", eq, term, n, i, ranks[i])
		case ell[i] >= 0 && n > ranks[i]:
			return nil, nil, fmt.Errorf("equation %q: subscript %q has %d letters for input %d of rank %d", eq, term, n, i, ranks[i])
		case ell[i] >= 0:
			maxEll = max(maxEll, ranks[i]-n)
		}
	}
	ins = make([][]int, len(terms))
	for i := range terms {
		if ell[i] < 0 {
			ins[i] = letters[i]
			continue
		}
		e := ranks[i] - len(letters[i])
		ls := slices.Clone(letters[i][:ell[i]])
		for j := range e {
			ls = append(ls, esEllipsis+maxEll-e+j)
		}
		ins[i] = append(ls, letters[i][ell[i]:]...)
	}
	if !explicit {
		for j := range maxEll {
			outLabels = append(outLabels, esEllipsis+j)
		}
		count := map[int]int{}
		for _, ls := range letters {
			for _, l := range ls {
				count[l]++
			}
		}
		var once []int
		for l, c := range count {
			if c == 1 {
				once = append(once, l)
			}
		}
		slices.Sort(once)
		return ins, append(outLabels, once...), nil
	}
	outLetters, outEll, err := esLetters(rhs)
	if err != nil {
		return nil, nil, fmt.Errorf("equation %q: output: %w", eq, err)
	}
	if outEll < 0 && maxEll > 0 {
		return nil, nil, fmt.Errorf("equation %q: the inputs have ellipsis dims but the output has no ...", eq)
	}
	seen := map[int]bool{}
	for _, ls := range letters {
		for _, l := range ls {
			seen[l] = true
		}
	}
	for i, l := range outLetters {
		if !seen[l] {
			return nil, nil, fmt.Errorf("equation %q: output letter %c is in no input", eq, l)
		}
		if slices.Contains(outLetters[:i], l) {
			return nil, nil, fmt.Errorf("equation %q: output letter %c appears twice", eq, l)
		}
	}
	if outEll < 0 {
		return ins, outLetters, nil
	}
	outLabels = slices.Clone(outLetters[:outEll])
	for j := range maxEll {
		outLabels = append(outLabels, esEllipsis+j)
	}
	return ins, append(outLabels, outLetters[outEll:]...), nil
}

// esLetters reads a subscript: its letters, and the number of letters
// before its "..." (-1 without one).
func esLetters(term string) (letters []int, ell int, err error) {
	ell = -1
	for i := 0; i < len(term); i++ {
		c := term[i]
		switch {
		case c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z':
			letters = append(letters, int(c))
		case strings.HasPrefix(term[i:], "...") && ell < 0:
			ell = len(letters)
			i += 2
		default:
			return nil, 0, fmt.Errorf("subscript %q: unexpected %q", term, term[i:])
		}
	}
	return letters, ell, nil
}

func convEinsum(n *node) ([]*value, error) {
	eq := n.String("equation", "")
	ins := n.Ins()
	if len(ins) == 0 {
		n.fail("needs at least one input")
		return nil, nil
	}
	ranks := make([]int, len(ins))
	dt := ins[0].Type().DType
	for i, x := range ins {
		t := x.Type()
		switch {
		case t.IsStack():
			n.fail("input %d is a sequence, want a tensor", i)
			return nil, nil
		case t.DType != dt:
			n.fail("inputs of types %s and %s: want one type", ins[0].Type(), t)
			return nil, nil
		case !isNumber(t.DType):
			return nil, n.unsupported("inputs of type %s", t)
		case !t.IsStatic():
			return nil, n.unsupported("an input of type %s (dims unknown at import time)", t)
		}
		ranks[i] = t.Rank()
	}
	labels, outLabels, err := esParse(eq, ranks)
	if err != nil {
		n.fail("%v", err)
		return nil, nil
	}
	e := &einsum{b: n.b, dt: dt}
	terms := make([]*esTerm, len(ins))
	for i, x := range ins {
		terms[i] = &esTerm{v: x, labels: labels[i], dims: slices.Clone(x.Type().Dims)}
	}
	if err := e.checkSizes(terms); err != nil {
		n.fail("equation %q: %v", eq, err)
		return nil, nil
	}
	// Diagonals, then labels that only one input has and the output lacks.
	for i, t := range terms {
		if err := e.diagonals(t); err != nil {
			n.fail("equation %q: input %d: %v", eq, i, err)
			return nil, nil
		}
	}
	for i, t := range terms {
		var drop []int
		for _, l := range t.labels {
			if !slices.Contains(outLabels, l) && !esInAny(l, terms, i) {
				drop = append(drop, l)
			}
		}
		e.sum(t, drop)
	}
	acc := terms[0]
	for i := 1; i < len(terms); i++ {
		keep := slices.Clone(outLabels)
		for _, t := range terms[i+1:] {
			keep = append(keep, t.labels...)
		}
		acc = e.contract(acc, terms[i], keep)
	}
	if acc.v == ins[0] && slices.Equal(acc.labels, outLabels) {
		return out(ops.Assign(n.b, acc.v)), nil
	}
	return out(e.transpose(acc, outLabels).v), nil
}

// esInAny reports whether a term other than terms[skip] has label l.
func esInAny(l int, terms []*esTerm, skip int) bool {
	for i, t := range terms {
		if i != skip && slices.Contains(t.labels, l) {
			return true
		}
	}
	return false
}

// einsum builds the lowering.
type einsum struct {
	b  *ir.Builder
	dt ir.DType
}

// checkSizes checks that each label's sizes broadcast: all equal, or 1.
func (e *einsum) checkSizes(terms []*esTerm) error {
	size := map[int]int{}
	for _, t := range terms {
		for k, l := range t.labels {
			d := t.dims[k]
			switch s, ok := size[l]; {
			case !ok || s == 1:
				size[l] = d
			case d != s && d != 1:
				return fmt.Errorf("%s has sizes %d and %d", esName(l), s, d)
			}
		}
	}
	return nil
}

// esName names a label in errors.
func esName(l int) string {
	if l >= esEllipsis {
		return fmt.Sprintf("ellipsis dim %d", l-esEllipsis)
	}
	return fmt.Sprintf("letter %c", l)
}

// diagonals replaces each label repeated in t by one dim holding the
// diagonal: a mask keeps the elements whose two indices agree, and a sum
// removes the second dim.
func (e *einsum) diagonals(t *esTerm) error {
	for {
		p, q := -1, -1
		for i, l := range t.labels {
			if j := slices.Index(t.labels[i+1:], l); j >= 0 {
				p, q = i, i+1+j
				break
			}
		}
		if p < 0 {
			return nil
		}
		d := t.dims[p]
		if t.dims[q] != d {
			return fmt.Errorf("%s repeats with sizes %d and %d", esName(t.labels[p]), d, t.dims[q])
		}
		shape := make([]int, len(t.dims))
		for i := range shape {
			shape[i] = 1
		}
		shape[p], shape[q] = d, d
		raw := make([]byte, d*d)
		for i := range d {
			raw[i*d+i] = 1
		}
		mask, err := ir.NewDense(ir.TensorOf(ir.I1, shape...), raw)
		if err != nil {
			return err
		}
		masked := ops.Where(e.b, ops.Constant(e.b, mask), t.v, scalar(e.b, e.dt, 0))
		t.v = ops.ReduceSum(e.b, masked, []int{q}, false)
		t.labels = slices.Delete(t.labels, q, q+1)
		t.dims = slices.Delete(t.dims, q, q+1)
	}
}

// sum sums t over the dims of the given labels.
func (e *einsum) sum(t *esTerm, labels []int) {
	if len(labels) == 0 {
		return
	}
	var axes []int
	for _, l := range labels {
		axes = append(axes, slices.Index(t.labels, l))
	}
	slices.Sort(axes)
	t.v = ops.ReduceSum(e.b, t.v, axes, false)
	for i := len(axes) - 1; i >= 0; i-- {
		t.labels = slices.Delete(t.labels, axes[i], axes[i]+1)
		t.dims = slices.Delete(t.dims, axes[i], axes[i]+1)
	}
}

// sumToOne sums t over the dims of the given labels, keeping them as size
// 1.
func (e *einsum) sumToOne(t *esTerm, labels []int) {
	if len(labels) == 0 {
		return
	}
	var axes []int
	for _, l := range labels {
		k := slices.Index(t.labels, l)
		axes = append(axes, k)
		t.dims[k] = 1
	}
	t.v = ops.ReduceSum(e.b, t.v, axes, true)
}

// transpose returns t with its dims in the order of labels (a permutation
// of t's).
func (e *einsum) transpose(t *esTerm, labels []int) *esTerm {
	if slices.Equal(t.labels, labels) {
		return t
	}
	perm := make([]int, len(labels))
	dims := make([]int, len(labels))
	for i, l := range labels {
		perm[i] = slices.Index(t.labels, l)
		dims[i] = t.dims[perm[i]]
	}
	return &esTerm{v: ops.Transpose(e.b, t.v, perm...), labels: slices.Clone(labels), dims: dims}
}

// reshape returns v viewed with the given dims, or v if it has them.
func (e *einsum) reshape(v *ir.Value, dims []int) *ir.Value {
	if slices.Equal(v.Type().Dims, dims) {
		return v
	}
	return ops.Reshape(e.b, v, dims...)
}

// contract multiplies a and b and sums the labels they share that keep
// does not list. The result's labels are the shared kept ones (batch),
// then a's own, then b's own.
func (e *einsum) contract(a, b *esTerm, keep []int) *esTerm {
	var batch, con, aOnly, bOnly []int
	for _, l := range a.labels {
		switch {
		case !slices.Contains(b.labels, l):
			aOnly = append(aOnly, l)
		case slices.Contains(keep, l):
			batch = append(batch, l)
		default:
			con = append(con, l)
		}
	}
	for _, l := range b.labels {
		if !slices.Contains(a.labels, l) {
			bOnly = append(bOnly, l)
		}
	}
	// A contracted label of size 1 on one side: sum the other side first.
	var sumA, sumB []int
	for _, l := range con {
		da, db := a.dims[slices.Index(a.labels, l)], b.dims[slices.Index(b.labels, l)]
		switch {
		case da == 1 && db != 1:
			sumB = append(sumB, l)
		case db == 1 && da != 1:
			sumA = append(sumA, l)
		}
	}
	a, b = &esTerm{a.v, slices.Clone(a.labels), slices.Clone(a.dims)}, &esTerm{b.v, slices.Clone(b.labels), slices.Clone(b.dims)}
	e.sumToOne(a, sumA)
	e.sumToOne(b, sumB)
	labels := slices.Concat(batch, aOnly, bOnly)
	dimsOf := func(t *esTerm, ls []int) []int {
		ds := make([]int, len(ls))
		for i, l := range ls {
			ds[i] = t.dims[slices.Index(t.labels, l)]
		}
		return ds
	}
	batchDims := make([]int, len(batch))
	for i, l := range batch {
		batchDims[i] = max(a.dims[slices.Index(a.labels, l)], b.dims[slices.Index(b.labels, l)])
	}
	outDims := slices.Concat(batchDims, dimsOf(a, aOnly), dimsOf(b, bOnly))
	if len(con) == 0 || !e.dt.IsFloat() {
		// Broadcast multiply: a as [batch, aOnly, 1…, con], b as
		// [batch, 1…, bOnly, con], then sum over con.
		at := e.transpose(a, slices.Concat(batch, aOnly, con))
		bt := e.transpose(b, slices.Concat(batch, bOnly, con))
		ones := func(k int) []int { return slices.Repeat([]int{1}, k) }
		av := e.reshape(at.v, slices.Concat(dimsOf(a, batch), dimsOf(a, aOnly), ones(len(bOnly)), dimsOf(a, con)))
		bv := e.reshape(bt.v, slices.Concat(dimsOf(b, batch), ones(len(aOnly)), dimsOf(b, bOnly), dimsOf(b, con)))
		v := ops.Multiply(e.b, av, bv)
		if len(con) > 0 {
			axes := make([]int, len(con))
			for i := range axes {
				axes[i] = len(labels) + i
			}
			v = ops.ReduceSum(e.b, v, axes, false)
		}
		return &esTerm{v: v, labels: labels, dims: outDims}
	}
	// Batched matmul of [batch, M, K] and [batch, K, N].
	prod := func(ds []int) int {
		p := 1
		for _, d := range ds {
			p *= d
		}
		return p
	}
	m, k, nn := prod(dimsOf(a, aOnly)), prod(dimsOf(a, con)), prod(dimsOf(b, bOnly))
	// An operand whose matrix dims come in the other order is read
	// transposed by the matmul rather than copied.
	tx := slices.Equal(a.labels, slices.Concat(batch, con, aOnly))
	ty := slices.Equal(b.labels, slices.Concat(batch, bOnly, con))
	ax, ay := []int{m, k}, []int{k, nn}
	if tx {
		ax = []int{k, m}
	} else {
		a = e.transpose(a, slices.Concat(batch, aOnly, con))
	}
	if ty {
		ay = []int{nn, k}
	} else {
		b = e.transpose(b, slices.Concat(batch, con, bOnly))
	}
	av := e.reshape(a.v, slices.Concat(dimsOf(a, batch), ax))
	bv := e.reshape(b.v, slices.Concat(dimsOf(b, batch), ay))
	v := ops.Matmul(e.b, av, bv, tx, ty)
	return &esTerm{v: e.reshape(v, outDims), labels: labels, dims: outDims}
}
