package kernels

import (
	"cmp"
	"slices"
)

// UniqueElem is the element types Unique compares: numbers, ordered by
// value, and bools (false before true).
type UniqueElem interface {
	~float32 | ~float64 | ~int32 | ~int64 | ~bool
}

// less orders two elements (NaN is not handled: the caller refuses it).
func less[T UniqueElem](a, b T) bool {
	switch a := any(a).(type) {
	case bool:
		return !a && any(b).(bool)
	case float32:
		return a < any(b).(float32)
	case float64:
		return a < any(b).(float64)
	case int32:
		return a < any(b).(int32)
	case int64:
		return a < any(b).(int64)
	}
	return false
}

// Unique finds the distinct slices of x viewed as [outer, n, inner]: slice
// i is x[o, i, j] for every o and j, compared element by element in that
// order (lexicographically). It returns, for the u distinct slices,
// first[k], the position of the first slice equal to the k-th, and
// counts[k], how many slices equal it; inverse[i] is the k of slice i.
// The distinct slices are in ascending order when sorted, else in the
// order of their first occurrence.
func Unique[T UniqueElem](x []T, outer, n, inner int, sorted bool) (first, counts, inverse []int64) {
	compare := func(a, b int) int {
		for o := range outer {
			pa, pb := o*n*inner+a*inner, o*n*inner+b*inner
			for j := range inner {
				va, vb := x[pa+j], x[pb+j]
				switch {
				case less(va, vb):
					return -1
				case less(vb, va):
					return 1
				}
			}
		}
		return 0
	}
	order := make([]int, n)
	for i := range order {
		order[i] = i
	}
	// Stable: the first slice of each run of equal ones has the lowest
	// position.
	slices.SortStableFunc(order, compare)
	inverse = make([]int64, n)
	for s, i := range order {
		if s == 0 || compare(order[s-1], i) != 0 {
			first = append(first, int64(i))
			counts = append(counts, 0)
		}
		k := len(first) - 1
		counts[k]++
		inverse[i] = int64(k)
	}
	if sorted {
		return first, counts, inverse
	}
	// Renumber the distinct slices by their first occurrence.
	byFirst := make([]int, len(first))
	for k := range byFirst {
		byFirst[k] = k
	}
	slices.SortFunc(byFirst, func(a, b int) int { return cmp.Compare(first[a], first[b]) })
	rank := make([]int64, len(first))
	f2, c2 := make([]int64, len(first)), make([]int64, len(first))
	for r, k := range byFirst {
		rank[k] = int64(r)
		f2[r], c2[r] = first[k], counts[k]
	}
	for i, k := range inverse {
		inverse[i] = rank[k]
	}
	return f2, c2, inverse
}

// UniqueGather copies the slices at positions first of x, viewed as
// [outer, n, inner], into dst, [outer, len(first), inner].
func UniqueGather[T any](dst, x []T, first []int64, outer, n, inner int) {
	u := len(first)
	for o := range outer {
		for k, i := range first {
			copy(dst[(o*u+k)*inner:(o*u+k+1)*inner], x[(o*n+int(i))*inner:(o*n+int(i)+1)*inner])
		}
	}
}
