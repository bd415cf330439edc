package onnx

import (
	"testing"

	"github.com/gopir/gopir/onnx/onnxpb"
	"github.com/gopir/gopir/tensor"
)

// Every entry of elemTypes must have a dtype whose width suits its typed
// field, so that fillTyped and raw_data agree.
func TestElemTypesConsistent(t *testing.T) {
	widths := map[field][]int{
		floatData:  {4},
		doubleData: {8},
		int32Data:  {1, 2, 4},
		int64Data:  {8},
		uint64Data: {4, 8},
	}
	for dt, et := range elemTypes {
		ok := false
		for _, w := range widths[et.field] {
			ok = ok || w == et.dtype.Size()
		}
		if !ok {
			t.Errorf("%v: dtype %v (%d bytes) cannot hold values of %v", dt, et.dtype, et.dtype.Size(), et.field)
		}
		if _, known := onnxpb.TensorProto_DataType_name[int32(dt)]; !known {
			t.Errorf("%v: not an ONNX data type", dt)
		}
	}
}

func TestPutInt(t *testing.T) {
	for _, tc := range []struct {
		v    int64
		size int
		ok   bool
	}{
		{-128, 1, true}, {255, 1, true}, {256, 1, false}, {-129, 1, false},
		{-32768, 2, true}, {65535, 2, true}, {65536, 2, false},
		{-1 << 31, 4, true}, {1<<32 - 1, 4, true}, {1 << 32, 4, false},
		{-1 << 63, 8, true}, {1<<63 - 1, 8, true},
		{0, 3, false},
	} {
		var b [8]byte
		if got := putInt(b[:], tc.v, tc.size); got != tc.ok {
			t.Errorf("putInt(%d, %d bytes) = %v, want %v", tc.v, tc.size, got, tc.ok)
		}
	}
}

// fillTyped's paths for fields no supported type uses yet (uint64_data
// for UINT32 and UINT64), as a future table entry would take them.
func TestFillTypedFutureFields(t *testing.T) {
	for _, tc := range []struct {
		et   elemType
		vals []uint64
		want []byte // native order on little-endian machines
		err  bool
	}{
		{elemType{tensor.I64, uint64Data}, []uint64{1, 1 << 63}, []byte{1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x80}, false},
		{elemType{tensor.I32, uint64Data}, []uint64{1<<32 - 1, 2}, []byte{0xff, 0xff, 0xff, 0xff, 2, 0, 0, 0}, false},
		{elemType{tensor.I32, uint64Data}, []uint64{1 << 32}, nil, true},
		{elemType{tensor.I32, uint64Data}, []uint64{1 << 63}, nil, true},
		{elemType{tensor.I32, stringData}, []uint64{1}, nil, true},
	} {
		tp := &onnxpb.TensorProto{Uint64Data: tc.vals}
		dst := make([]byte, len(tc.vals)*tc.et.dtype.Size())
		err := fillTyped(dst, tp, tc.et)
		if (err != nil) != tc.err {
			t.Errorf("%v %v: error %v, want error %v", tc.et, tc.vals, err, tc.err)
			continue
		}
		if err == nil && nativeLittle && string(dst) != string(tc.want) {
			t.Errorf("%v %v: wrote % x, want % x", tc.et, tc.vals, dst, tc.want)
		}
	}
}
