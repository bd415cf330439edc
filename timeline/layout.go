package timeline

import (
	"sort"

	"github.com/gopir/gopir/memory"
)

// Buffer is one allocation of a run, for the picture: its tag, its bytes
// as the allocator counts them, and where on the run's instruction axis it
// was allocated and freed (To is the end of the run if it outlived it).
type Buffer struct {
	Tag      memory.Tag
	Bytes    int64
	From, To float64
	// Steps give the buffer's bottom edge in the stack as a step
	// function: Bottom[i] on [X[i], X[i+1]), the last up to To.
	X, Bottom []float64
}

// Layout is a run laid out for the picture. Instruction k of the run
// spans [k, k+1) of the x axis and its events are spread evenly inside
// it, so the stacked bytes at every x are the allocator's exact figure.
// Buffers are stacked oldest at the bottom, above the bytes held before
// the run.
type Layout struct {
	Run     *Run
	Buffers []*Buffer
	// BaseX and Base give the bytes held from before the run as a step
	// function (the run may free some of them).
	BaseX, Base []float64
	// PeakX is where the allocated bytes first reach Peak; AtPeak are the
	// buffers alive there, largest first.
	PeakX  float64
	Peak   int64
	AtPeak []*Buffer
	Width  float64 // the number of instructions
}

// eventX places event j of the run on the instruction axis.
func eventXs(r *Run) []float64 {
	xs := make([]float64, len(r.Events))
	prev := 0
	place := func(k float64, from, to int) {
		for i := from; i < to; i++ {
			xs[i] = k + float64(i-from+1)/float64(to-from+1)
		}
	}
	for k, in := range r.Instrs {
		place(float64(k), prev, in.Events)
		prev = in.Events
	}
	// Events after the last instruction (the run's cleanup) close it.
	place(float64(len(r.Instrs)), prev, len(r.Events))
	return xs
}

// Lay lays a run out.
func Lay(r *Run) *Layout {
	l := &Layout{Run: r, Width: float64(len(r.Instrs)), Peak: r.Base}
	if last := len(r.Instrs); last == 0 || len(r.Events) > r.Instrs[last-1].Events {
		l.Width++ // the events after the last instruction get a column
	}
	xs := eventXs(r)
	byID := map[uint64]*Buffer{}
	var live []*Buffer // allocation order
	base := r.Base
	l.BaseX, l.Base = []float64{0}, []float64{float64(base)}
	restack := func(x float64) {
		off := float64(base)
		for _, b := range live {
			if n := len(b.Bottom); n == 0 || b.Bottom[n-1] != off {
				b.X, b.Bottom = append(b.X, x), append(b.Bottom, off)
			}
			off += float64(b.Bytes)
		}
	}
	for j, e := range r.Events {
		x := xs[j]
		switch e.Kind {
		case "alloc":
			b := &Buffer{Tag: e.Tag, Bytes: e.Size, From: x, To: -1}
			byID[e.Block] = b
			live = append(live, b)
			l.Buffers = append(l.Buffers, b)
		case "free":
			b, ok := byID[e.Block]
			if !ok { // held from before the run
				base -= e.Size
				l.BaseX, l.Base = append(l.BaseX, x), append(l.Base, float64(base))
				break
			}
			delete(byID, e.Block)
			b.To = x
			for i, c := range live {
				if c == b {
					live = append(live[:i], live[i+1:]...)
					break
				}
			}
		}
		restack(x)
		if e.Allocated > l.Peak {
			l.Peak, l.PeakX = e.Allocated, x
			l.AtPeak = append(l.AtPeak[:0], live...)
		}
	}
	for _, b := range live {
		b.To = l.Width
	}
	sort.SliceStable(l.AtPeak, func(i, j int) bool { return l.AtPeak[i].Bytes > l.AtPeak[j].Bytes })
	return l
}

// Phase is a stretch of instructions of one phase: [From, To) on the x
// axis.
type Phase struct {
	Name     string
	From, To float64
}

// Phases returns the run's phases in order (none if its instructions
// have none).
func (l *Layout) Phases() []Phase {
	var ps []Phase
	for k, in := range l.Run.Instrs {
		if in.Phase == "" {
			continue
		}
		if n := len(ps); n > 0 && ps[n-1].Name == in.Phase {
			ps[n-1].To = float64(k + 1)
			continue
		}
		ps = append(ps, Phase{Name: in.Phase, From: float64(k), To: float64(k + 1)})
	}
	return ps
}
