package memory

import (
	"encoding/json"
	"io"
)

// Event is one alloc or free, for timelines and leak reports.
type Event struct {
	Seq       uint64 `json:"seq"`   // event number, from 1, counting dropped ones (and those only an observer saw)
	Kind      string `json:"kind"`  // "alloc" or "free"
	Block     uint64 `json:"block"` // Block.ID, pairs an alloc with its free
	Size      int64  `json:"size"`  // rounded bytes, as accounted
	Requested int64  `json:"requested"`
	Chunk     int    `json:"chunk"`
	Offset    int64  `json:"offset"`
	Allocated int64  `json:"allocated"` // Allocated.Current after the event
	Reserved  int64  `json:"reserved"`  // Reserved.Current after the event
	Tag       Tag    `json:"tag"`       // the block's tag (set at allocation)
}

// history is a ring buffer of the last len(buf) events.
type history struct {
	buf   []Event
	start int // index of the oldest event
	n     int
	seq   uint64
}

// event records an alloc or free in the history and hands it to the
// observer.
func (a *Allocator) event(kind string, b *Block, s *segment) {
	a.seq++
	e := Event{
		Seq: a.seq, Kind: kind, Block: b.id, Size: s.size, Requested: b.req,
		Chunk: s.chunk.id, Offset: s.offset,
		Allocated: a.st.Allocated.Current, Reserved: a.st.Reserved.Current, Tag: b.tag,
	}
	if a.hist != nil {
		a.hist.record(e)
	}
	if a.observe != nil {
		a.observe(e)
	}
}

// Observe makes f receive every alloc and free from now on, as it
// happens (nil stops it): a timeline or trace records a run this way
// without a history ring. f runs under the allocator's lock and must not
// call the allocator.
func (a *Allocator) Observe(f func(Event)) {
	a.mu.Lock()
	a.observe = f
	a.mu.Unlock()
}

func (h *history) record(e Event) {
	h.seq++
	if h.n < len(h.buf) {
		h.buf[(h.start+h.n)%len(h.buf)] = e
		h.n++
		return
	}
	h.buf[h.start] = e
	h.start = (h.start + 1) % len(h.buf)
}

func (h *history) events() []Event {
	out := make([]Event, 0, h.n)
	for i := range h.n {
		out = append(out, h.buf[(h.start+i)%len(h.buf)])
	}
	return out
}

// History returns the recorded events, oldest first; nil when history is
// off (Options.HistoryCap == 0).
func (a *Allocator) History() []Event {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.hist == nil {
		return nil
	}
	return a.hist.events()
}

// historyJSON is the document WriteHistoryJSON writes.
type historyJSON struct {
	Device   string  `json:"device"`
	Capacity int     `json:"capacity"`
	Dropped  uint64  `json:"dropped"` // events pushed out of the ring
	Events   []Event `json:"events"`
}

// WriteHistoryJSON writes the history as one JSON object:
// {"device":…, "capacity":N, "dropped":K, "events":[…]}.
func (a *Allocator) WriteHistoryJSON(w io.Writer) error {
	a.mu.Lock()
	doc := historyJSON{Device: a.opts.Device, Events: []Event{}}
	if a.hist != nil {
		doc.Capacity = len(a.hist.buf)
		doc.Dropped = a.hist.seq - uint64(a.hist.n)
		doc.Events = a.hist.events()
	}
	a.mu.Unlock()
	enc := json.NewEncoder(w)
	enc.SetIndent("", " ")
	return enc.Encode(doc)
}
