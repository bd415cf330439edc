package bench

import (
	"testing"
)

// TestBoundsAgree checks the two independent computations of the
// liveness bound against each other on the straight-line models, and
// that the reference run of the models with control flow works.
func TestBoundsAgree(t *testing.T) {
	models := []string{"mlp", "lenet"}
	if !testing.Short() {
		models = append(models, "gate", "rnn", "tinydet")
	}
	for _, m := range models {
		row, err := Memory(m, 1, 2)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("%s: peak %d, bound %d, region bound %d, workspace bound %d, static %d, steady %d, store %d (rounded %d)",
			m, row.Peak, row.Bound, row.RegionBound, row.WorkspaceBound, row.Static, row.Steady, row.StoreBytes, row.StoreRounded)
		if row.Static >= 0 && row.Static != row.Bound {
			t.Errorf("%s: static bound %d, traced bound %d", m, row.Static, row.Bound)
		}
		if row.Static < 0 && (m == "mlp" || m == "lenet") {
			t.Errorf("%s: no static bound", m)
		}
		if row.RegionBound < row.Bound || row.WorkspaceBound < row.RegionBound {
			t.Errorf("%s: bounds out of order: %d, region rule %d, with workspaces %d", m, row.Bound, row.RegionBound, row.WorkspaceBound)
		}
	}
}
