//go:build !amd64 || purego

package kernels

// NCHWcVector reports whether this build and machine run ConvNCHWc with
// vector kernels; where it does not, the blocked layout still gives the
// same results through plain Go loops, only slower, and a layout pass
// leaves the program in NCHW.
func NCHWcVector() bool { return false }

func convNCHWcVec(p Conv2DParams, blockedIn bool, x, packed, out, ws []float32, threads int) bool {
	return false
}

func nchwcPadLen(p Conv2DParams) int { return 0 }
