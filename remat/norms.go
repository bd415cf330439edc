package remat

import (
	"fmt"

	"github.com/gopir/gopir/ir"
	"github.com/gopir/gopir/ops"
)

// Splitting through batch norms. A training batch_norm is not per sample:
// its statistics are the whole batch's. A split can still run it in
// pieces, in passes over the batch: the pieces of its input summed into
// float64 lanes carried from piece to piece (batch_norm_sum_acc), again
// for the squared deviations from the mean those give
// (batch_norm_sqdev_acc), then the statistics finished once
// (batch_norm_finish) and each piece normalised with them
// (batch_norm_apply, per sample). batch_norm_grad likewise: its two sums
// over a pass (batch_norm_grad_sum_acc, finished by
// batch_norm_grad_finish into dscale and dbias), then each piece's dx
// (batch_norm_grad_x). The lanes take their terms image by image, as the
// whole-batch kernels do, so every result has the whole batch's bits.
//
// Each op of a segment has a phase (segment.lvl): the pass over the
// pieces from which its values can be made. A per-sample op's is the
// latest of its operands'; a batch norm's statistics take the phases of
// its input and the next, and its output comes two phases later; a
// batch_norm_grad's sums take the phase of its operands and its dx the
// next. Every pass of a phase recomputes, piece by piece, what it reads
// from the batch's feeds: the work a split through batch norms adds is
// these extra passes, which the search counts (segment.need).

// isNorm reports whether op is a training batch_norm that a split can run
// in passes (not synchronized over ranks: those are collectives).
func isNorm(op *ir.Op) bool {
	if op.Name() != "batch_norm" || op.NumOperands() != 5 || op.NumResults() != 5 || !recomputable(op) {
		return false
	}
	return training(op)
}

// isNormGrad reports whether op is a training batch_norm_grad that a split
// can run in passes.
func isNormGrad(op *ir.Op) bool {
	if op.Name() != "batch_norm_grad" || op.NumOperands() != 5 || op.NumResults() != 3 || !recomputable(op) {
		return false
	}
	return training(op)
}

// training reads a batch norm's training attribute (true by default).
func training(op *ir.Op) bool {
	if !op.Attrs.Has("training") {
		return true
	}
	t, err := op.Attrs.Bool("training")
	return err == nil && t
}

// channels is the static channel count of batch x, 0 when not known.
func (f *fitter) channels(x *ir.Value) int {
	t := f.costs.typ(x)
	if t.Rank() < 2 || t.Dims[1] <= 0 {
		return 0
	}
	return t.Dims[1]
}

// splitNorm reports whether op is a batch norm a split over n samples can
// run in passes.
func (f *fitter) splitNorm(op *ir.Op, n int) bool {
	if !isNorm(op) || !batchy(op.Operand(0)) || f.channels(op.Operand(0)) == 0 {
		return false
	}
	for _, v := range op.Operands()[1:] {
		if batchy(v) {
			return false
		}
	}
	t := f.costs.typ(op.Result(0))
	return t.IsStatic() && t.Dims[0] == n
}

// splitNormGrad reports whether op is a batch_norm_grad a split over n
// samples can run in passes: dy and x carry the batch, the rest do not.
func (f *fitter) splitNormGrad(op *ir.Op, n int) bool {
	if !isNormGrad(op) || f.channels(op.Operand(1)) == 0 {
		return false
	}
	for i, v := range op.Operands() {
		if batchy(v) != (i < 2) {
			return false
		}
	}
	t := f.costs.typ(op.Result(0))
	return t.IsStatic() && t.Dims[0] == n
}

// deferUses reports whether the forward ops that read v, a batch norm's
// statistics, can run after the forward pieces: each makes nothing
// (assign_into of a running statistic); those before the cut are noted
// to run right after the pieces.
func (s *segment) deferUses(a *analysis, v *ir.Value) bool {
	at := a.pos[s.cut.Def()]
	for _, u := range a.uses[v] {
		op := a.ops[u]
		switch {
		case u >= a.bwd || u > at:
		case s.in[op] || op.NumResults() > 0:
			return false
		default:
			if !containsOp(s.deferred, op) {
				s.deferred = append(s.deferred, op)
			}
		}
	}
	return true
}

// deferSafe reports whether the deferred ops may run after the cut: no op
// between one of them and the cut reads what it reads or writes.
func (s *segment) deferSafe(a *analysis) bool {
	at := a.pos[s.cut.Def()]
	for _, d := range s.deferred {
		from := a.pos[d]
		for _, w := range d.Operands() {
			if def := w.Def(); def != nil && s.in[def] {
				continue
			}
			for _, u := range a.uses[w] {
				if u > from && u <= at {
					return false
				}
			}
		}
	}
	return true
}

func containsOp(list []*ir.Op, op *ir.Op) bool {
	for _, o := range list {
		if o == op {
			return true
		}
	}
	return false
}

// levels sets the phase of every op of the segment.
func (s *segment) levels() {
	s.lvl = map[*ir.Op]int{}
	for _, op := range s.fwd {
		s.lvl[op] = s.inLevel(op, false)
	}
	for _, op := range s.bwd {
		s.lvl[op] = s.inLevel(op, true)
	}
}

// inLevel is the latest phase of op's batch operands.
func (s *segment) inLevel(op *ir.Op, backward bool) int {
	l := 0
	for _, u := range op.Operands() {
		if batchy(u) {
			l = max(l, s.level(u, backward))
		}
	}
	return l
}

// level is the phase from which a piece can make v: 0 for a value from
// outside the segment, or, in the backward pieces, one of the forward's
// (its batch norms' statistics are there by then).
func (s *segment) level(v *ir.Value, backward bool) int {
	d := v.Def()
	if d == nil || !s.in[d] || backward && !s.isBackward(d) {
		return 0
	}
	switch {
	case isNorm(d):
		return s.lvl[d] + 2
	case isNormGrad(d):
		return s.lvl[d] + 1
	}
	return s.lvl[d]
}

// lastPhase is the last phase of the forward pieces (the cut's) or of the
// backward ones.
func (s *segment) lastPhase(backward bool) int {
	if !backward {
		return s.level(s.cut, false)
	}
	q := 0
	for _, op := range s.bwd {
		q = max(q, s.lvl[op])
	}
	return q
}

// phase returns what each piece of phase p of the forward or backward
// pieces runs: list, the ops in program order (a batch norm as its
// normalisation, a batch_norm_grad as its dx; in the backward, the
// forward ops it recomputes first), and passes, the batch norms whose
// sums take this phase. The last phase of the forward runs every forward
// op; a backward phase, the backward ops of that phase and what they and
// the passes read, stopping at values kept whole.
func (s *segment) phase(p int, backward bool, keep map[*ir.Value]bool) (list, passes []*ir.Op) {
	if !backward && p == s.lastPhase(false) {
		return s.fwd, nil
	}
	needed := map[*ir.Op]bool{}
	var mark func(op *ir.Op)
	mark = func(op *ir.Op) {
		for _, u := range op.Operands() {
			d := u.Def()
			if !batchy(u) || d == nil || !s.in[d] || keep[u] || needed[d] {
				continue
			}
			needed[d] = true
			mark(d)
		}
	}
	own := s.fwd
	if backward {
		own = s.bwd
	}
	last := p == s.lastPhase(true)
	for _, op := range own {
		switch {
		case isNorm(op) && (s.lvl[op] == p || s.lvl[op]+1 == p), isNormGrad(op) && s.lvl[op] == p:
			passes = append(passes, op)
			mark(op)
		case backward && !isNormGrad(op) && s.lvl[op] == p && (last || s.isSum(op)):
			// Before the last phase a per-sample op runs only for
			// what reads it in the same phase.
			needed[op] = true
			mark(op)
		}
	}
	for _, op := range s.fwd {
		if needed[op] {
			list = append(list, op)
		}
	}
	for _, op := range s.bwd {
		if needed[op] {
			list = append(list, op)
		}
	}
	return list, passes
}

// isSum reports whether op makes one of the segment's sums over the batch.
func (s *segment) isSum(op *ir.Op) bool {
	for _, v := range s.sums {
		if v.Def() == op {
			return true
		}
	}
	return false
}

// zeros appends a zero state of the given width for batch norm op's
// channels.
func (r *rewriter) zeros(op *ir.Op, x *ir.Value, width int) *ir.Value {
	r.top.SetPos(op.Pos)
	return ops.Full(r.top, ir.F64, 0, r.a.typ(x).Dims[1], width)
}

// pass appends piece i's share of batch norm op's pass of phase p (its
// statistics' sums, or batch_norm_grad's) to its running state.
func (r *rewriter) pass(s *segment, i, p int, op *ir.Op, state map[*ir.Op][2]*ir.Value, local, cut map[*ir.Value]*ir.Value) {
	st := state[op]
	r.top.SetPos(op.Pos)
	var v *ir.Value
	switch {
	case isNormGrad(op):
		dy, x := r.pieceOf(s, i, op.Operand(0), local, cut), r.pieceOf(s, i, op.Operand(1), local, cut)
		r.top.SetPos(op.Pos)
		v = r.top.Op1("batch_norm_grad_sum_acc", nil, st[0], dy, x, r.val(op.Operand(3)))
		st[0] = v
	case s.lvl[op] == p:
		x := r.pieceOf(s, i, op.Operand(0), local, cut)
		r.top.SetPos(op.Pos)
		v = r.top.Op1("batch_norm_sum_acc", nil, st[0], x)
		st[0] = v
	default:
		x := r.pieceOf(s, i, op.Operand(0), local, cut)
		r.top.SetPos(op.Pos)
		v = r.top.Op1("batch_norm_sqdev_acc", nil, st[1], x, st[0])
		st[1] = v
	}
	r.out.splitOps[v.Def()] = splitNote{s.cut, i, r.s.Split[s.cut]}
	state[op] = st
}

// startPasses appends the zero states of the passes of phase p.
func (r *rewriter) startPasses(s *segment, p int, passes []*ir.Op, state map[*ir.Op][2]*ir.Value) {
	for _, op := range passes {
		st := state[op]
		switch {
		case isNormGrad(op):
			st[0] = r.zeros(op, op.Operand(1), ops.BNGradWidth)
		case s.lvl[op] == p:
			st[0] = r.zeros(op, op.Operand(0), ops.BNStatsWidth)
		default:
			st[1] = r.zeros(op, op.Operand(0), ops.BNStatsWidth)
		}
		state[op] = st
	}
}

// finishPasses appends, after the last piece of phase p, the finish of
// each batch norm whose last pass it was: its statistics (which stand for
// batch_norm's results but y) or batch_norm_grad's dscale and dbias.
func (r *rewriter) finishPasses(s *segment, p int, passes []*ir.Op, state map[*ir.Op][2]*ir.Value) {
	for _, op := range passes {
		st := state[op]
		r.top.SetPos(op.Pos)
		switch {
		case isNormGrad(op):
			r.normAcc[op] = st[0]
			fin := r.top.Op("batch_norm_grad_finish", nil, st[0], r.val(op.Operand(4)))
			r.vals[op.Result(1)], r.vals[op.Result(2)] = fin.Result(0), fin.Result(1)
		case s.lvl[op]+1 == p:
			var attrs ir.Attrs
			for _, name := range []string{"epsilon", "momentum"} {
				if a, ok := op.Attrs.Get(name); ok {
					attrs = attrs.With(name, a)
				}
			}
			in := []*ir.Value{st[0], st[1]}
			for _, u := range op.Operands()[1:] {
				in = append(in, r.val(u))
			}
			fin := r.top.Op("batch_norm_finish", attrs, in...)
			for j := 1; j < 5; j++ {
				r.vals[op.Result(j)] = fin.Result(j - 1)
			}
			r.normCoef[op] = fin.Result(4)
		}
	}
}

// normPiece appends piece i's copy of a batch norm (its normalisation
// with the finished statistics) or batch_norm_grad (its dx from the
// finished sums), reading operands.
func (r *rewriter) normPiece(op *ir.Op, operands []*ir.Value) *ir.Op {
	r.top.SetPos(op.Pos)
	if isNorm(op) {
		coef := r.normCoef[op]
		if coef == nil {
			r.fail(fmt.Errorf("remat: the statistics of %q at %s are not made before its pieces", op.Name(), op.Pos))
			return nil
		}
		return r.top.Op1("batch_norm_apply", nil, operands[0], coef).Def()
	}
	acc := r.normAcc[op]
	if acc == nil {
		r.fail(fmt.Errorf("remat: the sums of %q at %s are not made before its pieces", op.Name(), op.Pos))
		return nil
	}
	return r.top.Op1("batch_norm_grad_x", nil, append(operands[:5:5], acc)...).Def()
}
