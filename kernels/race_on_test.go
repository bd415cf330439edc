//go:build race

package kernels

// raceEnabled trims the heaviest tests under the race detector, which
// slows the GEMM's busy-waiting workers by two orders of magnitude.
const raceEnabled = true
