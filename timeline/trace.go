package timeline

import (
	"bufio"
	"encoding/json"
	"io"
	"time"
)

// TraceWriter writes runs as a Chrome trace (the JSON object format of
// the Trace Event Format, which Perfetto and chrome://tracing open): a
// slice per run and per instruction (op, value, source position, phase)
// on one track, and counter tracks "allocated" and "reserved" in bytes
// with a sample at the start of each run and after every allocation and
// free. Runs are written as they are added; Close ends the document.
type TraceWriter struct {
	w     *bufio.Writer
	t0    time.Time
	n     int
	err   error
	resvd int64
}

// traceEvent is one event of the Trace Event Format.
type traceEvent struct {
	Name string         `json:"name"`
	Cat  string         `json:"cat,omitempty"`
	Ph   string         `json:"ph"`
	Ts   float64        `json:"ts"` // microseconds
	Dur  *float64       `json:"dur,omitempty"`
	Pid  int            `json:"pid"`
	Tid  int            `json:"tid"`
	Args map[string]any `json:"args,omitempty"`
}

// NewTraceWriter starts a trace on w.
func NewTraceWriter(w io.Writer) *TraceWriter {
	t := &TraceWriter{w: bufio.NewWriter(w), resvd: -1}
	_, t.err = t.w.WriteString(`{"displayTimeUnit":"ms","traceEvents":[`)
	t.emit(traceEvent{Name: "process_name", Ph: "M", Pid: 1, Args: map[string]any{"name": "gopir"}})
	t.emit(traceEvent{Name: "thread_name", Ph: "M", Pid: 1, Tid: 1, Args: map[string]any{"name": "instructions"}})
	return t
}

func (t *TraceWriter) emit(e traceEvent) {
	if t.err != nil {
		return
	}
	b, err := json.Marshal(e)
	if err != nil {
		t.err = err
		return
	}
	if t.n > 0 {
		t.w.WriteByte(',')
	}
	t.n++
	_, t.err = t.w.Write(b)
}

func us(d time.Duration) float64 { return float64(d) / float64(time.Microsecond) }

func (t *TraceWriter) counters(ts float64, allocated, reserved int64) {
	t.emit(traceEvent{Name: "allocated", Ph: "C", Ts: ts, Pid: 1, Args: map[string]any{"bytes": allocated}})
	if reserved != t.resvd {
		t.resvd = reserved
		t.emit(traceEvent{Name: "reserved", Ph: "C", Ts: ts, Pid: 1, Args: map[string]any{"bytes": reserved}})
	}
}

// Add writes a run.
func (t *TraceWriter) Add(r *Run) error {
	if t.t0.IsZero() {
		t.t0 = r.Start
	}
	at := us(r.Start.Sub(t.t0))
	end := time.Duration(0)
	if n := len(r.Instrs); n > 0 {
		end = r.Instrs[n-1].End
	}
	if n := len(r.Events); n > 0 {
		end = max(end, r.Events[n-1].At)
	}
	dur := us(end)
	t.emit(traceEvent{Name: r.Label, Cat: "run", Ph: "X", Ts: at, Dur: &dur, Pid: 1, Tid: 1})
	t.counters(at, r.Base, r.BaseReserved)
	for _, in := range r.Instrs {
		d := us(in.End - in.Start)
		args := map[string]any{"pos": in.Pos}
		if in.Value != "" {
			args["value"] = in.Value
		}
		cat := in.Phase
		if cat == "" {
			cat = "op"
		}
		t.emit(traceEvent{Name: in.Op, Cat: cat, Ph: "X", Ts: at + us(in.Start), Dur: &d, Pid: 1, Tid: 1, Args: args})
	}
	for _, e := range r.Events {
		t.counters(at+us(e.At), e.Allocated, e.Reserved)
	}
	if t.err == nil {
		t.err = t.w.Flush()
	}
	return t.err
}

// Close ends the trace; it does not close the underlying writer.
func (t *TraceWriter) Close() error {
	if t.err == nil {
		_, t.err = t.w.WriteString("]}\n")
	}
	if t.err == nil {
		t.err = t.w.Flush()
	}
	return t.err
}
