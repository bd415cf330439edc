// Package timeline records what a run does with memory — every
// instruction and every allocation and free — and shows it: as a picture
// of the bytes alive over one step's instructions beside the allocator's
// figures after every step (Draw), and as a Chrome trace with one slice
// per instruction and counter tracks for allocated and reserved bytes
// (TraceWriter), which Perfetto and chrome://tracing open.
//
// A Recorder is wired to an executable through exec.Options.MemoryLog
// (Recorder.Instr) and to its allocator through memory.Allocator.Observe
// (Begin and End do that).
package timeline
