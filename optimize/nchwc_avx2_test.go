package optimize_test

import (
	"os"
	osexec "os/exec"
	"slices"
	"strings"
	"testing"

	"github.com/gopir/gopir/ops"
	"github.com/gopir/gopir/optimize"
)

// On an AVX-512 machine made to run as an AVX2 one (GOPIR_CPU=avx2, in
// a child process: the switch is read at start), the pass blocks by 8
// and resnet18ish runs through the AVX2 kernels with its NCHW results.
func TestNCHWcAVX2(t *testing.T) {
	if os.Getenv("GOPIR_CPU") != "avx2" {
		if ops.NCHWcBlock() != 16 {
			t.Skip("not an AVX-512 machine: nothing to switch off")
		}
		cmd := osexec.Command(os.Args[0], "-test.run=^TestNCHWcAVX2$", "-test.v")
		cmd.Env = append(os.Environ(), "GOPIR_CPU=avx2")
		out, err := cmd.CombinedOutput()
		if err != nil || !strings.Contains(string(out), "--- PASS: TestNCHWcAVX2") {
			t.Fatalf("GOPIR_CPU=avx2: %v\n%s", err, out)
		}
		return
	}
	switch b := ops.NCHWcBlock(); b {
	case 0:
		t.Skip("no AVX2 here")
	case 8:
	default:
		t.Fatalf("GOPIR_CPU=avx2: block %d, want 8", b)
	}
	without := slices.DeleteFunc(optimize.PassNames(), func(n string) bool { return n == "nchwc" })
	testNCHWcModel(t, 8, "resnet18ish", [3]int{20, 0, 1}, without)
}
