package kernels

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// ewRepeatShapes are broadcasts whose plan repeats one operand's short
// row (repeatedRow): the blocked layout's gate, odd row lengths, rows
// just under the tile's limit, the row on either side, and more repeats
// than one tile holds.
var ewRepeatShapes = [][2][]int{
	{{2, 3, 5, 7, 16}, {2, 3, 1, 1, 16}},
	{{2, 3, 1, 1, 16}, {2, 3, 5, 7, 16}},
	{{1, 4, 80, 16}, {1, 4, 1, 16}},
	{{3, 9, 5}, {3, 1, 5}},
	{{3, 1, 5}, {3, 9, 5}},
	{{2, 37, 255}, {2, 1, 255}},
	{{5, 2, 2}, {5, 1, 2}},
	{{4, 3, 6, 7}, {4, 3, 1, 7}},
	{{300, 3}, {3}},
}

// TestEwRepeatedRowSameBits holds the tiled loop to the broadcast's
// definition, element for element, for every operand order, ops whose
// order matters, several element types, and splits of the range that
// fall inside rows and blocks.
func TestEwRepeatedRowSameBits(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	for _, sh := range ewRepeatShapes {
		out, err := BroadcastShapes(sh[0], sh[1])
		if err != nil {
			t.Fatal(err)
		}
		var buf ewPlanBuf
		p := ewMakePlan(&buf, out, sh[0], sh[1])
		if _, ok := p.repeatedRow(); !ok {
			t.Fatalf("%v %v: no repeated row in plan %v", sh[0], sh[1], p.dims)
		}
		a, b := ewRandF64(r, ewNumel(sh[0])), ewRandF64(r, ewNumel(sh[1]))
		for _, op := range []BinaryOp{BinSub, BinDiv, BinPow} {
			for _, grain := range []int{1, 7, ewGrain} {
				for _, threads := range []int{1, 2, 5} {
					name := fmt.Sprintf("%v_%v_op%d_grain%d_threads%d", sh[0], sh[1], op, grain, threads)
					o := make([]float64, ewNumel(out))
					ewBroadcast(ewArithF64[op], threads, grain, o, out, a, sh[0], b, sh[1])
					o32 := make([]float32, len(o))
					a32, b32 := ewConv[float32](a), ewConv[float32](b)
					ewBroadcast(ewArithF32[op], threads, grain, o32, out, a32, sh[0], b32, sh[1])
					for i := range o {
						ia, ib := ewRefIndex(out, sh[0], i), ewRefIndex(out, sh[1], i)
						want, want32 := make([]float64, 1), make([]float32, 1)
						ewArithF64[op].vv(want, a[ia:ia+1], b[ib:ib+1])
						ewArithF32[op].vv(want32, a32[ia:ia+1], b32[ib:ib+1])
						if !sameBits(o[i], want[0]) || !sameBits(o32[i], want32[0]) {
							t.Fatalf("%s: out[%d] = %v, %v; want %v, %v", name, i, o[i], o32[i], want[0], want32[0])
						}
					}
				}
			}
		}
		ai, bi := ewConv[int32](a), ewConv[int32](b)
		lt := make([]bool, ewNumel(out))
		if err := Compare(CmpLT, 2, lt, out, ai, sh[0], bi, sh[1]); err != nil {
			t.Fatal(err)
		}
		for i := range lt {
			if want := ai[ewRefIndex(out, sh[0], i)] < bi[ewRefIndex(out, sh[1], i)]; lt[i] != want {
				t.Fatalf("%v < %v: out[%d] = %v, want %v", sh[0], sh[1], i, lt[i], want)
			}
		}
	}
}

// TestEwRepeatedRowNoAllocs checks that the gate allocates nothing on
// one thread or two: the tile comes from a pool.
func TestEwRepeatedRowNoAllocs(t *testing.T) {
	xs, gs := []int{1, 6, 20, 20, 16}, []int{1, 6, 1, 1, 16}
	x, g, out := make([]float32, ewNumel(xs)), make([]float32, ewNumel(gs)), make([]float32, ewNumel(xs))
	if raceEnabled {
		t.Skip("the race detector makes sync.Pool drop objects at random")
	}
	for _, threads := range []int{1, 2} {
		if n := testing.AllocsPerRun(50, func() {
			if err := Binary(BinMul, threads, out, xs, x, xs, g, gs); err != nil {
				t.Fatal(err)
			}
		}); n != 0 {
			t.Fatalf("threads %d: %v allocations per call", threads, n)
		}
	}
}
