package ops

import (
	"encoding/binary"
	"errors"

	"github.com/gopir/gopir/ir"
	"github.com/gopir/gopir/tensor"
)

// A constant tensor given in full by its attribute, as ONNX's Constant and
// initializers that are not trained:
//
//	constant {value: tensor<2xi64>[3, 4]} () -> tensor<2xi64>
//
// Each run makes a fresh copy, in a result the executor allocates
// (Compute), so that consumers may take it over like any other value.

func init() {
	register(&Def{Name: "constant", Infer: inferConstant, Compute: computeConstant, NoGrad: true})
}

func inferConstant(in []ir.Type, attrs ir.Attrs) ([]ir.Type, error) {
	if err := wantOperands(in, 0); err != nil {
		return nil, err
	}
	d, err := attrs.Dense("value")
	if err != nil {
		return nil, err
	}
	return []ir.Type{d.Type}, nil
}

// nativeLittleEndian: the dense attribute's bytes are little-endian and
// tensors hold host-order elements.
var nativeLittleEndian = binary.NativeEndian.Uint16([]byte{1, 0}) == 1

func computeConstant(op *ir.Op) (Compute, error) {
	d, err := op.Attrs.Dense("value")
	if err != nil {
		return Compute{}, err
	}
	if !nativeLittleEndian && d.Type.DType.Size() > 1 {
		return Compute{}, errors.New("constant: big-endian hosts are not supported")
	}
	return Compute{Fn: func(_ *Ctx, _, out []*tensor.Tensor) error {
		copy(out[0].Raw(), d.Raw())
		return nil
	}}, nil
}

// Constant appends the constant d.
func Constant(b *ir.Builder, d ir.Dense) *ir.Value {
	return b.Op1("constant", ir.A("value", d))
}

// ConstantOf appends a constant holding a copy of t's elements.
func ConstantOf(b *ir.Builder, t *tensor.Tensor) *ir.Value {
	d, err := ir.NewDense(ir.TensorOf(ir.DType(t.DType()), t.Shape()...), t.Raw())
	if err != nil {
		b.Fail(err)
		return nil
	}
	return Constant(b, d)
}
