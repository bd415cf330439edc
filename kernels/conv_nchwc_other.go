//go:build !amd64 || purego

package kernels

// NCHWcBlock is the channel block this build and machine run the blocked
// layout's vector kernels with: none in this build (0). The blocked
// layout still gives the same results through plain Go loops, only
// slower, and a layout pass leaves the program in NCHW.
func NCHWcBlock() int { return 0 }

func convNCHWcVec(p Conv2DParams, b int, blockedIn bool, x, packed, out, ws []float32, threads int) bool {
	return false
}

func nchwcPadLen(p Conv2DParams, b int) int { return 0 }

func nchwcVecOK(b int) bool { return false }
