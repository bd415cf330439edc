//go:build !purego

package kernels

//go:generate sh -c "cd internal/avo && go run ./perfgen -out ../../perf_amd64.s -stubs ../../perf_stub_amd64.go -table ../../perf_table_amd64.go -pkg kernels"

// hasPerfAVX512 gates the loops of perf_amd64.s, which use AVX-512F with
// the DQ (VEXTRACTI32X8) and VL (EVEX on 128/256-bit registers)
// extensions, which every AVX-512 x86 core since Skylake-SP has.
var hasPerfAVX512 = hasAVX512F && func() bool {
	_, ebx7, _, _ := cpuid(7, 0)
	const dq, vl = 1 << 17, 1 << 31
	return ebx7&dq != 0 && ebx7&vl != 0
}()

// adamF32Vec runs the AVX-512 Adam loop on the longest prefix of p whose
// length is a multiple of 8 and returns its length (0 without AVX-512).
func adamF32Vec(p, g, m, v []float32, c *[8]float64) int {
	n := len(p) &^ 7
	if !hasPerfAVX512 || n == 0 {
		return 0
	}
	_, _, _ = g[n-1], m[n-1], v[n-1]
	adamF32AVX512(&p[0], &g[0], &m[0], &v[0], n, c)
	return n
}

// reluGradF32Vec runs the AVX-512 ReLU-gradient loop on the longest prefix
// whose length is a multiple of 16 and returns its length (0 without
// AVX-512).
func reluGradF32Vec(out, y, dy []float32) int {
	n := len(out) &^ 15
	if !hasPerfAVX512 || n == 0 {
		return 0
	}
	_, _ = y[n-1], dy[n-1]
	reluGradF32AVX512(&out[0], &y[0], &dy[0], n)
	return n
}

// block2DF32Vec copies (or, with add, adds) the block with the AVX-512
// loop and reports whether it did; bounds are checked by the caller.
func block2DF32Vec(add bool, dst []float32, dstStride int, src []float32, srcStride, rows, cols int) bool {
	if !hasPerfAVX512 {
		return false
	}
	if add {
		add2DF32AVX512(&dst[0], &src[0], dstStride, srcStride, rows, cols)
	} else {
		copy2DF32AVX512(&dst[0], &src[0], dstStride, srcStride, rows, cols)
	}
	return true
}

// maxPool2x2F32Vec runs maxPool2x2Plane with the AVX-512 loop and reports
// whether it did. The loop reads up to 32 columns past each row start
// under a mask, which never touches memory outside the masked lanes.
func maxPool2x2F32Vec(w, oh, ow int, xp, op []float32, ip []int64) bool {
	if !hasPerfAVX512 || oh == 0 || ow == 0 {
		return false
	}
	_, _, _ = xp[(2*oh-1)*w+2*ow-1], op[oh*ow-1], ip[oh*ow-1]
	maxPool2x2F32AVX512(&xp[0], &op[0], &ip[0], w, oh, ow)
	return true
}

// col2imGatherF32Vec runs col2imGatherF32AVX512 after checking that every
// lane it touches lies in dst and src: lo and hi bound the src elements
// the table reaches from a row's start, width is the dst row length.
func col2imGatherF32Vec(dst, src []float32, tab []int64, dstStride, srcStride, rows, chunks, kw, width, lo, hi int) {
	if rows <= 0 || chunks <= 0 {
		return
	}
	if lo < 0 || (rows-1)*srcStride+hi > len(src) || (rows-1)*dstStride+width > len(dst) || len(tab) < chunks*(1+2*kw) {
		panic("kernels: col2im gather out of range")
	}
	col2imGatherF32AVX512(&dst[0], &src[0], &tab[0], dstStride, srcStride, rows, chunks, kw)
}

func col2imGatherOK() bool { return hasPerfAVX512 }

// reluF32Vec runs the AVX-512 ReLU on the longest prefix whose length is a
// multiple of 16 and returns its length (0 without AVX-512).
func reluF32Vec(out, x []float32) int {
	n := len(out) &^ 15
	if !hasPerfAVX512 || n == 0 {
		return 0
	}
	_ = x[n-1]
	reluF32AVX512(&out[0], &x[0], n)
	return n
}

// convRowOK reports whether the direct convolution kernels can run.
func convRowOK() bool { return hasPerfAVX512 }

// convRowsMax is how many rows one call of the kernel for ob channels
// computes at most.
func convRowsMax(ob int) int { return len(convRowsF32Kernels[ob-1]) }

// convRows runs convRowsF32_<ob>x<rows> after checking that its loads stay
// within in ([minOff, maxOff] bounds offs) and its stores within out.
func convRows(ob, rows int, in []float32, at, rs int, offs []int64, minOff, maxOff int, w []float32, out []float32, ostride, ors, lanes int) {
	if at+minOff < 0 || at+(rows-1)*rs+maxOff+16 > len(in) || len(offs) == 0 || len(w) < len(offs)*ob ||
		(rows-1)*ors+(ob-1)*ostride+lanes > len(out) || lanes <= 0 || lanes > 16 {
		panic("kernels: direct convolution rows out of range")
	}
	convRowsF32Kernels[ob-1][rows-1](&in[0], at, &offs[0], &w[0], len(offs), &out[0], ostride, 1<<lanes-1, rs, ors)
}

// convRowsEpi runs convRowsEpiF32_<ob>x<rows>: reps×rows output rows
// (rows at a time, down the map) of convRows, with add the values already
// in out added (a later slice of the depth, as the GEMM adds it onto C),
// then the bias (when not nil, and with relu ReLU) applied before the
// stores, after checking its loads and stores.
func convRowsEpi(ob, rows, reps int, in []float32, at, rs int, offs []int64, minOff, maxOff int, w []float32, out []float32, ostride, ors, lanes int, bias []float32, relu, add bool) {
	all := reps * rows
	if reps <= 0 || at+minOff < 0 || at+(all-1)*rs+maxOff+16 > len(in) || len(offs) == 0 || len(w) < len(offs)*ob ||
		(all-1)*ors+(ob-1)*ostride+lanes > len(out) || lanes <= 0 || lanes > 16 || (bias != nil && len(bias) < ob) || (relu && bias == nil) {
		panic("kernels: direct convolution rows out of range")
	}
	flags := 0
	var b *float32
	if bias != nil {
		flags, b = convRowsBias, &bias[0]
	}
	if relu {
		flags |= convRowsRelu
	}
	if add {
		flags |= convRowsAdd
	}
	convRowsEpiF32Kernels[ob-1][rows-1](&in[0], at, &offs[0], &w[0], len(offs), &out[0], ostride, 1<<lanes-1, rs, ors, b, flags, reps)
}

// convRowsEpiPool runs convRowsEpiF32_<ob>x<rows> (rows even) with its
// 2×2 max pool (convRowsPool): reps×rows output rows of 16 whole lanes,
// their bias and, with relu, ReLU applied, stored pooled, reps×rows/2
// rows of 8 per channel at out (ostride and ors the pooled planes' and
// rows' strides), after checking its loads and stores.
func convRowsEpiPool(ob, rows, reps int, in []float32, at, rs int, offs []int64, minOff, maxOff int, w []float32, out []float32, ostride, ors int, bias []float32, relu bool) {
	all := reps * rows
	if reps <= 0 || rows%2 != 0 || at+minOff < 0 || at+(all-1)*rs+maxOff+16 > len(in) || len(offs) == 0 || len(w) < len(offs)*ob ||
		(all/2-1)*ors+(ob-1)*ostride+8 > len(out) || len(bias) < ob {
		panic("kernels: pooled direct convolution rows out of range")
	}
	flags := convRowsBias | convRowsPool
	if relu {
		flags |= convRowsRelu
	}
	convRowsEpiF32Kernels[ob-1][rows-1](&in[0], at, &offs[0], &w[0], len(offs), &out[0], ostride, 1<<16-1, rs, ors, &bias[0], flags, reps)
}

// convFilterMaxOB is the most output channels one filter-gradient call
// handles for kernel width kw (0 when there is no kernel).
func convFilterMaxOB(kw int) int {
	if kw < 1 || kw > len(convFilterF32Kernels) {
		return 0
	}
	return len(convFilterF32Kernels[kw-1])
}

// convFilter runs convFilterF32_<ob>x<kw> after checking that its reads
// stay within dy (maxDY bounds each entry's offset plus its lanes) and x
// (maxX bounds the offsets; x is read 16 lanes at a time) and its stores
// within out.
func convFilter(ob, kw int, dy, x []float32, tab []int64, maxDY, maxX int, out []float32, ostride, dystride, dw int) {
	nt := len(tab) / 3
	if nt == 0 || maxDY+(ob-1)*dystride > len(dy) || maxX+(kw-1)*dw+16 > len(x) || (ob-1)*ostride+kw > len(out) {
		panic("kernels: direct filter gradient out of range")
	}
	convFilterF32Kernels[kw-1][ob-1](&dy[0], &x[0], &tab[0], nt, &out[0], ostride, dystride, dw)
}

// maxPool2x2GradF32Vec runs maxPool2x2GradPlane with the AVX-512 loop and
// reports whether it did. It writes the first 2·ow columns of the first
// 2·oh rows of dxp; the rest must already be 0.
func maxPool2x2GradF32Vec(w, oh, ow int, xp, dyp, dxp []float32) bool {
	if !hasPerfAVX512 || oh == 0 || ow == 0 {
		return false
	}
	_, _, _ = xp[(2*oh-1)*w+2*ow-1], dxp[(2*oh-1)*w+2*ow-1], dyp[oh*ow-1]
	maxPool2x2GradF32AVX512(&xp[0], &dyp[0], &dxp[0], w, oh, ow)
	return true
}
