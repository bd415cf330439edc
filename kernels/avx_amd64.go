//go:build !purego

package kernels

// The AVX2 loops of avx_amd64.s (the float32 row sums of reduce_amd64.go,
// the float32 add and multiply of elementwise_vec_amd64.go, the nearest
// 2× row copy of resize_vec_amd64.go) come from one generator.

//go:generate sh -c "cd internal/avo && go run ./avxgen -out ../../avx_amd64.s -stubs ../../avx_stub_amd64.go -pkg kernels"
