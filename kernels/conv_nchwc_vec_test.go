package kernels

import (
	"fmt"
	"math"
	"math/rand"
	"testing"
)

// nchwcVecCases reach every branch of the vector driver: tails of every
// tile width, borders on both sides, windows that miss the input, strides
// 1 to 3, uneven groups of output blocks, NCHW inputs of odd depth,
// pointwise planes cut into segments, and batches of short rows in tiles
// down the samples (with tails, in more than one item, and with planes
// split into parts of rows, the last short, also for three groups on
// two threads); a single sample's rows and pointwise row spread evenly
// over the threads, tiles of near-equal widths; single
// samples of small planes on their padded copy, blocked and NCHW, odd
// and strided. The last ones have output (and input) channels in blocks of
// 8 only: odd counts of AVX2 blocks.
var nchwcVecCases = []Conv2DParams{
	{N: 1, C: 16, H: 5, W: 1, O: 16, KH: 3, KW: 3, SH: 1, SW: 1, PH: 1, PW: 1},
	{N: 2, C: 32, H: 9, W: 23, O: 80, KH: 3, KW: 3, SH: 1, SW: 1, PH: 1, PW: 1},
	{N: 1, C: 16, H: 11, W: 17, O: 96, KH: 3, KW: 3, SH: 2, SW: 2, PH: 1, PW: 1},
	{N: 1, C: 48, H: 7, W: 13, O: 64, KH: 3, KW: 5, SH: 3, SW: 2, PH: 2, PW: 1},
	{N: 1, C: 16, H: 4, W: 4, O: 32, KH: 1, KW: 1, SH: 1, SW: 1, PH: 2, PW: 2},
	{N: 1, C: 16, H: 3, W: 3, O: 16, KH: 5, KW: 5, SH: 1, SW: 1, PH: 3, PW: 3},
	{N: 2, C: 32, H: 13, W: 19, O: 112, KH: 1, KW: 1, SH: 1, SW: 1},
	{N: 1, C: 16, H: 15, W: 15, O: 48, KH: 1, KW: 1, SH: 2, SW: 2},
	{N: 2, C: 3, H: 21, W: 19, O: 64, KH: 7, KW: 7, SH: 2, SW: 2, PH: 3, PW: 3},
	{N: 1, C: 5, H: 9, W: 30, O: 48, KH: 3, KW: 3, SH: 1, SW: 1, PH: 1, PW: 1},
	{N: 1, C: 1, H: 6, W: 6, O: 16, KH: 2, KW: 2, SH: 2, SW: 2},
	{N: 1, C: 32, H: 2, W: 2, O: 64, KH: 3, KW: 3, SH: 1, SW: 1, PH: 1, PW: 1},
	{N: 3, C: 32, H: 4, W: 4, O: 64, KH: 3, KW: 3, SH: 1, SW: 1, PH: 1, PW: 1},
	{N: 9, C: 16, H: 3, W: 3, O: 80, KH: 3, KW: 3, SH: 2, SW: 2, PH: 1, PW: 1},
	{N: 2, C: 16, H: 2, W: 2, O: 32, KH: 1, KW: 1, SH: 1, SW: 1, PH: 1, PW: 1},
	{N: 3, C: 3, H: 7, W: 7, O: 16, KH: 3, KW: 3, SH: 2, SW: 2, PH: 1, PW: 1},
	{N: 17, C: 16, H: 2, W: 2, O: 32, KH: 3, KW: 3, SH: 1, SW: 1, PH: 1, PW: 1},
	{N: 2, C: 16, H: 7, W: 5, O: 80, KH: 3, KW: 3, SH: 1, SW: 1, PH: 1, PW: 1},
	{N: 4, C: 16, H: 5, W: 6, O: 160, KH: 3, KW: 3, SH: 1, SW: 1, PH: 1, PW: 1},
	{N: 1, C: 3, H: 7, W: 7, O: 16, KH: 3, KW: 3, SH: 2, SW: 2, PH: 1, PW: 1},
	{N: 1, C: 32, H: 3, W: 5, O: 80, KH: 3, KW: 3, SH: 1, SW: 1, PH: 1, PW: 1},
	{N: 1, C: 48, H: 4, W: 4, O: 64, KH: 3, KW: 3, SH: 2, SW: 2, PH: 1, PW: 1},
	{N: 1, C: 16, H: 3, W: 3, O: 48, KH: 3, KW: 3, SH: 1, SW: 1, PH: 1, PW: 1},
	{N: 1, C: 32, H: 1, W: 7, O: 16, KH: 1, KW: 3, SH: 1, SW: 1, PW: 1},
	{N: 1, C: 32, H: 10, W: 10, O: 192, KH: 3, KW: 3, SH: 1, SW: 1, PH: 1, PW: 1},
	{N: 1, C: 16, H: 10, W: 10, O: 192, KH: 1, KW: 1, SH: 1, SW: 1},
	{N: 1, C: 16, H: 20, W: 20, O: 96, KH: 3, KW: 3, SH: 1, SW: 1, PH: 1, PW: 1},
	{N: 1, C: 24, H: 9, W: 11, O: 40, KH: 3, KW: 3, SH: 1, SW: 1, PH: 1, PW: 1},
	{N: 3, C: 8, H: 5, W: 5, O: 24, KH: 3, KW: 3, SH: 2, SW: 2, PH: 1, PW: 1},
	{N: 1, C: 3, H: 10, W: 13, O: 56, KH: 3, KW: 3, SH: 2, SW: 2, PH: 1, PW: 1},
	{N: 1, C: 40, H: 3, W: 3, O: 56, KH: 3, KW: 3, SH: 1, SW: 1, PH: 1, PW: 1},
	{N: 2, C: 24, H: 6, W: 17, O: 72, KH: 1, KW: 1, SH: 1, SW: 1},
}

// nchwcVecBlocks are the channel blocks this machine has vector kernels
// for: 8 wherever AVX2+FMA run, 16 with AVX-512 too.
func nchwcVecBlocks() []int {
	var bs []int
	for _, b := range []int{8, 16} {
		if nchwcVecOK(b) {
			bs = append(bs, b)
		}
	}
	return bs
}

// TestConvNCHWcVecMatchesRef holds ConvNCHWc to convNCHWcRef bit for bit,
// with every epilogue and on 1 to 3 threads, with its workspace and
// without (no padded copy).
func TestConvNCHWcVecMatchesRef(t *testing.T) {
	if NCHWcBlock() == 0 {
		t.Skip("no vector kernels here")
	}
	checkConvNCHWcVec(t)
}

// checkConvNCHWcVec runs nchwcVecCases through ConvNCHWc and
// convNCHWcRef with every block this machine has vector kernels for and
// fails t where a bit differs.
func checkConvNCHWcVec(t *testing.T) {
	for _, b := range nchwcVecBlocks() {
		t.Run(fmt.Sprintf("block=%d", b), func(t *testing.T) { checkConvNCHWcVecBlock(t, b) })
	}
}

// checkConvNCHWcVecBlock is checkConvNCHWcVec for blocks of b.
func checkConvNCHWcVecBlock(t *testing.T, b int) {
	r := rand.New(rand.NewSource(2))
	for i, p := range nchwcVecCases {
		if p.O%b != 0 {
			continue
		}
		p.DH, p.DW, p.Groups = 1, 1, 1
		blockedIn := p.C%b == 0
		oh, ow := p.OutH(), p.OutW()
		x := randsF32(r, p.N*p.C*p.H*p.W)
		w := randsF32(r, p.O*p.C*p.KH*p.KW)
		packed := make([]float32, PackConvNCHWcLen(p))
		PackConvNCHWc(p, b, blockedIn, w, packed)
		for _, ep := range []Epilogue{
			{},
			{Bias32: randsF32(r, p.O)},
			{Bias32: randsF32(r, p.O), Act: ActSilu},
			{Act: ActRelu, Residual32: randsF32(r, p.N*p.O*oh*ow)},
		} {
			q := p
			q.Epilogue = ep
			name := fmt.Sprintf("%d/bias%v_res%v_act%d", i, ep.Bias32 != nil, ep.Residual32 != nil, ep.Act)
			t.Run(name, func(t *testing.T) {
				want := make([]float32, p.N*p.O*oh*ow)
				convNCHWcRef(q, b, blockedIn, x, packed, want)
				for threads := 1; threads <= 3; threads++ {
					for _, ws := range [][]float32{nil, randsF32(r, ConvNCHWcWorkspace(q, b, blockedIn, threads))} {
						out := randsF32(r, len(want))
						ConvNCHWc(q, b, blockedIn, x, packed, out, ws, threads)
						for j := range want {
							if math.Float32bits(out[j]) != math.Float32bits(want[j]) {
								t.Fatalf("threads %d, workspace %d: element %d: got %v, want %v", threads, len(ws), j, out[j], want[j])
							}
						}
					}
				}
			})
		}
	}
}

// TestConvNCHWcAllocs checks that repeated calls, serial and parallel,
// make no Go allocation, also after a call refused for short slices: on
// a batch in place and on a single small plane through its padded copy.
func TestConvNCHWcAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("under the race detector sync.Pool drops objects at random")
	}
	blocks := nchwcVecBlocks()
	if len(blocks) == 0 {
		blocks = []int{16} // the Go loops'
	}
	for _, b := range blocks {
		for _, p := range []Conv2DParams{
			{N: 2, C: 32, H: 20, W: 20, O: 64, KH: 3, KW: 3, SH: 1, SW: 1, PH: 1, PW: 1, DH: 1, DW: 1, Groups: 1},
			{N: 1, C: 32, H: 4, W: 4, O: 64, KH: 3, KW: 3, SH: 1, SW: 1, PH: 1, PW: 1, DH: 1, DW: 1, Groups: 1},
			{N: 1, C: 32, H: 10, W: 10, O: 192, KH: 3, KW: 3, SH: 1, SW: 1, PH: 1, PW: 1, DH: 1, DW: 1, Groups: 1},
			{N: 1, C: 32, H: 10, W: 10, O: 192, KH: 1, KW: 1, SH: 1, SW: 1, DH: 1, DW: 1, Groups: 1},
		} {
			checkConvNCHWcAllocs(t, p, b)
		}
	}
}

// checkConvNCHWcAllocs is TestConvNCHWcAllocs for p with blocks of b.
func checkConvNCHWcAllocs(t *testing.T, p Conv2DParams, b int) {
	r := rand.New(rand.NewSource(3))
	x := randsF32(r, p.N*p.C*p.H*p.W)
	packed := make([]float32, PackConvNCHWcLen(p))
	PackConvNCHWc(p, b, true, randsF32(r, p.O*p.C*p.KH*p.KW), packed)
	out := make([]float32, p.N*p.O*p.OutH()*p.OutW())
	p.Epilogue = Epilogue{Bias32: randsF32(r, p.O), Act: ActSilu, Residual32: randsF32(r, len(out))}
	ws := make([]float32, ConvNCHWcWorkspace(p, b, true, 2))
	if nchwcVecOK(b) {
		func() {
			defer func() {
				if recover() == nil {
					t.Error("a short output did not panic")
				}
			}()
			ConvNCHWc(p, b, true, x, packed, out[:len(out)-1], ws, 2)
		}()
	}
	for _, th := range []int{1, 2} {
		ConvNCHWc(p, b, true, x, packed, out, ws, th)
		if a := testing.AllocsPerRun(20, func() { ConvNCHWc(p, b, true, x, packed, out, ws, th) }); a > 0.5 {
			t.Errorf("block %d, N %d, threads %d: %.1f allocations per call, want 0", b, p.N, th, a)
		}
	}
}

// TestConvNCHWcPadSignedZero pins the one way the padded copy's sums may
// differ from the reference's: a -0 bias over zero inputs, where the
// padded taps' 0·w products can turn a -0 sum into +0. The values stay
// equal; every other bit is held by TestConvNCHWcVecMatchesRef.
func TestConvNCHWcPadSignedZero(t *testing.T) {
	b := NCHWcBlock()
	if b == 0 {
		t.Skip("no vector kernels here")
	}
	p := Conv2DParams{N: 1, C: 16, H: 2, W: 2, O: 16, KH: 3, KW: 3, SH: 1, SW: 1, PH: 1, PW: 1, DH: 1, DW: 1, Groups: 1}
	r := rand.New(rand.NewSource(4))
	packed := make([]float32, PackConvNCHWcLen(p))
	PackConvNCHWc(p, b, true, randsF32(r, p.O*p.C*p.KH*p.KW), packed)
	bias := make([]float32, p.O)
	for i := range bias {
		bias[i] = float32(math.Copysign(0, -1))
	}
	p.Epilogue.Bias32 = bias
	x := make([]float32, p.C*p.H*p.W)
	want, out := make([]float32, p.O*p.H*p.W), make([]float32, p.O*p.H*p.W)
	convNCHWcRef(p, b, true, x, packed, want)
	ConvNCHWc(p, b, true, x, packed, out, make([]float32, ConvNCHWcWorkspace(p, b, true, 1)), 1)
	for i := range want {
		if out[i] != want[i] || out[i] != 0 {
			t.Fatalf("element %d: got %v, want %v", i, out[i], want[i])
		}
	}
}
