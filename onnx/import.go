package onnx

import (
	"errors"
	"fmt"
	"path/filepath"
	"runtime/debug"
	"sort"
	"strings"

	"github.com/gopir/gopir/ir"
	"github.com/gopir/gopir/memory"
	"github.com/gopir/gopir/onnx/onnxpb"
	"github.com/gopir/gopir/ops"
	"github.com/gopir/gopir/tensor"
)

// Options adjust Import.
type Options struct {
	// Alloc holds the initial values of the parameters (Model.Params). Nil
	// means a new allocator with no limit.
	Alloc *memory.Allocator
	// File names the model in positions and errors ("model.onnx"); Dir is
	// where external data is looked for. ImportFile sets both.
	File, Dir string
	// InputTypes, keyed by graph input name, replaces the type the model
	// declares for that input. The type must refine the declared one; it
	// completes what ONNX may leave open, such as the rank of the tensors
	// of a sequence, and may pin dynamic dims.
	InputTypes map[string]ir.Type
}

// Model is an imported ONNX model: a gopir program and what it needs.
type Model struct {
	// Program reads each graph input with a "data" op of the input's name,
	// each float initializer with a "parameter" op of the initializer's
	// name, and fetches each graph output under its name.
	Program *ir.Program
	// Params holds the initializers' values by parameter name (owned by
	// the Model; Release releases them). Put them in an exec.Store.
	Params map[string]*tensor.Tensor
	// Inputs and Outputs are the graph's inputs (initializers excluded)
	// and outputs in order.
	Inputs  []Input
	Outputs []string
	// Opset is the model's version of the default ONNX domain.
	Opset int64
}

// Input is a graph input: its name and gopir type.
type Input struct {
	Name string
	Type ir.Type
}

// Release releases the parameters' values.
func (m *Model) Release() {
	for n, t := range m.Params {
		t.Release()
		delete(m.Params, n)
	}
}

// ImportFile reads and imports the ONNX model at path.
func ImportFile(path string, opts Options) (*Model, error) {
	mp, err := ReadModel(path)
	if err != nil {
		return nil, err
	}
	if opts.File == "" {
		opts.File = path
	}
	if opts.Dir == "" {
		opts.Dir = filepath.Dir(path)
	}
	return Import(mp, opts)
}

// NodeError is a failure to import one node: which graph, which node, its
// op type and name, and why. errors.As reaches an *UnsupportedError for
// what gopir does not support.
type NodeError struct {
	File   string
	Graph  string // the graph's path: "main", "main/If_3.then_branch", ...
	Index  int    // the node's index in its graph
	Name   string // the node's name, possibly empty
	OpType string // "Conv", or "domain.Op" outside the default domain
	Err    error
}

func (e *NodeError) Error() string {
	name := ""
	if e.Name != "" {
		name = fmt.Sprintf(" %q", e.Name)
	}
	return fmt.Sprintf("%s: graph %s: node %d%s (%s): %v", e.File, e.Graph, e.Index, name, e.OpType, e.Err)
}

func (e *NodeError) Unwrap() error { return e.Err }

// opError is a builder error about a gopir op that a node became, without
// the position (the node's, which NodeError gives).
type opError struct{ e *ir.Error }

func (e *opError) Error() string { return fmt.Sprintf("gopir op %q: %s", e.e.Op, e.e.Msg) }
func (e *opError) Unwrap() error { return e.e.Err }

// Import converts an ONNX model to a gopir program.
//
// Graph inputs become "data" ops (dims given by dim_param or left out
// are dynamic), initializers of f32 and f64 become "parameter" ops (so a
// model can be trained; their values are in Model.Params), other
// initializers and Constant nodes become constants, and graph outputs
// become "fetch" ops. Values that can be computed at import time (shape
// arithmetic on static shapes, constants) are, and appear as constants.
// An op, attribute or type that gopir does not support is an error naming
// the node (*NodeError wrapping *UnsupportedError), never a program that
// computes something else.
func Import(mp *onnxpb.ModelProto, opts Options) (*Model, error) {
	if opts.Alloc == nil {
		opts.Alloc = memory.New(memory.Options{})
	}
	if opts.File == "" {
		opts.File = "model.onnx"
	}
	im := &importer{opts: opts, host: memory.New(memory.Options{}), params: map[string]*tensor.Tensor{}}
	im.opsets = map[string]int64{}
	for _, o := range mp.GetOpsetImport() {
		switch o.GetDomain() {
		case "", "ai.onnx":
			im.opset = o.GetVersion()
		default:
			im.opsets[o.GetDomain()] = o.GetVersion()
		}
	}
	if im.opset == 0 {
		im.opset = 1
	}
	m, err := im.model(mp.GetGraph())
	im.releaseKnown()
	if err != nil {
		for _, t := range im.params {
			t.Release()
		}
		return nil, err
	}
	return m, nil
}

type importer struct {
	opts   Options
	opset  int64             // of the default domain
	opsets map[string]int64  // of the others
	host   *memory.Allocator // values known at import time
	params map[string]*tensor.Tensor
	known  []*tensor.Tensor // every known value, released at the end
	// speculative lists the ops made for partially known vectors, which
	// prune erases when nothing uses them.
	speculative []*ir.Op
}

// opsetOf is the model's version of domain.
func (im *importer) opsetOf(domain string) int64 {
	if domain == "" || domain == "ai.onnx" {
		return im.opset
	}
	return im.opsets[domain]
}

func (im *importer) releaseKnown() {
	for _, t := range im.known {
		t.Release()
	}
	im.known = nil
}

// keep records t as a value known at import time and returns it.
func (im *importer) keep(t *tensor.Tensor) *tensor.Tensor {
	im.known = append(im.known, t)
	return t
}

// value is an ONNX value as the importer sees it: a value of the program,
// or a tensor known at import time (materialized as a constant where it is
// used), or both.
type value struct {
	v     *ir.Value
	known *tensor.Tensor // a constant's value
	init  *tensor.Tensor // a parameter's initial value: known, but trainable
	// elems, for a small integer vector v computed at run time, is what
	// is known of its elements (partial.go).
	elems []elem
}

func (x *value) typ() ir.Type {
	if x.v != nil {
		return x.v.Type()
	}
	return ir.TensorOf(ir.DType(x.known.DType()), x.known.Shape()...)
}

// scope is one ONNX graph being converted into one gopir block. Names
// resolve in the scope, then in the enclosing graphs' scopes (ONNX
// subgraphs read outer values by name; gopir regions capture them).
type scope struct {
	parent *scope
	path   string // for errors: "main", "main/loop_body"
	b      *ir.Builder
	names  map[string]*value
	consts map[*tensor.Tensor]*ir.Value // known values materialized in this block
}

func (s *scope) lookup(name string) (*value, bool) {
	for ; s != nil; s = s.parent {
		if x, ok := s.names[name]; ok {
			return x, true
		}
	}
	return nil, false
}

// use returns x as a value of the program, usable in s's block.
func (s *scope) use(x *value) *ir.Value {
	if x.v != nil {
		return x.v
	}
	for sc := s; sc != nil; sc = sc.parent {
		if v, ok := sc.consts[x.known]; ok {
			return v
		}
	}
	v := ops.ConstantOf(s.b, x.known)
	s.consts[x.known] = v
	return v
}

func (im *importer) model(g *onnxpb.GraphProto) (*Model, error) {
	p := ir.NewProgram()
	b := ir.NewBuilder(p)
	s := &scope{path: "main", b: b, names: map[string]*value{}, consts: map[*tensor.Tensor]*ir.Value{}}
	m := &Model{Program: p, Params: im.params, Opset: im.opset}
	if err := im.initializers(s, g); err != nil {
		return nil, err
	}
	for _, in := range g.GetInput() {
		name := in.GetName()
		if _, isInit := s.names[name]; isInit {
			continue // an initializer listed as an input (IR < 4): its default wins
		}
		b.SetPos(ir.Pos{File: fmt.Sprintf("%s: input %q", im.opts.File, name)})
		t, err := typeFromProto(in.GetType())
		if err != nil {
			return nil, fmt.Errorf("%s: graph input %q: %w", im.opts.File, name, err)
		}
		if want, ok := im.opts.InputTypes[name]; ok {
			if !want.Refines(t) && !t.IsStack() {
				return nil, fmt.Errorf("%s: graph input %q: the given type %s does not refine the model's %s", im.opts.File, name, want, t)
			}
			t = want
		}
		v := ops.DataTyped(b, name, t)
		s.names[name] = &value{v: v}
		m.Inputs = append(m.Inputs, Input{name, t})
	}
	if err := im.nodes(s, g); err != nil {
		return nil, err
	}
	for _, out := range g.GetOutput() {
		name := out.GetName()
		x, ok := s.lookup(name)
		if !ok {
			return nil, fmt.Errorf("%s: graph output %q is computed by no node", im.opts.File, name)
		}
		b.SetPos(ir.Pos{File: fmt.Sprintf("%s: output %q", im.opts.File, name)})
		ops.Fetch(b, name, s.use(x))
		m.Outputs = append(m.Outputs, name)
	}
	im.prune()
	if err := b.Err(); err != nil {
		return nil, err
	}
	if err := ir.Verify(p); err != nil {
		return nil, fmt.Errorf("%s: the imported program does not verify (a bug in the importer): %w", im.opts.File, err)
	}
	return m, nil
}

// initializers makes float initializers parameters and the others
// constants.
func (im *importer) initializers(s *scope, g *onnxpb.GraphProto) error {
	for _, tp := range g.GetInitializer() {
		name := tp.GetName()
		t, err := TensorFromProto(tp, im.opts.Dir, im.opts.Alloc)
		if err != nil {
			return fmt.Errorf("%s: initializer %q: %w", im.opts.File, name, err)
		}
		if _, dup := s.names[name]; dup {
			t.Release()
			return fmt.Errorf("%s: initializer %q given twice", im.opts.File, name)
		}
		dt := ir.DType(t.DType())
		if !dt.IsFloat() {
			c, err := t.Clone(im.host)
			t.Release()
			if err != nil {
				return err
			}
			s.names[name] = &value{known: im.keep(c)}
			continue
		}
		s.b.SetPos(ir.Pos{File: fmt.Sprintf("%s: initializer %q", im.opts.File, name)})
		v := ops.Parameter(s.b, name, dt, t.Shape()...)
		im.params[name] = t
		s.names[name] = &value{v: v, init: t}
	}
	for _, sp := range g.GetSparseInitializer() {
		return fmt.Errorf("%s: sparse initializer %q: %w", im.opts.File, sp.GetValues().GetName(),
			&UnsupportedError{What: "sparse initializers", Reason: "convert them to dense tensors"})
	}
	return nil
}

// nodes converts the nodes of g, in order, into s's block.
func (im *importer) nodes(s *scope, g *onnxpb.GraphProto) error {
	for i, np := range g.GetNode() {
		opType := np.GetOpType()
		if d := np.GetDomain(); d != "" && d != "ai.onnx" {
			opType = d + "." + opType
		}
		fail := func(err error) error {
			var ie *ir.Error
			if errors.As(err, &ie) && strings.HasPrefix(ie.Pos.File, im.opts.File+": graph ") {
				err = &opError{ie} // the node's position would be said twice
			}
			return &NodeError{File: im.opts.File, Graph: s.path, Index: i, Name: np.GetName(), OpType: opType, Err: err}
		}
		s.b.SetPos(ir.Pos{File: fmt.Sprintf("%s: graph %s: node %d %q (%s)", im.opts.File, s.path, i, np.GetName(), opType)})
		if err := checkArity(np, opType, im.opsetOf(np.GetDomain())); err != nil {
			return fail(err)
		}
		conv, ok := converters[opType]
		if !ok {
			return fail(&UnsupportedError{What: "op " + opType, Reason: "gopir has no conversion for it"})
		}
		n := &node{im: im, s: s, b: s.b, p: np, index: i}
		for _, name := range np.GetInput() {
			if name == "" {
				n.in = append(n.in, nil)
				continue
			}
			x, ok := s.lookup(name)
			if !ok {
				return fail(fmt.Errorf("input %q is not defined before this node", name))
			}
			n.in = append(n.in, x)
		}
		outs, err := im.convert(n, conv)
		if err != nil {
			return fail(err)
		}
		for k, name := range np.GetOutput() {
			if name == "" {
				continue
			}
			if k >= len(outs) || outs[k] == nil {
				return fail(&UnsupportedError{What: fmt.Sprintf("output %d (%q)", k, name), Reason: "gopir does not compute it"})
			}
			s.names[name] = outs[k]
		}
	}
	return nil
}

// BugError is a panic of the importer on some node: a bug in gopir, not a
// problem of the model, reported as an error instead of a crash.
type BugError struct {
	Value any    // what the importer panicked with
	Stack string // where
}

func (e *BugError) Error() string {
	return fmt.Sprintf("the importer failed on this node (a bug in gopir; please report it): %v", e.Value)
}

// convert runs conv on n: at import time when every input is known and
// the op may be folded, else into the program.
func (im *importer) convert(n *node, conv converter) (vals []*value, err error) {
	defer func() {
		if r := recover(); r != nil {
			vals, err = nil, &BugError{Value: r, Stack: string(debug.Stack())}
		}
	}()
	if outs, ok := im.fold(n, conv); ok {
		return outs, nil
	}
	outs, err := conv.fn(n)
	if err == nil {
		err = n.finish()
	}
	if err == nil {
		err = n.b.Err()
	}
	if err != nil {
		return nil, err
	}
	return outs, nil
}

// typeFromProto converts an ONNX type: tensors keep their dims (dim_param
// and unknown dims are dynamic), sequences and optionals become stacks (an
// optional is a stack of zero or one items).
func typeFromProto(tp *onnxpb.TypeProto) (ir.Type, error) {
	switch {
	case tp.GetTensorType() != nil:
		tt := tp.GetTensorType()
		et, err := lookupType(tt.GetElemType())
		if err != nil {
			return ir.Type{}, err
		}
		if tt.Shape == nil {
			// ONNX leaves the rank open where any will do: the items of
			// sequences, mostly. gopir's unranked type takes them; ops
			// that compute refuse it with a clear error.
			return ir.UnrankedOf(ir.DType(et.dtype)), nil
		}
		var dims []int
		for _, d := range tt.GetShape().GetDim() {
			if v, ok := d.Value.(*onnxpb.TensorShapeProto_Dimension_DimValue); ok && v.DimValue >= 0 {
				dims = append(dims, int(v.DimValue))
			} else {
				dims = append(dims, ir.Dynamic)
			}
		}
		t := ir.TensorOf(ir.DType(et.dtype), dims...)
		if err := t.Check(); err != nil {
			return ir.Type{}, err
		}
		return t, nil
	case tp.GetSequenceType() != nil:
		elem, err := typeFromProto(tp.GetSequenceType().GetElemType())
		if err != nil {
			return ir.Type{}, fmt.Errorf("sequence element: %w", err)
		}
		return ir.StackOf(elem), nil
	case tp.GetOptionalType() != nil:
		elem, err := typeFromProto(tp.GetOptionalType().GetElemType())
		if err != nil {
			return ir.Type{}, fmt.Errorf("optional element: %w", err)
		}
		return ir.StackOf(elem), nil
	case tp == nil:
		return ir.Type{}, errors.New("no type")
	}
	return ir.Type{}, &UnsupportedError{What: "type " + strings.TrimSpace(tp.String()), Reason: "gopir supports tensors, sequences and optionals"}
}

// sortedKeys lists a map's keys in order, for deterministic messages.
func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
