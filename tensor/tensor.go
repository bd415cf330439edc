package tensor

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"unsafe"

	"github.com/gopir/gopir/memory"
)

// Tensor is a dense, row-major, contiguous array. Its header (dtype, shape,
// storage) never changes after it is made, so a header may be shared
// between owners; the storage's reference count says how many there are.
type Tensor struct {
	shape []int
	n     int
	s     *Storage
	dt    DType
	stack bool // a stack of tensors, see NewStack
	lent  bool // a view a Pool lent until its next Reclaim (see Pool.Reshape)
}

// numElems validates a shape and returns its element count and byte size.
func numElems(dt DType, shape []int) (int, int64, error) {
	if !dt.valid() {
		return 0, 0, fmt.Errorf("tensor: invalid dtype %v", dt)
	}
	// The product of the non-zero dims must fit whatever the order of the
	// dims, so that [0, big, big] is refused like [big, big, 0]: strides
	// are products of trailing dims and would overflow either way.
	n, zero := 1, false
	for i, d := range shape {
		switch {
		case d < 0:
			return 0, 0, fmt.Errorf("tensor: negative dimension %d at axis %d of shape %v", d, i, shape)
		case d == 0:
			zero = true
		case n > math.MaxInt/d:
			return 0, 0, fmt.Errorf("tensor: shape %v has too many elements", shape)
		default:
			n *= d
		}
	}
	if n > math.MaxInt64/dt.Size() {
		return 0, 0, fmt.Errorf("tensor: shape %v of %v is too large", shape, dt)
	}
	if zero {
		n = 0
	}
	return n, int64(n) * int64(dt.Size()), nil
}

// New returns a tensor with refcount 1 whose contents are unspecified
// (kernels write every element). No shape means a scalar. A tensor with no
// elements takes no allocator bytes. An allocator failure is returned as
// is, so an OOM prints in its well-known form and errors.As finds
// *memory.ResourceExhausted.
func New(a *memory.Allocator, dt DType, shape ...int) (*Tensor, error) {
	if a == nil {
		return nil, errors.New("tensor: nil allocator")
	}
	// Header, storage, block handle and a short shape in one Go object:
	// one heap allocation per tensor instead of four.
	return newIn(&newBox{}, a, dt, shape)
}

// newIn makes the tensor in box, a zero newBox or one a Pool recycled.
func newIn(box *newBox, a *memory.Allocator, dt DType, shape []int) (*Tensor, error) {
	n, nbytes, err := numElems(dt, shape)
	if err != nil {
		return nil, err
	}
	s := &box.s
	s.alloc = a
	if nbytes > 0 {
		if err := a.AllocInto(&box.blk, nbytes); err != nil {
			s.alloc = nil
			return nil, err
		}
		s.block = &box.blk
	}
	s.refs.Store(1)
	t := &box.t
	t.dt, t.n, t.s = dt, n, s
	t.shape = box.dims.hold(shape)
	return t, nil
}

// newBox is what New allocates: everything a fresh tensor needs.
type newBox struct {
	t    Tensor
	s    Storage
	blk  memory.Block
	dims dimBuf
}

// viewBox is what Reshape allocates: a header and its shape.
type viewBox struct {
	t    Tensor
	dims dimBuf
}

// dimBuf holds a shape of up to four dims inside the header's object, and
// a longer one in more, which a recycled header (Pool) reuses.
type dimBuf struct {
	short [4]int
	more  []int
}

// hold copies shape into d; the result is never nil, so a scalar's shape
// encodes as [].
func (d *dimBuf) hold(shape []int) []int {
	if len(shape) <= len(d.short) {
		out := d.short[:len(shape):len(shape)]
		copy(out, shape)
		return out
	}
	if cap(d.more) < len(shape) {
		d.more = make([]int, len(shape))
	}
	out := d.more[:len(shape):len(shape)]
	copy(out, shape)
	return out
}

// Zeros is New with every element zero (false for i1).
func Zeros(a *memory.Allocator, dt DType, shape ...int) (*Tensor, error) {
	t, err := New(a, dt, shape...)
	if err != nil {
		return nil, err
	}
	clear(t.Raw())
	return t, nil
}

// Scalar returns a rank-0 tensor holding v converted to dt (nonzero is
// true for i1).
func Scalar(a *memory.Allocator, dt DType, v float64) (*Tensor, error) {
	t, err := New(a, dt)
	if err != nil {
		return nil, err
	}
	switch dt {
	case F32:
		t.F32()[0] = float32(v)
	case F64:
		t.F64()[0] = v
	case I32:
		t.I32()[0] = int32(v)
	case I64:
		t.I64()[0] = int64(v)
	case Bool:
		t.Bool()[0] = v != 0
	}
	return t, nil
}

// FromF32 copies data into allocator memory, as do FromF64, FromI32,
// FromI64 and FromBool. With no shape the tensor is 1-D of len(data); for
// rank 0 pass an empty shape explicitly (FromF32(a, []float32{x}, []int{}...))
// or use Scalar.
func FromF32(a *memory.Allocator, data []float32, shape ...int) (*Tensor, error) {
	return from(a, F32, data, shape)
}

// FromF64 copies float64 data; see FromF32.
func FromF64(a *memory.Allocator, data []float64, shape ...int) (*Tensor, error) {
	return from(a, F64, data, shape)
}

// FromI32 copies int32 data; see FromF32.
func FromI32(a *memory.Allocator, data []int32, shape ...int) (*Tensor, error) {
	return from(a, I32, data, shape)
}

// FromI64 copies int64 data; see FromF32.
func FromI64(a *memory.Allocator, data []int64, shape ...int) (*Tensor, error) {
	return from(a, I64, data, shape)
}

// FromBool copies bool data into an i1 tensor; see FromF32.
func FromBool(a *memory.Allocator, data []bool, shape ...int) (*Tensor, error) {
	return from(a, Bool, data, shape)
}

func from[T any](a *memory.Allocator, dt DType, data []T, shape []int) (*Tensor, error) {
	if shape == nil {
		shape = []int{len(data)}
	}
	n, _, err := numElems(dt, shape)
	if err != nil {
		return nil, err
	}
	if n != len(data) {
		return nil, fmt.Errorf("tensor: %d elements of data for shape %v (%d elements)", len(data), shape, n)
	}
	t, err := New(a, dt, shape...)
	if err != nil {
		return nil, err
	}
	copy(view[T](t), data)
	return t, nil
}

// view reinterprets the tensor's bytes as a []T of Len elements.
func view[T any](t *Tensor) []T {
	raw := t.Raw()
	if len(raw) == 0 {
		return nil
	}
	return unsafe.Slice((*T)(unsafe.Pointer(unsafe.SliceData(raw))), t.n)
}

// DType is the element type.
func (t *Tensor) DType() DType { return t.dt }

// Shape is the shape; [] for a scalar. Do not modify it, and copy it to
// keep it past the tensor's last release: a Pool reuses the header.
func (t *Tensor) Shape() []int { return t.shape }

// Rank is the number of dimensions.
func (t *Tensor) Rank() int { return len(t.shape) }

// Len is the number of elements (1 for a scalar).
func (t *Tensor) Len() int { return t.n }

// Bytes is the size of the data in bytes: Len * DType.Size.
func (t *Tensor) Bytes() int64 { return int64(t.n) * int64(t.dt.Size()) }

// Storage is the shared storage; two tensors alias iff their storages are
// the same pointer.
func (t *Tensor) Storage() *Storage { return t.s }

// Raw returns the data bytes without copying (nil when there are none).
// In debug mode it panics if the storage was released.
func (t *Tensor) Raw() []byte {
	if debugOn.Load() {
		t.s.checkAlive(t)
	}
	if t.s.block == nil {
		return nil
	}
	return t.s.block.Bytes()
}

func (t *Tensor) want(dt DType, method string) {
	if t.dt != dt {
		panic(fmt.Sprintf("tensor: %s() on a %s tensor", method, t.Type()))
	}
}

// F32 returns the elements of an f32 tensor without copying; it panics on
// another dtype. The same holds for F64, I32, I64 and Bool.
func (t *Tensor) F32() []float32 { t.want(F32, "F32"); return view[float32](t) }

// F64 returns the elements of an f64 tensor without copying.
func (t *Tensor) F64() []float64 { t.want(F64, "F64"); return view[float64](t) }

// I32 returns the elements of an i32 tensor without copying.
func (t *Tensor) I32() []int32 { t.want(I32, "I32"); return view[int32](t) }

// I64 returns the elements of an i64 tensor without copying.
func (t *Tensor) I64() []int64 { t.want(I64, "I64"); return view[int64](t) }

// Bool returns the elements of an i1 tensor without copying. Only 0 and 1
// are valid bytes; kernels writing through Raw must keep it so.
func (t *Tensor) Bool() []bool { t.want(Bool, "Bool"); return view[bool](t) }

// Clone returns a copy of t's elements in a new tensor from a.
func (t *Tensor) Clone(a *memory.Allocator) (*Tensor, error) {
	c, err := New(a, t.dt, t.shape...)
	if err != nil {
		return nil, err
	}
	copy(c.Raw(), t.Raw())
	return c, nil
}

// Retain adds a reference to the storage and returns t itself, for a second
// owner of the same header.
func (t *Tensor) Retain() *Tensor {
	t.s.retain(t)
	return t
}

// Release drops one reference; the last one returns the bytes to the
// allocator. A release beyond the last panics.
func (t *Tensor) Release() { t.s.release(t, 1) }

// Refs is the storage's reference count, shared by all views.
func (t *Tensor) Refs() int32 { return t.s.Refs() }

// Reshape returns a view with a new shape over the same storage, holding
// one more reference; the element count must not change.
func (t *Tensor) Reshape(shape ...int) (*Tensor, error) {
	n, _, err := numElems(t.dt, shape)
	if err != nil {
		return nil, err
	}
	if n != t.n {
		return nil, reshapeError(t, shape, n)
	}
	t.s.retain(t)
	box := &viewBox{t: Tensor{dt: t.dt, n: n, s: t.s}}
	box.t.shape = box.dims.hold(shape)
	return &box.t, nil
}

func reshapeError(t *Tensor, shape []int, n int) error {
	return fmt.Errorf("tensor: cannot reshape %s (%d elements) to %v (%d elements)", t.Type(), t.n, shape, n)
}

// Type is the IR type, e.g. "tensor<2x3xf32>", "tensor<f32>" for a scalar.
func (t *Tensor) Type() string {
	if t.stack {
		return "stack"
	}
	return typeString(t.dt, t.shape)
}

// typeString spells a dtype and shape as the IR does: tensor<2x3xf32>.
func typeString(dt DType, shape []int) string {
	var b strings.Builder
	b.WriteString("tensor<")
	for _, d := range shape {
		b.WriteString(strconv.Itoa(d))
		b.WriteByte('x')
	}
	b.WriteString(dt.String())
	b.WriteByte('>')
	return b.String()
}
