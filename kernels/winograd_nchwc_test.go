package kernels

import (
	"fmt"
	"math"
	"math/rand"
	"testing"
)

// winocCases are 3×3 stride-1 convolutions on blocked maps: odd and even
// sizes (the last tile's clipped row and column), padding 0 and 1,
// batches, channels over several GEMM depth slices and column panels.
var winocCases = []Conv2DParams{
	{N: 1, C: 16, H: 4, W: 4, O: 16, PH: 0, PW: 0},
	{N: 1, C: 32, H: 10, W: 10, O: 48, PH: 1, PW: 1},
	{N: 2, C: 16, H: 7, W: 9, O: 32, PH: 1, PW: 1},
	{N: 3, C: 48, H: 5, W: 6, O: 16, PH: 0, PW: 1},
	{N: 1, C: 64, H: 2, W: 2, O: 64, PH: 1, PW: 1},
	{N: 2, C: 32, H: 33, W: 17, O: 64, PH: 1, PW: 1},
	{N: 1, C: 16, H: 3, W: 3, O: 16, PH: 2, PW: 2},
	{N: 1, C: 528, H: 4, W: 5, O: 32, PH: 1, PW: 1},
	{N: 2, C: 64, H: 40, W: 39, O: 64, PH: 1, PW: 1}, // 20 chunks: whole chunks per thread
	{N: 1, C: 64, H: 4, W: 4, O: 128, PH: 1, PW: 1},  // 4 tiles: output channels in ranges
	{N: 1, C: 32, H: 8, W: 8, O: 96, PH: 1, PW: 1},   // 16 tiles, a short last range
}

// TestWinocGeomRanges: where a convolution's tiles are too few for the
// threads (under two GEMM row groups a thread), its chunks' output
// channels go in ranges of whole panels that cover them once, and the
// cases above reach that cut (so TestConvNCHWcWinograd's same bits on 1
// to 3 threads cover it). The cut depends on the GEMM kernel's tile
// (its row groups, its panels' width): the cases reach it with the
// AVX-512 kernel's; with another (AVX2, purego) only the ranges' cover is
// checked.
func TestWinocGeomRanges(t *testing.T) {
	reach := activeKernel[float32]().name == "avx512"
	for _, p := range winocCases[len(winocCases)-2:] {
		p = winocParams(p)
		for _, threads := range []int{2, 3} {
			g := newWinocGeom(p, 16, threads)
			if reach && (g.osplit < 2 || g.parts < 2) {
				t.Errorf("%d→%d on %d×%d, %d threads: %d ranges on %d parts, want the channels cut", p.C, p.O, p.H, p.W, threads, g.osplit, g.parts)
			}
			next := 0
			for r := range g.osplit {
				o0, o1 := g.outRange(r)
				if o0 != next || o1 <= o0 || o0%g.ounit != 0 || o1%16 != 0 {
					t.Errorf("%d→%d, %d threads: range %d is [%d, %d) after %d", p.C, p.O, threads, r, o0, o1, next)
				}
				next = o1
			}
			if next != p.O {
				t.Errorf("%d→%d, %d threads: the ranges end at %d", p.C, p.O, threads, next)
			}
		}
		if g := newWinocGeom(p, 16, 1); g.osplit != 1 || g.parts != 1 {
			t.Errorf("%d→%d on one thread: %d ranges on %d parts", p.C, p.O, g.osplit, g.parts)
		}
	}
}

func winocParams(p Conv2DParams) Conv2DParams {
	p.KH, p.KW, p.SH, p.SW, p.DH, p.DW, p.Groups, p.Winograd = 3, 3, 1, 1, 1, 1, 1, true
	return p
}

// winocDirect is the convolution of NCHW x by w in float64 with the
// epilogue, and each output's sum of its terms' magnitudes.
func winocDirect(p Conv2DParams, x, w []float32) (sum, mag []float64) {
	oh, ow := p.OutH(), p.OutW()
	sum, mag = make([]float64, p.N*p.O*oh*ow), make([]float64, p.N*p.O*oh*ow)
	for n := range p.N {
		for o := range p.O {
			for y := range oh {
				for xo := range ow {
					var s, m float64
					if p.Epilogue.Bias32 != nil {
						s = float64(p.Epilogue.Bias32[o])
						m = math.Abs(s)
					}
					for c := range p.C {
						for r := range 3 {
							for q := range 3 {
								iy, ix := y+r-p.PH, xo+q-p.PW
								if iy < 0 || iy >= p.H || ix < 0 || ix >= p.W {
									continue
								}
								t := float64(x[((n*p.C+c)*p.H+iy)*p.W+ix]) * float64(w[(o*p.C+c)*9+3*r+q])
								s += t
								m += math.Abs(t)
							}
						}
					}
					i := ((n*p.O+o)*oh+y)*ow + xo
					sum[i], mag[i] = s, m
				}
			}
		}
	}
	return sum, mag
}

// TestConvNCHWcWinograd holds ConvNCHWc with p.Winograd to the direct sum
// in float64 (within 1e-6 of its terms' magnitudes, before the
// activation, which moves no value by more than its slope) and to the
// definition winogradConvRef, with every epilogue, both blocks, and 1 to
// 3 threads giving the same bits.
func TestConvNCHWcWinograd(t *testing.T) {
	r := rand.New(rand.NewSource(7))
	for i, p := range winocCases {
		p = winocParams(p)
		if raceEnabled && p.N*p.C*p.O*p.H*p.W > 1<<22 {
			continue // the float64 reference takes minutes under the race detector
		}
		for _, b := range nchwcBlocks {
			if p.C%b != 0 || p.O%b != 0 {
				continue
			}
			oh, ow := p.OutH(), p.OutW()
			x := randsF32(r, p.N*p.C*p.H*p.W)
			w := randsF32(r, p.O*p.C*9)
			xb := toNCHWc(x, p.N, p.C, p.H*p.W, b)
			packed := make([]float32, PackConvNCHWcLen(p))
			PackConvNCHWc(p, b, true, w, packed)
			def := make([]float32, p.N*p.O*oh*ow)
			winogradConvRef(x, w, def, p.N, p.C, p.H, p.W, p.O, p.PH, p.PW)
			for _, ep := range []Epilogue{
				{},
				{Bias32: randsF32(r, p.O)},
				{Bias32: randsF32(r, p.O), Act: ActSilu},
				{Act: ActRelu, Residual32: randsF32(r, p.N*p.O*oh*ow)},
			} {
				q := p
				q.Epilogue = ep
				name := fmt.Sprintf("%d/%dx%dx%dx%d->%d_p%d%d/b%d/bias%v_res%v_act%d", i, p.N, p.C, p.H, p.W, p.O, p.PH, p.PW, b, ep.Bias32 != nil, ep.Residual32 != nil, ep.Act)
				t.Run(name, func(t *testing.T) {
					var res []float32
					if ep.Residual32 != nil {
						res = fromNCHWc(ep.Residual32, p.N, p.O, oh*ow, b)
						q.Epilogue.Residual32 = ep.Residual32
					}
					sum, mag := winocDirect(q, x, w)
					var first []float32
					for threads := 1; threads <= 3; threads++ {
						out := randsF32(r, len(def))
						ConvNCHWc(q, b, true, xb, packed, out, make([]float32, ConvNCHWcWorkspace(q, b, true, threads)), threads)
						if first == nil {
							first = out
						} else {
							for j := range out {
								if math.Float32bits(out[j]) != math.Float32bits(first[j]) {
									t.Fatalf("threads %d: element %d: %v, on one thread %v", threads, j, out[j], first[j])
								}
							}
							continue
						}
						got := fromNCHWc(out, p.N, p.O, oh*ow, b)
						for j, g := range got {
							want, tol := sum[j], 1e-6*mag[j]
							d := float64(def[j])
							if res != nil {
								want += float64(res[j])
								d += float64(res[j])
								tol += 1e-7 * math.Abs(float64(res[j]))
							}
							if ep.Bias32 != nil {
								d += float64(ep.Bias32[j/(oh*ow)%p.O])
							}
							want, d = winocAct(ep.Act, want), winocAct(ep.Act, d)
							tol = 1.1*tol + 1e-7*math.Abs(want) + 1e-30
							if e := math.Abs(float64(g) - want); e > tol {
								t.Fatalf("element %d: got %v, direct sum %v (magnitudes %v)", j, g, want, mag[j])
							}
							if e := math.Abs(float64(g) - d); e > 2*tol {
								t.Fatalf("element %d: got %v, winogradConvRef %v (magnitudes %v)", j, g, d, mag[j])
							}
						}
					}
				})
			}
		}
	}
}

// winocAct is the activation in float64, for the tests' references.
func winocAct(a Activation, v float64) float64 {
	switch a {
	case ActRelu:
		return max(v, 0)
	case ActSilu:
		return v / (1 + math.Exp(-v))
	}
	return v
}

// TestWinocPackMatchesPackGemmB holds the Winograd form's 16 matrices to
// PackGemmB of U = G g Gᵀ written out plainly, bit for bit, header
// included: packConvNCHWcWinograd writes the GEMM's panels itself.
func TestWinocPackMatchesPackGemmB(t *testing.T) {
	r := rand.New(rand.NewSource(8))
	for _, p := range []Conv2DParams{
		{C: 16, O: 16}, {C: 48, O: 80}, {C: 640, O: 48}, {C: 1040, O: 16},
	} {
		p = winocParams(p)
		w := randsF32(r, p.O*p.C*9)
		packed := make([]float32, PackConvNCHWcLen(p))
		PackConvNCHWc(p, 16, true, w, packed)
		if !ConvNCHWcWinogradPacked(p, 16, packed) {
			t.Fatalf("%d→%d: the packed copy is not recognised", p.C, p.O)
		}
		ml := winocMatLen(p)
		u := make([]float32, 16*p.C*p.O)
		var g [9]float32
		var uf [16]float32
		for o := range p.O {
			for c := range p.C {
				copy(g[:], w[(o*p.C+c)*9:])
				winogradFilter(&g, &uf)
				for pos := range 16 {
					u[pos*p.C*p.O+c*p.O+o] = uf[pos]
				}
			}
		}
		want := make([]float32, ml)
		for pos := range 16 {
			PackGemmB(want, false, p.C, p.O, u[pos*p.C*p.O:], p.O)
			got := packed[winocHeader+pos*ml:][:ml]
			for i := range want {
				if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
					t.Fatalf("%d→%d, position %d: element %d: %v, PackGemmB %v", p.C, p.O, pos, i, got[i], want[i])
				}
			}
		}
		for _, q := range []Conv2DParams{{C: p.C + 16, O: p.O}, {C: p.C, O: p.O + 16}} {
			if ConvNCHWcWinogradPacked(winocParams(q), 16, packed) {
				t.Errorf("%d→%d's copy taken for %d→%d", p.C, p.O, q.C, q.O)
			}
		}
		if ConvNCHWcWinogradPacked(p, 8, packed) {
			t.Errorf("%d→%d: a copy for blocks of 16 taken for blocks of 8", p.C, p.O)
		}
	}
}

// TestWinocTransformsMatchGo holds the vector transforms to their Go
// loops bit for bit, several blocks at a time, with and without bias.
func TestWinocTransformsMatchGo(t *testing.T) {
	r := rand.New(rand.NewSource(9))
	for _, b := range nchwcBlocks {
		const blocks, ld, bstride, vld = 3, 40 * 16, 7 * 40 * 16, 5 * 16 * 3
		x := randsF32(r, blocks*bstride)
		v1, v2 := make([]float32, 16*vld), make([]float32, 16*vld)
		winocInput(b, x[17*b:], ld, bstride, blocks, v1, vld)
		winocInputGo(b, x[17*b:], ld, bstride, blocks, v2, vld)
		for i := range v1 {
			if math.Float32bits(v1[i]) != math.Float32bits(v2[i]) {
				t.Fatalf("block %d: input transform element %d: %v, Go %v", b, i, v1[i], v2[i])
			}
		}
		for _, bias := range [][]float32{nil, randsF32(r, blocks*b)} {
			y1, y2 := make([]float32, blocks*bstride), make([]float32, blocks*bstride)
			winocOutput(b, v1, vld, blocks, y1[3*b:], ld, bstride, bias)
			winocOutputGo(b, v1, vld, blocks, y2[3*b:], ld, bstride, bias)
			for i := range y1 {
				if math.Float32bits(y1[i]) != math.Float32bits(y2[i]) {
					t.Fatalf("block %d, bias %v: output transform element %d: %v, Go %v", b, bias != nil, i, y1[i], y2[i])
				}
			}
		}
	}
}

// TestConvNCHWcWinogradAllocs checks that repeated calls, serial and
// parallel, make no Go allocation, and that the entry refuses what it
// cannot run: a copy packed without Winograd, a short workspace.
func TestConvNCHWcWinogradAllocs(t *testing.T) {
	for _, b := range nchwcBlocks {
		p := winocParams(Conv2DParams{N: 2, C: 32, H: 20, W: 19, O: 64, PH: 1, PW: 1})
		r := rand.New(rand.NewSource(10))
		x := randsF32(r, p.N*p.C*p.H*p.W)
		w := randsF32(r, p.O*p.C*9)
		packed := make([]float32, PackConvNCHWcLen(p))
		PackConvNCHWc(p, b, true, w, packed)
		out := make([]float32, p.N*p.O*p.OutH()*p.OutW())
		p.Epilogue = Epilogue{Bias32: randsF32(r, p.O), Act: ActSilu, Residual32: randsF32(r, len(out))}
		ws := make([]float32, ConvNCHWcWorkspace(p, b, true, 2))
		direct := p
		direct.Winograd = false
		plain := make([]float32, PackConvNCHWcLen(direct))
		PackConvNCHWc(direct, b, true, w, plain)
		for _, bad := range []struct {
			name       string
			packed, ws []float32
		}{{"direct weights", plain, ws}, {"short workspace", packed, ws[:len(ws)-1]}} {
			func() {
				defer func() {
					if recover() == nil {
						t.Errorf("block %d: %s did not panic", b, bad.name)
					}
				}()
				ConvNCHWc(p, b, true, x, bad.packed, out, bad.ws, 2)
			}()
		}
		if raceEnabled {
			continue // under the race detector sync.Pool drops objects at random
		}
		for _, th := range []int{1, 2} {
			ConvNCHWc(p, b, true, x, packed, out, ws, th)
			if a := testing.AllocsPerRun(20, func() { ConvNCHWc(p, b, true, x, packed, out, ws, th) }); a > 0.5 {
				t.Errorf("block %d, threads %d: %.1f allocations per call, want 0", b, th, a)
			}
		}
	}
}

// TestConvNCHWcWinogradEmpty runs the empty shapes: no samples, no
// output channels, a map too small for any output.
func TestConvNCHWcWinogradEmpty(t *testing.T) {
	for _, p := range []Conv2DParams{
		{N: 0, C: 16, H: 4, W: 4, O: 16, PH: 1, PW: 1},
		{N: 1, C: 16, H: 4, W: 4, O: 0, PH: 1, PW: 1},
		{N: 2, C: 16, H: 2, W: 5, O: 16},
	} {
		p = winocParams(p)
		packed := make([]float32, PackConvNCHWcLen(p))
		PackConvNCHWc(p, 16, true, make([]float32, p.O*p.C*9), packed)
		out := make([]float32, p.N*p.O*p.OutH()*p.OutW())
		ConvNCHWc(p, 16, true, make([]float32, p.N*p.C*p.H*p.W), packed, out, make([]float32, ConvNCHWcWorkspace(p, 16, true, 2)), 2)
	}
	if err := ConvNCHWcCheck(winocParams(Conv2DParams{N: 1, H: 4, W: 4, O: 16}), 16, true); err == nil {
		t.Error("winograd with no input channels accepted")
	}
}

// TestConvNCHWcCheckWinograd covers the convolutions Winograd refuses.
func TestConvNCHWcCheckWinograd(t *testing.T) {
	ok := winocParams(Conv2DParams{N: 1, C: 32, H: 8, W: 8, O: 32, PH: 1, PW: 1})
	if err := ConvNCHWcCheck(ok, 16, true); err != nil {
		t.Fatalf("a 3×3 stride-1 blocked convolution refused: %v", err)
	}
	for name, f := range map[string]func(p *Conv2DParams) (bool, int){
		"nchw input": func(p *Conv2DParams) (bool, int) { return false, 16 },
		"5x5":        func(p *Conv2DParams) (bool, int) { p.KH, p.KW = 5, 5; return true, 16 },
		"stride 2":   func(p *Conv2DParams) (bool, int) { p.SH, p.SW = 2, 2; return true, 16 },
		"c not 16s":  func(p *Conv2DParams) (bool, int) { p.C = 40; return true, 8 + 8*0 },
	} {
		p := ok
		blockedIn, b := f(&p)
		if name == "c not 16s" {
			if err := winocOK(p, 16, true); err == nil {
				t.Errorf("%s: accepted", name)
			}
			continue
		}
		if err := ConvNCHWcCheck(p, b, blockedIn); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}
