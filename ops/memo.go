package ops

import "sync/atomic"

// shapeMemo keeps what a kernel derives from its operands' shapes alone
// (resize's taps, matmul's batch offsets) for the last shapes it ran on,
// so that a kernel run again on the same shapes, as in every training
// step, need not derive it again. The value is Go memory, small (a few
// numbers per dim, never one per element), outside the allocator's
// accounting like the kernel closure itself. Kernels only read it, so
// calls running at the same time may share it; the last to store wins.
type shapeMemo[T any] struct{ last atomic.Pointer[memoEntry[T]] }

type memoEntry[T any] struct {
	key []int // rank, then dims, of each shape
	val T
}

// lookup returns the value stored for exactly these shapes.
func (m *shapeMemo[T]) lookup(shapes ...[]int) (T, bool) {
	e := m.last.Load()
	if e == nil || !memoMatches(e.key, shapes) {
		var zero T
		return zero, false
	}
	return e.val, true
}

// store records val as the value of these shapes.
func (m *shapeMemo[T]) store(val T, shapes ...[]int) {
	var key []int
	for _, s := range shapes {
		key = append(key, len(s))
		key = append(key, s...)
	}
	m.last.Store(&memoEntry[T]{key: key, val: val})
}

func memoMatches(key []int, shapes [][]int) bool {
	for _, s := range shapes {
		if len(key) <= len(s) || key[0] != len(s) {
			return false
		}
		for i, d := range s {
			if key[1+i] != d {
				return false
			}
		}
		key = key[1+len(s):]
	}
	return len(key) == 0
}
