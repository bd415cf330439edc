package ir_test

import (
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/gopir/gopir/ir"
)

// TestMarkHelperPackage checks that ops built through a package marked as
// a helper record the helper's caller. Marking is global and permanent, so
// the check runs in a child process: it marks this test package itself,
// after which the first caller outside it is package testing.
func TestMarkHelperPackage(t *testing.T) {
	if os.Getenv("IR_HELPER_CHILD") == "1" {
		ir.MarkHelperPackage("github.com/gopir/gopir/ir_test")
		_, _, x, _ := start()
		file := x.Def().Pos.File
		if !strings.HasSuffix(file, "/testing/testing.go") {
			t.Fatalf("op built in a helper package records %s, want package testing's file", x.Def().Pos)
		}
		return
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestMarkHelperPackage$", "-test.count=1", "-test.v")
	cmd.Env = append(os.Environ(), "IR_HELPER_CHILD=1")
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "--- PASS: TestMarkHelperPackage") {
		t.Fatalf("child process: %v\n%s", err, out)
	}
	// In this process the test package is not a helper.
	_, _, x, _ := start()
	if !strings.HasSuffix(x.Def().Pos.File, "/ir/gobuilt_test.go") {
		t.Errorf("op records %s, want gobuilt_test.go", x.Def().Pos)
	}
}
