package onnx

// UnsupportedError reports valid ONNX that this package cannot turn into
// gopir values (yet): an element type gopir has no dtype for, a segmented
// tensor, a sequence of maps, and so on. Errors about malformed input are
// plain errors, so
//
//	var u *onnx.UnsupportedError
//	if errors.As(err, &u) { ... }
//
// tells "not supported" from "broken".
type UnsupportedError struct {
	What   string // what was refused, e.g. "data type FLOAT16"
	Reason string // why, or what is supported instead
}

func (e *UnsupportedError) Error() string {
	return e.What + " is not supported: " + e.Reason
}
