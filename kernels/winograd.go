package kernels

// Winograd's minimal filtering F(2×2, 3×3) (Lavin and Gray, "Fast
// Algorithms for Convolutional Neural Networks", 2016): a 3×3 convolution
// with stride 1 computes each 2×2 tile of its output from the 4×4 patch
// of input under it with 16 products per input channel instead of 36:
//
//	Y = Aᵀ [ Σ_c (G g_c Gᵀ) ⊙ (Bᵀ d_c B) ] A
//
// g_c is the 3×3 filter of input channel c, d_c the 4×4 input patch
// (rows 2i−p … 2i−p+3 of a padded map for output tile i), ⊙ the
// elementwise product, and
//
//	Bᵀ = [1  0 −1  0]   G = [ 1    0    0 ]   Aᵀ = [1 1  1  0]
//	     [0  1  1  0]       [1/2  1/2  1/2]        [0 1 −1 −1]
//	     [0 −1  1  0]       [1/2 −1/2  1/2]
//	     [0  1  0 −1]       [ 0    0    1 ]
//
// The sum over channels is, for each of the 16 positions of the 4×4
// transformed tile, a matrix product: M[pos] (O × tiles) = U[pos] (O × C)
// · V[pos] (C × tiles), with U = G g Gᵀ made once per weight (at pack
// time) and V = Bᵀ d B per call. The products are exact multiples of
// halves, so the only new rounding is the transforms' additions and
// subtractions: the results are within float32 rounding of the direct
// sum, not its bits (the optimize pass "winograd" documents the bound its
// tests hold).
//
// The functions below are the definition, one tile at a time; the
// vector kernels compute the same sums in the same order.

// winogradFilter writes U = G g Gᵀ of one 3×3 filter g (row-major) into
// u (4×4, row-major).
func winogradFilter(g *[9]float32, u *[16]float32) {
	var t [12]float32 // G g: 4×3
	for j := range 3 {
		g0, g1, g2 := g[j], g[3+j], g[6+j]
		t[j] = g0
		t[3+j] = (g0 + g1 + g2) * 0.5
		t[6+j] = (g0 - g1 + g2) * 0.5
		t[9+j] = g2
	}
	for i := range 4 {
		r0, r1, r2 := t[3*i], t[3*i+1], t[3*i+2]
		u[4*i] = r0
		u[4*i+1] = (r0 + r1 + r2) * 0.5
		u[4*i+2] = (r0 - r1 + r2) * 0.5
		u[4*i+3] = r2
	}
}

// winogradInput writes V = Bᵀ d B of one 4×4 patch d into v (both
// row-major): the rows first, then the columns.
func winogradInput(d, v *[16]float32) {
	var t [16]float32 // Bᵀ d
	for j := range 4 {
		d0, d1, d2, d3 := d[j], d[4+j], d[8+j], d[12+j]
		t[j] = d0 - d2
		t[4+j] = d1 + d2
		t[8+j] = d2 - d1
		t[12+j] = d1 - d3
	}
	for i := range 4 {
		r := t[4*i : 4*i+4]
		v[4*i] = r[0] - r[2]
		v[4*i+1] = r[1] + r[2]
		v[4*i+2] = r[2] - r[1]
		v[4*i+3] = r[1] - r[3]
	}
}

// winogradOutput writes Y = Aᵀ m A of one 4×4 transformed tile m into y
// (2×2, row-major): the rows first, then the columns.
func winogradOutput(m *[16]float32, y *[4]float32) {
	var t [8]float32 // Aᵀ m: 2×4
	for j := range 4 {
		m0, m1, m2, m3 := m[j], m[4+j], m[8+j], m[12+j]
		t[j] = m0 + m1 + m2
		t[4+j] = m1 - m2 - m3
	}
	for i := range 2 {
		r := t[4*i : 4*i+4]
		y[2*i] = r[0] + r[1] + r[2]
		y[2*i+1] = r[1] - r[2] - r[3]
	}
}

// winogradConvRef is the whole convolution by the definition, for tests:
// x N×C×H×W, w O×C×3×3, stride 1, zero padding ph, pw on each side, out
// N×O×OH×OW; the sum over channels in order from 0, each tile's products
// summed in float32.
func winogradConvRef(x, w, out []float32, n, c, h, wd, o, ph, pw int) {
	oh, ow := h+2*ph-2, wd+2*pw-2
	us := make([][16]float32, o*c)
	for i := range us {
		var g [9]float32
		copy(g[:], w[9*i:9*i+9])
		winogradFilter(&g, &us[i])
	}
	var d, v [16]float32
	var y [4]float32
	vs := make([][16]float32, c)
	for s := range n {
		for ty := 0; ty < oh; ty += 2 {
			for tx := 0; tx < ow; tx += 2 {
				for ci := range c {
					plane := x[(s*c+ci)*h*wd:]
					for r := range 4 {
						for q := range 4 {
							iy, ix := ty+r-ph, tx+q-pw
							d[4*r+q] = 0
							if iy >= 0 && iy < h && ix >= 0 && ix < wd {
								d[4*r+q] = plane[iy*wd+ix]
							}
						}
					}
					winogradInput(&d, &v)
					vs[ci] = v
				}
				for oi := range o {
					var m [16]float32
					for ci := range c {
						u := &us[oi*c+ci]
						for k := range 16 {
							m[k] += u[k] * vs[ci][k]
						}
					}
					winogradOutput(&m, &y)
					for r := range 2 {
						for q := range 2 {
							if ty+r < oh && tx+q < ow {
								out[((s*o+oi)*oh+ty+r)*ow+tx+q] = y[2*r+q]
							}
						}
					}
				}
			}
		}
	}
}

// winogradShape reports whether p is a convolution F(2×2, 3×3) computes:
// a 3×3 filter, unit strides and dilations, one group.
func (p Conv2DParams) winogradShape() bool {
	return p.KH == 3 && p.KW == 3 && p.SH == 1 && p.SW == 1 && p.DH == 1 && p.DW == 1 && p.Groups == 1
}
