package remat_test

import (
	"errors"
	"math"
	"testing"

	"github.com/gopir/gopir/remat"
)

// A checkpointed loop's memory grows as the square root of its trips: at
// the floor, four times the trips take about twice the bytes above the
// parameters (Chen et al.'s √n schedule), with checkpoints about √T apart,
// while the tapes it replaces grow fourfold.
func TestCheckpointedLoopGrowsAsTheSquareRoot(t *testing.T) {
	type point struct{ natural, floor, base int64 }
	var pts []point
	var ks []int
	for _, n := range []int{16, 64, 256} {
		c := loopCase(t)
		c.trips = n
		c.setTrips(t, n)
		natural, err := c.plan(c.p)
		if err != nil {
			t.Fatal(err)
		}
		_, err = remat.Fit(c.p, remat.Options{Budget: 1, Backward: c.backward, Plan: c.plan, Feeds: c.types, Trips: n})
		var fe *remat.FloorError
		if !errors.As(err, &fe) {
			t.Fatal(err)
		}
		res := c.fit(t, fe.Floor)
		if len(res.Checkpointed) != 1 {
			t.Fatalf("T=%d: checkpointed %+v", n, res.Checkpointed)
		}
		pts = append(pts, point{natural.Peak, fe.Floor, natural.Base})
		ks = append(ks, res.Checkpointed[0].Every)
		c.check(t, res, fe.Floor, true)
		c.release()
	}
	for i := 1; i < len(pts); i++ {
		grow := float64(pts[i].floor-pts[i].base) / float64(pts[i-1].floor-pts[i-1].base)
		tapes := float64(pts[i].natural-pts[i].base) / float64(pts[i-1].natural-pts[i-1].base)
		if grow > 2.5 || tapes < 3.5 || ks[i] <= ks[i-1] || math.Abs(float64(ks[i])/float64(ks[i-1])-2) > 1 {
			t.Errorf("four times the trips: the floor grows %.2f×, the natural peak %.2f×, checkpoints every %d then %d trips", grow, tapes, ks[i-1], ks[i])
		}
	}
}
