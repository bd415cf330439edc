package kernels

import (
	"sync"
	"unsafe"
)

// gemmScratch holds one goroutine's packing buffers. They are recycled
// through a pool so that steady-state GEMM calls allocate nothing.
type gemmScratch[T float] struct {
	a, b, tmp []T
	mem       []T // backing store of a, b and tmp
}

var (
	sgemmScratch = sync.Pool{New: func() any { return new(gemmScratch[float32]) }}
	dgemmScratch = sync.Pool{New: func() any { return new(gemmScratch[float64]) }}
)

func getGemmScratch[T float]() *gemmScratch[T] {
	var zero T
	if _, ok := any(zero).(float32); ok {
		return sgemmScratch.Get().(*gemmScratch[T])
	}
	return dgemmScratch.Get().(*gemmScratch[T])
}

func putGemmScratch[T float](ws *gemmScratch[T]) {
	var zero T
	if _, ok := any(zero).(float32); ok {
		sgemmScratch.Put(ws)
		return
	}
	dgemmScratch.Put(ws)
}

// gemmAlign is the alignment of each buffer: a cache line, so that a packed
// panel row is never split across lines more than it must be.
const gemmAlign = 64

// buffers returns cache-line-aligned buffers of at least na, nb and nt
// elements, growing the backing store only when it is too small.
func (ws *gemmScratch[T]) buffers(na, nb, nt int) (a, b []T) {
	var zero T
	es := int(unsafe.Sizeof(zero))
	pad := gemmAlign / es
	round := func(n int) int { return ceilDiv(n, pad) * pad }
	if len(ws.a) < na || len(ws.b) < nb || len(ws.tmp) < nt {
		na, nb, nt = round(max(na, len(ws.a))), round(max(nb, len(ws.b))), round(max(nt, len(ws.tmp)))
		ws.mem = make([]T, na+nb+nt+pad)
		off := 0
		if r := int(uintptr(unsafe.Pointer(&ws.mem[0])) % gemmAlign); r != 0 {
			off = (gemmAlign - r) / es
		}
		m := ws.mem[off:]
		ws.a, ws.b, ws.tmp = m[:na:na], m[na:na+nb:na+nb], m[na+nb:na+nb+nt:na+nb+nt]
	}
	return ws.a, ws.b
}
