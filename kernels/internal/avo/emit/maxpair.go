package emit

import (
	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	. "github.com/mmcloughlin/avo/reg"
)

// MaxPair applies max pooling's maxPair(best, v) lane-wise into best,
// with K1..K3 as temporaries: v takes over where best is not NaN and v
// is NaN or greater.
func MaxPair(best, v VecPhysical) {
	VCMPPS(U8(7), best, best, K1) // best is not NaN
	VCMPPS(U8(3), v, v, K2)       // v is NaN
	VCMPPS(U8(0x1e), best, v, K3) // v > best
	KORW(K2, K3, K3)
	KANDW(K1, K3, K3)
	VMOVAPS(v, K3, best)
}
