package exec

import (
	"fmt"
	"runtime"
	"strconv"

	"github.com/gopir/gopir/ir"
	"github.com/gopir/gopir/memory"
	"github.com/gopir/gopir/ops"
	"github.com/gopir/gopir/tensor"
)

// kind says how the executor runs an instruction.
type kind uint8

const (
	kKernel  kind = iota // an op with ops.Def.Bind: the kernel allocates its results
	kCompute             // an op with ops.Def.Compute: the executor allocates them
	kData
	kParameter
	kFetch
	kRegion // an op with regions, run by its regionOp
	kYield
)

// A regionOp runs one kind of op with regions; the op's file registers it
// in regionOps (if.go, while.go).
type regionOp struct {
	// run executes instruction in of block b: it runs the regions (their
	// code is in.regions) and puts the op's results in b's frame. On error
	// it leaves nothing of its own allocated.
	run func(e *Executable, b *blockCode, in *instr) error
	// moves, if set, picks at compile time the operands the op takes over
	// instead of sharing when they die at it (bit i for operand i, as
	// instr.donate). captured lists the outside values its regions use.
	moves func(in *instr, bc *blockCode, at int, lastUse []int, captured []*ir.Value) uint64
}

var regionOps = map[string]regionOp{}

// ref locates a value: a slot of the frame of the block that defines it.
// Each block has one frame, since a block is never active twice at once.
type ref struct {
	blk  *blockCode
	slot int
}

func (r ref) get() *tensor.Tensor { return r.blk.slots[r.slot] }

// instr is one compiled op. The fields a kernel instruction reads on every
// run come first; their slices point into one array per block (see pack),
// so that running a block walks memory in order.
type instr struct {
	kind    kind
	writes  bool   // updates the store in place (ops.Def.Writes): commits the run
	donate  uint64 // operands moved into the kernel (see ops.Def.Donate)
	kernel  ops.Kernel
	comp    ops.Compute       // for kCompute
	shapes  shapeCache        // for kCompute
	pack    *packSlot         // for kCompute with a parameter to pack (Options.PackCache)
	written []int             // the operands it updates in place (ops.Def.Writes)
	region  regionOp          // for kRegion
	inp     []**tensor.Tensor // the operands' slots
	outp    []**tensor.Tensor // the results' slots
	dropp   []**tensor.Tensor // slots whose last use this is, released after it
	types   []ir.Type

	op      *ir.Op
	in      []ref
	out     []int // slots of the results in the block's frame
	drop    []int // slots whose last use this is (dropp points to them)
	regions []*blockCode
	name    string // feed, parameter or fetch name
	tag     memory.Tag
}

// blockCode is a compiled block and its frame.
type blockCode struct {
	instrs    []instr
	slots     []*tensor.Tensor // the frame: args first, then op results
	nargs     int
	dropEntry []int // block arguments nobody uses, released on entry
	yields    []*tensor.Tensor
	depth     int
}

// Executable is a compiled program. Run may be called many times; runs are
// serialized.
type Executable struct {
	prog    *ir.Program
	top     *blockCode
	alloc   *memory.Allocator
	store   *Store
	opts    Options
	threads int

	feeds   []feed
	params  []param
	fetches []string

	blocks      []*blockCode     // every block, for unwinding after a panic
	maxResults  int              // the most results of one op
	maxOperands int              // the most operands of one op
	results     []*tensor.Tensor // scratch for kernels' result slices (ops.Ctx.Results)
	args        []*tensor.Tensor // scratch for kernels' operands
	// pool recycles the Go objects of the tensors runs make and do not
	// hand out, so that a run like the last one makes none.
	pool tensor.Pool
	// packs are the pack cache's slots (see pack.go); packBytes what
	// they hold, rounded as the allocator counts it.
	packs     []*packSlot
	packBytes int64

	runState
}

type feed struct {
	name string
	typ  ir.Type
	pos  ir.Pos
}

type param struct {
	name string
	typ  ir.Type
}

// Compile verifies p and compiles it. p must not change afterwards.
func Compile(p *ir.Program, opts Options) (*Executable, error) {
	if err := ir.Verify(p); err != nil {
		return nil, err
	}
	e := &Executable{prog: p, opts: opts, alloc: opts.Alloc, store: opts.Store, threads: opts.Threads}
	if e.alloc == nil {
		e.alloc = memory.New(memory.Options{})
	}
	if e.store == nil {
		e.store = NewStore()
	}
	if e.threads <= 0 {
		e.threads = runtime.GOMAXPROCS(0)
	}
	c := &compiler{e: e, refs: map[*ir.Value]ref{}, names: canonicalNames(p), params: map[*ir.Value]string{}}
	top, _, err := c.block(p.Body(), 0)
	if err != nil {
		return nil, err
	}
	if c.writes { // the store changes during a run: a cache would not stay valid
		for _, in := range c.packing {
			in.pack = nil
		}
	} else {
		for _, in := range c.packing {
			e.packs = append(e.packs, in.pack)
		}
	}
	e.top = top
	e.results = make([]*tensor.Tensor, e.maxResults)
	e.args = make([]*tensor.Tensor, e.maxOperands)
	return e, nil
}

// Program returns the compiled program.
func (e *Executable) Program() *ir.Program { return e.prog }

// Allocator returns the allocator runs draw from.
func (e *Executable) Allocator() *memory.Allocator { return e.alloc }

// Store returns the parameter store.
func (e *Executable) Store() *Store { return e.store }

// Fetches lists the names of the program's outputs in program order.
func (e *Executable) Fetches() []string { return e.fetches }

type compiler struct {
	e      *Executable
	refs   map[*ir.Value]ref
	names  map[*ir.Value]string
	params map[*ir.Value]string // parameter ops' results: their names
	// packing lists the instructions that may use the pack cache;
	// writes says that an op updates the store in place.
	packing []*instr
	writes  bool
}

// canonicalNames numbers values the way the printer does.
func canonicalNames(p *ir.Program) map[*ir.Value]string {
	names := map[*ir.Value]string{}
	n := 0
	name := func(v *ir.Value) {
		names[v] = "%" + strconv.Itoa(n)
		n++
	}
	var walk func(b *ir.Block)
	walk = func(b *ir.Block) {
		for _, op := range b.Ops() {
			for _, r := range op.Results() {
				name(r)
			}
			for _, r := range op.Regions() {
				for _, a := range r.Block().Args() {
					name(a)
				}
				walk(r.Block())
			}
		}
	}
	walk(p.Body())
	return names
}

// block compiles b and returns, besides its code, the values of enclosing
// blocks that b's ops use, directly or from inside their regions. Each
// block hands its list to the op that owns it, so a use deep in a nest
// counts for every op around it without walking the nest again at each
// level.
func (c *compiler) block(b *ir.Block, depth int) (*blockCode, []*ir.Value, error) {
	bc := &blockCode{nargs: len(b.Args()), depth: depth}
	c.e.blocks = append(c.e.blocks, bc)
	nslots := len(b.Args())
	for _, a := range b.Args() {
		c.refs[a] = ref{bc, a.Index()}
	}
	// lastUse[slot] is the index of the last instruction that uses the slot
	// directly or from inside its regions; a value nobody uses dies where
	// it is defined (block arguments: on entry, -1).
	var lastUse []int
	for range b.Args() {
		lastUse = append(lastUse, -1)
	}
	for i, op := range b.Ops() {
		for _, r := range op.Results() {
			c.refs[r] = ref{bc, nslots}
			nslots++
			lastUse = append(lastUse, i)
		}
	}
	bc.slots = make([]*tensor.Tensor, nslots)

	var outer []*ir.Value
	seen := map[*ir.Value]bool{}
	use := func(v *ir.Value, at int) {
		if r := c.refs[v]; r.blk == bc {
			lastUse[r.slot] = max(lastUse[r.slot], at)
		} else if !seen[v] {
			seen[v] = true
			outer = append(outer, v)
		}
	}
	bc.instrs = make([]instr, len(b.Ops()))
	captured := make([][]*ir.Value, len(b.Ops())) // what each op's regions use from outside it
	for i, op := range b.Ops() {
		var err error
		if captured[i], err = c.instr(&bc.instrs[i], op, depth); err != nil {
			return nil, nil, err
		}
		for _, v := range op.Operands() {
			use(v, i)
		}
		for _, v := range captured[i] {
			use(v, i)
		}
	}
	for i := range b.Ops() {
		in := &bc.instrs[i]
		in.donate = c.donations(in, bc, i, lastUse)
		if in.kind == kCompute {
			in.donate = c.computeDonations(in, bc, i, lastUse)
		}
		if in.kind == kRegion && in.region.moves != nil {
			in.donate = in.region.moves(in, bc, i, lastUse, captured[i])
		}
	}
	for slot, last := range lastUse {
		if last < 0 {
			bc.dropEntry = append(bc.dropEntry, slot)
		} else {
			bc.instrs[last].drop = append(bc.instrs[last].drop, slot)
		}
	}
	bc.pack()
	if y := b.Terminator(); y != nil {
		bc.yields = make([]*tensor.Tensor, y.NumOperands())
	}
	return bc, outer, nil
}

// pack gives every instruction its slot pointers (operands, results,
// drops), laid out in one array in instruction order.
func (bc *blockCode) pack() {
	n := 0
	for i := range bc.instrs {
		in := &bc.instrs[i]
		n += len(in.in) + len(in.out) + len(in.drop)
	}
	arena := make([]**tensor.Tensor, 0, n)
	take := func(ps ...**tensor.Tensor) []**tensor.Tensor {
		start := len(arena)
		arena = append(arena, ps...)
		return arena[start:len(arena):len(arena)]
	}
	for i := range bc.instrs {
		in := &bc.instrs[i]
		var ps []**tensor.Tensor
		for _, r := range in.in {
			ps = append(ps, &r.blk.slots[r.slot])
		}
		in.inp = take(ps...)
		ps = ps[:0]
		for _, s := range in.out {
			ps = append(ps, &bc.slots[s])
		}
		in.outp = take(ps...)
		ps = ps[:0]
		for _, s := range in.drop {
			ps = append(ps, &bc.slots[s])
		}
		in.dropp = take(ps...)
	}
}

// instr compiles op, its regions included, and returns the values from
// outside op that its regions use.
func (c *compiler) instr(in *instr, op *ir.Op, depth int) ([]*ir.Value, error) {
	in.op = op
	for _, v := range op.Operands() {
		in.in = append(in.in, c.refs[v])
	}
	for _, r := range op.Results() {
		in.out = append(in.out, c.refs[r].slot)
		in.types = append(in.types, r.Type())
	}
	c.e.maxResults = max(c.e.maxResults, len(in.out))
	c.e.maxOperands = max(c.e.maxOperands, len(in.in))
	in.tag = memory.Tag{Op: op.Name(), Pos: op.Pos.String()}
	if op.NumResults() > 0 {
		in.tag.Value = c.names[op.Result(0)]
	}
	var captured []*ir.Value
	for _, r := range op.Regions() {
		rc, outer, err := c.block(r.Block(), depth+1)
		if err != nil {
			return nil, err
		}
		in.regions = append(in.regions, rc)
		captured = append(captured, outer...)
	}
	if r, ok := regionOps[op.Name()]; ok {
		in.kind, in.region = kRegion, r
		return captured, nil
	}
	if op.Terminator() {
		in.kind = kYield
		return captured, nil
	}
	switch op.Name() {
	case "data", "parameter", "fetch":
		in.name, _ = op.Attrs.Str("name")
		switch op.Name() {
		case "data":
			in.kind = kData
			c.e.feeds = append(c.e.feeds, feed{in.name, op.Result(0).Type(), op.Pos})
		case "parameter":
			in.kind = kParameter
			c.e.params = append(c.e.params, param{in.name, op.Result(0).Type()})
			c.params[op.Result(0)] = in.name
		case "fetch":
			in.kind = kFetch
			c.e.fetches = append(c.e.fetches, in.name)
		}
	default:
		def, ok := ops.Lookup(op.Name())
		if ok && def.Compute != nil {
			comp, err := def.Compute(op)
			if err != nil {
				return nil, &ir.Error{Pos: op.Pos, Op: op.Name(), Msg: err.Error(), Err: err}
			}
			in.kind, in.comp = kCompute, comp
			if pk := comp.Pack; pk != nil && c.e.opts.PackCache > 0 && pk.Operand >= 0 && pk.Operand < op.NumOperands() {
				if name, ok := c.params[op.Operand(pk.Operand)]; ok {
					in.pack = &packSlot{param: name}
					c.packing = append(c.packing, in)
				}
			}
		} else {
			k, err := ops.Bind(op)
			if err != nil {
				return nil, &ir.Error{Pos: op.Pos, Op: op.Name(), Msg: err.Error(), Err: err}
			}
			in.kind, in.kernel = kKernel, k
		}
		in.writes = ok && len(def.Writes) > 0
		c.writes = c.writes || in.writes
		if in.writes {
			in.written = def.Writes
		}
	}
	return captured, nil
}

// errorAt wraps err with the op and position of in.
func (in *instr) errorf(format string, args ...any) error {
	return &OpError{Op: in.op.Name(), Pos: in.op.Pos, Err: fmt.Errorf(format, args...)}
}

// donations picks the operands of a kernel that the executor can hand over
// instead of lending: the op asks for them (ops.Def.Donate), they belong to
// this block's frame, this is their last use and they appear once.
func (c *compiler) donations(in *instr, bc *blockCode, at int, lastUse []int) uint64 {
	if in.kind != kKernel || c.e.opts.NoDonate {
		return 0
	}
	def, _ := ops.Lookup(in.op.Name())
	var mask uint64
	for _, i := range def.Donate {
		if i >= len(in.in) || i >= 64 {
			continue
		}
		if r := in.in[i]; r.blk == bc && lastUse[r.slot] == at && appearsOnce(in.in, i) {
			mask |= 1 << uint(i)
		}
	}
	return mask
}
