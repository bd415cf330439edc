// Package onnx reads ONNX files: models (ModelProto), tensors
// (TensorProto, including external data), sequences and optionals of
// tensors (the .pb files of ONNX's backend tests), and the layout of ONNX's
// backend test suite. It is the reading layer of gopir's ONNX importer; it
// does not convert graphs to the IR.
//
// The protobuf types live in package onnxpb, generated from ONNX's own
// .proto files.
//
// ReadModel and ParseModel check what every model must have (an IR version
// and a graph) and leave the rest to the importer. TensorFromProto turns a
// TensorProto into a gopir tensor taken from a memory.Allocator. It
// validates the shape against the bytes actually present (inline, or in the
// external file) before allocating, so a header that lies about its size
// is an error, never a huge allocation, and it never leaves allocator bytes
// behind on an error. ONNX element types that gopir cannot hold yet, and
// features this package does not implement (segmented tensors, sequences of
// maps, ...), are reported as *UnsupportedError, which callers can tell
// apart from malformed input with errors.As.
//
// ListTests enumerates a backend test directory such as the one Debian's
// libonnx-testdata package installs at DebianTestData.
package onnx
