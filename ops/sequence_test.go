package ops_test

import (
	"context"
	"strings"
	"testing"

	"github.com/gopir/gopir/exec"
	"github.com/gopir/gopir/ir"
	"github.com/gopir/gopir/memory"
	"github.com/gopir/gopir/tensor"
)

// seqProgram builds a sequence of three vectors of different lengths from
// x, edits it, and fetches what the sequence ops give: the i-th item, the
// length, the items joined and stacked.
const seqProgram = `{
  (%x) = "data" () {name:"x", shape:[-1], dtype:f32} : () -> tensor<?xf32>
  (%i) = "data" () {name:"i", shape:[], dtype:i64} : () -> tensor<i64>
  (%a) = "constant" () {value:tensor<2xf32>[1.0, 2.0]} : () -> tensor<2xf32>
  (%b) = "constant" () {value:tensor<1xf32>[3.0]} : () -> tensor<1xf32>
  (%s0) = "seq_construct" (%a, %b) : (tensor<2xf32>, tensor<1xf32>) -> stack<tensor<?xf32>>
  (%s1) = "seq_insert" (%s0, %x) : (stack<tensor<?xf32>>, tensor<?xf32>) -> stack<tensor<?xf32>>
  (%zero) = "constant" () {value:tensor<i64>[0]} : () -> tensor<i64>
  (%s2) = "seq_insert" (%s1, %b, %zero) : (stack<tensor<?xf32>>, tensor<1xf32>, tensor<i64>) -> stack<tensor<?xf32>>
  (%s3) = "seq_erase" (%s2, %i) : (stack<tensor<?xf32>>, tensor<i64>) -> stack<tensor<?xf32>>
  (%at) = "seq_at" (%s2, %i) : (stack<tensor<?xf32>>, tensor<i64>) -> tensor<?xf32>
  (%n) = "seq_length" (%s3) : (stack<tensor<?xf32>>) -> tensor<i64>
  (%cat) = "concat_from_seq" (%s3) {axis:0, new_axis:false} : (stack<tensor<?xf32>>) -> tensor<?xf32>
  (%one) = "seq_construct" (%b, %b) : (tensor<1xf32>, tensor<1xf32>) -> stack<tensor<1xf32>>
  (%st) = "concat_from_seq" (%one) {axis:-1, new_axis:true} : (stack<tensor<1xf32>>) -> tensor<1x?xf32>
  () = "fetch" (%at) {name:"at"} : (tensor<?xf32>) -> ()
  () = "fetch" (%n) {name:"n"} : (tensor<i64>) -> ()
  () = "fetch" (%cat) {name:"cat"} : (tensor<?xf32>) -> ()
  () = "fetch" (%st) {name:"st"} : (tensor<1x?xf32>) -> ()
  () = "fetch" (%s0) {name:"s0"} : (stack<tensor<?xf32>>) -> ()
}`

// The sequence ops give numpy's answers for every position, leave the
// sequences they copy unchanged, refuse positions out of range, and free
// everything, on success and on error, run after run.
func TestSequenceOps(t *testing.T) {
	p, err := ir.Parse("seq.pir", []byte(seqProgram))
	if err != nil {
		t.Fatal(err)
	}
	a := memory.New(memory.Options{})
	x, err := exec.Compile(p, exec.Options{Alloc: a, CheckLeaks: true})
	if err != nil {
		t.Fatal(err)
	}
	host := memory.New(memory.Options{})
	xs, _ := tensor.FromF32(host, []float32{7, 8, 9}, 3)
	defer xs.Release()
	// s2 is [b, a, b, x] = [[3], [1 2], [3], [7 8 9]].
	items := [][]float32{{3}, {1, 2}, {3}, {7, 8, 9}}
	for rep := range 50 {
		for pos := int64(-6); pos < 6; pos++ {
			i, _ := tensor.FromI64(host, []int64{pos}, []int{}...)
			res, err := x.Run(context.Background(), map[string]*tensor.Tensor{"x": xs, "i": i})
			i.Release()
			k := pos
			if k < 0 {
				k += 4
			}
			if k < 0 || k >= 4 {
				if err == nil || !strings.Contains(err.Error(), "out of range for a sequence of 4 items") {
					t.Fatalf("position %d: err %v, want out of range", pos, err)
				}
				if got := a.Stats().Allocated.Current; got != 0 {
					t.Fatalf("position %d: %d bytes left after the error", pos, got)
				}
				continue
			}
			if err != nil {
				t.Fatalf("position %d: %v", pos, err)
			}
			if got, want := res["at"].F32(), items[k]; !equalF32(got, want) {
				t.Fatalf("position %d: seq_at %v, want %v", pos, got, want)
			}
			var cat []float32
			for j, it := range items {
				if j != int(k) {
					cat = append(cat, it...)
				}
			}
			if got := res["cat"].F32(); res["n"].I64()[0] != 3 || !equalF32(got, cat) {
				t.Fatalf("position %d: erased length %d, joined %v; want 3, %v", pos, res["n"].I64()[0], got, cat)
			}
			if st := res["st"]; st.Shape()[0] != 1 || st.Shape()[1] != 2 {
				t.Fatalf("stacked along a new last axis: %s, want 1x2", st.Type())
			}
			if s0 := res["s0"]; s0.StackLen() != 2 {
				t.Fatalf("the inserts changed the sequence they were given: %d items", s0.StackLen())
			}
			res.Release()
			if got := a.Stats().Allocated.Current; got != 0 {
				t.Fatalf("run %d: %d bytes left", rep, got)
			}
		}
	}
}

func equalF32(a, b []float32) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
