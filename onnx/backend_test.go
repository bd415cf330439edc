package onnx_test

import (
	"bufio"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/gopir/gopir/onnx"
)

var update = flag.Bool("update", false, "rewrite testdata/backend.txt with the outcomes of this run")

// expectationFile records, for every test of ONNX's backend suite, what
// gopir does with it: "pass", or "unsupported: REASON".
const expectationFile = "testdata/backend.txt"

// TestBackendSuite runs ONNX's own backend tests (Debian's libonnx-testdata)
// and compares each outcome with testdata/backend.txt. A test that passed
// must keep passing and one that was unsupported must still be refused
// with a clear error (or pass: then the file is updated with -update). No
// test may give a wrong answer, fail with an error that is not a clear
// "unsupported", or panic.
func TestBackendSuite(t *testing.T) {
	if _, err := os.Stat(onnx.DebianTestData); err != nil {
		t.Skipf("ONNX's backend tests are not installed (Debian package libonnx-testdata): %v", err)
	}
	tests, err := onnx.ListTests(onnx.DebianTestData)
	if err != nil {
		t.Fatal(err)
	}
	want, err := readExpectations(expectationFile)
	if err != nil && !*update {
		t.Fatal(err)
	}
	got := map[string]onnx.Outcome{}
	counts := map[onnx.Status]int{}
	for _, tc := range tests {
		o := onnx.RunTest(tc)
		got[tc.Name] = o
		counts[o.Status]++
		switch o.Status {
		case onnx.Pass, onnx.Unsupported:
		default:
			t.Errorf("%s: %s: %s", tc.Name, o.Status, o.Detail)
		}
	}
	t.Logf("%d tests: %d pass, %d unsupported, %d error, %d wrong, %d panic", len(tests),
		counts[onnx.Pass], counts[onnx.Unsupported], counts[onnx.Error], counts[onnx.Wrong], counts[onnx.Panic])
	if *update {
		if err := writeExpectations(expectationFile, got); err != nil {
			t.Fatal(err)
		}
		return
	}
	for _, tc := range tests {
		o, w := got[tc.Name], want[tc.Name]
		switch {
		case w == "":
			t.Errorf("%s: %s; not in %s (run with -update)", tc.Name, o.Status, expectationFile)
		case w == "pass" && o.Status != onnx.Pass:
			t.Errorf("%s: passed before, now %s: %s", tc.Name, o.Status, o.Detail)
		case strings.HasPrefix(w, "unsupported") && o.Status == onnx.Pass:
			t.Errorf("%s: passes now; update %s (-update)", tc.Name, expectationFile)
		}
	}
}

func readExpectations(path string) (map[string]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	m := map[string]string{}
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		name, status, ok := strings.Cut(line, " ")
		if !ok {
			return nil, fmt.Errorf("%s: bad line %q", path, line)
		}
		m[name] = status
	}
	return m, sc.Err()
}

func writeExpectations(path string, got map[string]onnx.Outcome) error {
	names := make([]string, 0, len(got))
	for n := range got {
		names = append(names, n)
	}
	sort.Strings(names)
	var sb strings.Builder
	sb.WriteString("# What gopir does with each test of ONNX's backend suite (Debian's libonnx-testdata 1.12).\n")
	sb.WriteString("# Written by go test ./onnx -run TestBackendSuite -update; checked by the same test without -update.\n")
	for _, n := range names {
		o := got[n]
		line := string(o.Status)
		if o.Status != onnx.Pass {
			line += ": " + firstLine(o.Detail)
		}
		fmt.Fprintf(&sb, "%s %s\n", n, line)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return os.WriteFile(path, []byte(sb.String()), 0o644)
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	return s
}
