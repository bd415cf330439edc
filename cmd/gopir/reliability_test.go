package main

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// npyFile writes a .npy file whose header says descr and shape and which
// holds dataBytes bytes of data, whatever the header claims.
func npyFile(t *testing.T, descr, shape string, dataBytes int) string {
	t.Helper()
	dict := fmt.Sprintf("{'descr': '%s', 'fortran_order': False, 'shape': %s, }", descr, shape)
	for (10+len(dict)+1)%64 != 0 {
		dict += " "
	}
	dict += "\n"
	var b bytes.Buffer
	b.WriteString("\x93NUMPY\x01\x00")
	binary.Write(&b, binary.LittleEndian, uint16(len(dict)))
	b.WriteString(dict)
	b.Write(make([]byte, dataBytes))
	path := filepath.Join(t.TempDir(), "f.npy")
	if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// Every feed path — a static data op, a dynamic one and a parameter, by
// JSON and by .npy — refuses a value that does not fit with exit 2 and one
// line, before allocating what a lying header claims, with or without a
// memory limit.
func TestFeedSweepRefusesLies(t *testing.T) {
	good := map[string]string{"x": "x=[[1,2,3],[4,5,6]]", "y": "y=[[1,2,3]]", "w": "w=[[1,2,3],[4,5,6]]"}
	type lie struct {
		name  string
		value func(t *testing.T) string // the VALUE of --feed NAME=VALUE
		want  string                    // in the error line
	}
	npy := func(descr, shape string, n int) func(*testing.T) string {
		return func(t *testing.T) string { return "@" + npyFile(t, descr, shape, n) }
	}
	json := func(s string) func(*testing.T) string { return func(*testing.T) string { return s } }
	lies := []lie{
		{"huge header, 24 bytes", npy("<f4", "(200000, 200000)", 24), "got tensor<200000x200000xf32>"},
		{"right shape, short data", npy("<f4", "(2, 3)", 20), "truncated data"},
		{"wrong dtype", npy("<f8", "(2, 3)", 48), "got tensor<2x3xf64>"},
		{"wrong rank", npy("<f4", "(6,)", 24), "got tensor<6xf32>"},
		{"overflowing shape", npy("<f4", "(4611686018427387904, 4611686018427387904)", 0), "too many elements"},
		{"overflow behind a zero", npy("<f4", "(0, 4611686018427387904, 4611686018427387904)", 0), "too many elements"},
		{"negative dim", npy("<f4", "(-1, 3)", 0), "npy:"},
		{"not npy", func(t *testing.T) string {
			p := filepath.Join(t.TempDir(), "f.npy")
			os.WriteFile(p, []byte("hello"), 0o644)
			return "@" + p
		}, "npy:"},
		{"JSON wrong shape", json("[[1,2],[3,4]]"), "got tensor<2x2xf32>"},
		{"JSON wrong rank", json("[1,2,3]"), "got tensor<3xf32>"},
		{"JSON scalar", json("1"), "got tensor<f32>"},
		{"JSON bool", json("[[true,false,true]]"), "got a bool"},
	}
	for _, input := range []string{"x", "y", "w"} {
		for _, l := range lies {
			for _, limit := range []string{"", "1MiB"} {
				t.Run(fmt.Sprintf("%s/%s/limit=%q", input, l.name, limit), func(t *testing.T) {
					args := []string{"run", "testdata/feeds.pir"}
					if limit != "" {
						args = append(args, "--mem-limit", limit)
					}
					for n, f := range good {
						if n != input {
							args = append(args, "--feed", f)
						}
					}
					args = append(args, "--feed", input+"="+l.value(t))
					r := gopir(args...)
					if r.code != 2 {
						t.Fatalf("exit %d, want 2; stderr %q", r.code, r.stderr)
					}
					if strings.Count(r.stderr, "\n") != 1 || !strings.HasPrefix(r.stderr, "--feed "+input+": ") || !strings.Contains(r.stderr, l.want) {
						t.Fatalf("stderr %q: want one line starting with --feed %s: and containing %q", r.stderr, input, l.want)
					}
				})
			}
		}
	}
}

// A header that fits a dynamic input but lies about its size fails on the
// size, not by allocating it.
func TestFeedDynamicHeaderLargerThanFile(t *testing.T) {
	path := npyFile(t, "<f4", "(100000000000, 3)", 24)
	r := gopir("run", "testdata/feeds.pir", "--feed", "x=[[1,2,3],[4,5,6]]", "--feed", "w=[[1,2,3],[4,5,6]]", "--feed", "y=@"+path)
	if r.code != 2 || !strings.Contains(r.stderr, "truncated data: tensor<100000000000x3xf32> needs 1200000000000 bytes, got 24") {
		t.Fatalf("exit %d, stderr %q", r.code, r.stderr)
	}
}

func TestMemLimitValues(t *testing.T) {
	for _, v := range []string{"0", "-0", "0.5", "1e-9", "0b", "0KiB", "-1", "-1MiB", "NaN", "nan", "Inf", "+Inf", "1e400", "8EiB", "lots", "", " ", "12 34"} {
		t.Run(v, func(t *testing.T) {
			for _, cmd := range [][]string{{"run", "testdata/big.pir"}, {"train", "--steps", "1"}} {
				r := gopir(append(cmd, "--mem-limit="+v)...)
				if v == "" {
					continue // the flag's default
				}
				if r.code != 2 || strings.Count(r.stderr, "\n") != 1 || !strings.HasPrefix(r.stderr, "--mem-limit") {
					t.Fatalf("%s --mem-limit=%q: exit %d, stderr %q", cmd[0], v, r.code, r.stderr)
				}
			}
		})
	}
	phys := defaultMemLimit()
	if phys == 0 {
		t.Skip("physical memory unknown here")
	}
	for v, want := range map[string]int64{"1": 1, "1.5k": 1536, "100000TiB": phys, "": phys} {
		got, err := memLimit(v)
		if err != nil || got != want {
			t.Errorf("memLimit(%q) = %d, %v; want %d", v, got, err, want)
		}
	}
	// A limit above physical memory still limits: the 149 GiB request is
	// an allocator error (exit 1), never the Go runtime's.
	r := gopir("run", "testdata/huge.pir", "--mem-limit", "100000TiB")
	if r.code != 1 || !strings.HasPrefix(r.stderr, "ResourceExhaustedError") {
		t.Fatalf("exit %d, stderr %q", r.code, r.stderr)
	}
}

func TestSmallInputChecks(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) string {
		p := filepath.Join(dir, name)
		os.WriteFile(p, []byte(text), 0o644)
		return p
	}
	full := func(shape, value, dtype string) string {
		return write(fmt.Sprintf("full-%s-%s-%s.pir", shape, value, dtype), fmt.Sprintf(`{
  (%%a) = "full" () {shape:%s, value:%s, dtype:%s} : () -> tensor<%s>
  () = "fetch" (%%a) {name:"a"} : (tensor<%[4]s>) -> ()
}`, shape, value, dtype, typeText(shape, dtype)))
	}
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"run", full("[2]", "9223372036854775807", "i32")}, "value 9223372036854775807 overflows i32"},
		{[]string{"run", full("[2]", "nan", "i64")}, "value nan is not an integer i64 can hold"},
		{[]string{"run", full("[2]", "1.5", "i64")}, "value 1.5 is not an integer i64 can hold"},
		{[]string{"run", full("[2]", "2", "i1")}, "value 2 is not a bool"},
		{[]string{"run", full("[2]", "1e300", "f32")}, "value 1e+300 overflows f32"},
		{[]string{"run", full("[9223372036854775807,9223372036854775807,0]", "0", "f32")}, "too many elements"},
		{[]string{"run", full("[0,9223372036854775807,9223372036854775807]", "0", "f32")}, "too many elements"},
		{[]string{"run", write("utf8.pir", `{
  (%a) = "full" () {shape:[], value:1.0, dtype:f32} : () -> tensor<f32>
  () = "fetch" (%a) {name:"\xff"} : (tensor<f32>) -> ()
  () = "fetch" (%a) {name:"\xfe"} : (tensor<f32>) -> ()
}`)}, "is not valid UTF-8"},
		{[]string{"grad", "testdata/grad_if.pir", "--loss", "loss", "--wrt", "x,x"}, "--wrt x: given twice"},
		{[]string{"train", "--lr", "0"}, "--lr 0: want a positive"},
		{[]string{"train", "--lr", "-1"}, "--lr -1: want a positive"},
		{[]string{"train", "--lr", "NaN"}, "--lr NaN: want a positive"},
	}
	for _, tc := range cases {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			r := gopir(tc.args...)
			if r.code != 2 || strings.Count(r.stderr, "\n") != 1 || !strings.Contains(r.stderr, tc.want) {
				t.Fatalf("exit %d, stderr %q; want exit 2 and one line containing %q", r.code, r.stderr, tc.want)
			}
		})
	}
	// An i64 holds 2^63-1 exactly.
	r := gopir("run", full("[1]", "9223372036854775807", "i64"), "--json")
	if r.code != 0 || !strings.Contains(r.stdout, `"data":[9223372036854775807]`) {
		t.Fatalf("exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
	}
}

// typeText spells the tensor type of a shape attribute like "[2,3]".
func typeText(shape, dtype string) string {
	s := strings.Trim(shape, "[]")
	if s == "" {
		return dtype
	}
	return strings.ReplaceAll(s, ",", "x") + "x" + dtype
}
