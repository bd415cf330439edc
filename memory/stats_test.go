package memory

import (
	"fmt"
	"strings"
	"testing"
)

func TestCounterNegativePanics(t *testing.T) {
	defer func() {
		if msg := fmt.Sprint(recover()); !strings.Contains(msg, "internal error: allocated bytes went negative (-64 after freeing 128)") {
			t.Fatalf("panic %q", msg)
		}
	}()
	c := Counter{}
	c.add(64)
	c.sub(128, "allocated")
}
