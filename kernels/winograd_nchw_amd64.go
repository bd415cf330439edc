//go:build amd64 && !purego

package kernels

//go:generate sh -c "cd internal/avo && go run ./winogen -out ../../winograd_nchw_amd64.s -stubs ../../winograd_nchw_stub_amd64.go -pkg kernels"

// winoVec reports whether the Winograd path's AVX-512 transforms run:
// with AVX-512 and B panels of whole vectors of 16 tiles.
func winoVec(nr int) bool { return hasPerfAVX512 && nr%16 == 0 }
