package allocs

import "testing"

var sink []byte

func TestPerRun(t *testing.T) {
	if n := PerRun(50, func() {}); n != 0 {
		t.Errorf("an empty function: %v allocations per run", n)
	}
	if n := PerRun(50, func() { sink = make([]byte, 1<<10) }); n != 1 {
		t.Errorf("one make per run: %v allocations per run", n)
	}
}
