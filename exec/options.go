package exec

import (
	"io"
	"time"

	"github.com/gopir/gopir/ir"
	"github.com/gopir/gopir/memory"
	"github.com/gopir/gopir/ops"
)

// Options configure Compile.
type Options struct {
	// Alloc provides every buffer of a run. Nil means a new allocator with
	// default options and no limit.
	Alloc *memory.Allocator
	// Store holds the parameters ("parameter" ops). Nil means an empty
	// store on Alloc.
	Store *Store
	// Threads bounds the goroutines a kernel may use; 0 means
	// runtime.GOMAXPROCS(0). Results are deterministic for a given count.
	Threads int
	// Seed drives random ops that have no seed attribute of their own.
	Seed int64
	// CheckLeaks makes every Run verify, when it returns, that the only
	// buffers it left behind are the fetched results. A violation is a
	// *LeakError listing each surviving buffer with its op, value and
	// position.
	CheckLeaks bool
	// MemoryLog, if set, receives one record per executed instruction with
	// the allocator's statistics right after it, like Paddle's
	// FLAGS_log_memory_stats.
	MemoryLog func(MemoryRecord)
	// Conditions, if set, receives the value of every condition a run
	// evaluates, in order: an "if"'s, and a "while"'s initial one and the
	// one each iteration yields. Given back to Plan (PlanOptions.Path), it
	// makes the planner follow the run's path.
	Conditions func(op *ir.Op, value bool)
	// Trace, if set, receives the memory log as text lines.
	Trace io.Writer
	// PackCache bounds the allocator bytes the executable may keep in
	// packed copies of parameters: the panels a matmul's GEMM reads,
	// made once instead of on every call (ops.Compute.Pack). 0 turns
	// the cache off. It is used only in programs that update no store
	// value in place (inference programs: no op with ops.Def.Writes).
	// A copy is made on the first run that needs it, held by the
	// executable (counted in the allocator's allocated bytes, tagged
	// "pack"; see PackedBytes and ReleasePacked) and made again when
	// the parameter changes: replaced in the store, written by an op
	// with Writes in another program's run, or written by Go code that
	// then calls its storage's Touch. A copy that does not fit is not
	// made; the kernel then packs as it goes.
	PackCache int64
	// NoDonate keeps every operand lent to its kernel: the executor never
	// hands a dying operand over (ops.Def.Donate), so no kernel updates an
	// operand in place and each result gets a buffer of its own. Results
	// are the same; peak memory and allocations are higher. For
	// measurements and tests.
	NoDonate bool
	// Comm connects the ranks of a data-parallel job for the collective
	// ops (all_reduce, all_reduce_start, all_reduce_wait); nil outside
	// one, where those ops fail. Every rank runs the same program.
	Comm ops.Communicator
}

// MemoryRecord is one line of the per-op memory log.
type MemoryRecord struct {
	Run       int64  // run number, from 0
	Op        string // op name
	Value     string // first result, canonically numbered (%7), or ""
	Pos       string // file:line:col of the op
	Depth     int    // region nesting depth (0 = top level)
	Allocated int64  // allocator's current allocated bytes after the op
	Reserved  int64  // allocator's current reserved bytes after the op
	// Node is the op; Start and End are when it began and finished (an
	// op with regions spans the records of the ops inside it, which come
	// before its own).
	Node       *ir.Op
	Start, End time.Time
}
