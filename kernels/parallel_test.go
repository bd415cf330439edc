package kernels

import (
	"github.com/gopir/gopir/internal/allocs"
	"slices"
	"sync"
	"testing"
)

// ranges records the calls ParallelFor makes, sorted by lo.
func ranges(threads, n, grain int) [][2]int {
	var mu sync.Mutex
	var got [][2]int
	ParallelFor(threads, n, grain, func(lo, hi int) {
		mu.Lock()
		got = append(got, [2]int{lo, hi})
		mu.Unlock()
	})
	slices.SortFunc(got, func(a, b [2]int) int { return a[0] - b[0] })
	return got
}

func TestParallelFor(t *testing.T) {
	for _, tc := range []struct{ threads, n, grain int }{
		{1, 100, 1}, {0, 100, 1}, {-3, 10, 1}, {4, 100, 1}, {4, 100, 30}, {4, 100, 100}, {4, 100, 200},
		{3, 10, 1}, {8, 5, 1}, {2, 1, 1}, {4, 0, 1}, {4, 7, 0}, {16, 1000, 7},
	} {
		got := ranges(tc.threads, tc.n, tc.grain)
		if tc.n <= 0 {
			if len(got) != 0 {
				t.Errorf("%+v: calls %v for an empty range", tc, got)
			}
			continue
		}
		if tc.threads <= 1 || tc.n <= tc.grain {
			if !slices.Equal(got, [][2]int{{0, tc.n}}) {
				t.Errorf("%+v: got %v, want one call on [0,%d)", tc, got, tc.n)
			}
			continue
		}
		if len(got) > perfItemsPerWorker*tc.threads {
			t.Errorf("%+v: %d ranges for %d threads", tc, len(got), tc.threads)
		}
		next := 0
		for _, r := range got {
			if r[0] != next || r[1] <= r[0] {
				t.Fatalf("%+v: ranges %v do not tile [0,%d)", tc, got, tc.n)
			}
			if len(got) > 1 && r[1]-r[0] < max(tc.grain, 1) {
				t.Errorf("%+v: range %v smaller than grain", tc, r)
			}
			next = r[1]
		}
		if next != tc.n {
			t.Errorf("%+v: ranges %v do not reach %d", tc, got, tc.n)
		}
		if again := ranges(tc.threads, tc.n, tc.grain); !slices.Equal(got, again) {
			t.Errorf("%+v: partition changed between runs: %v then %v", tc, got, again)
		}
	}
}

// TestParallelForInline checks that the serial case runs on the caller's
// goroutine: fn may then use state the caller has not made thread-safe.
func TestParallelForInline(t *testing.T) {
	x := 0
	ParallelFor(1, 10, 1, func(lo, hi int) { x += hi - lo })
	ParallelFor(8, 10, 10, func(lo, hi int) { x += hi - lo })
	if x != 20 {
		t.Errorf("x = %d, want 20", x)
	}
}

// TestParallelForBoundsGoroutines checks that no more than threads calls
// run at once.
func TestParallelForBoundsGoroutines(t *testing.T) {
	for _, threads := range []int{2, 3, 8} {
		var mu sync.Mutex
		running, most := 0, 0
		ParallelFor(threads, 1000, 1, func(lo, hi int) {
			mu.Lock()
			running++
			most = max(most, running)
			mu.Unlock()
			s := 0
			for i := range 20000 {
				s += i
			}
			_ = s
			mu.Lock()
			running--
			mu.Unlock()
		})
		if most > threads {
			t.Errorf("%d threads: %d calls ran at once", threads, most)
		}
	}
}

// countTask counts the items a perfRunTask call runs.
type countTask struct{ hits []int32 }

func (c *countTask) item(_, i int) { c.hits[i]++ }

// TestPerfJobsRecycled: loops started from several goroutines at once,
// back to back (so that helpers often arrive after their loop is over and
// its job object is wanted again), run every item exactly once; a loop
// body given as a perfTask makes no Go allocation. Run with -race.
func TestPerfJobsRecycled(t *testing.T) {
	var wg sync.WaitGroup
	for g := range 3 {
		wg.Go(func() {
			for round := range 300 {
				items := 1 + (round+g)%9
				c := &countTask{hits: make([]int32, items)}
				perfRunTask(2, items, c)
				var mu sync.Mutex
				seen := make([]int, items)
				perfSplit3(2, items, items*3, round%2 == 0, func(_, lo, hi int) {
					mu.Lock()
					seen[lo/3]++
					mu.Unlock()
				})
				for i := range items {
					if c.hits[i] != 1 || seen[i] != 1 {
						t.Errorf("goroutine %d round %d: item %d ran %d and %d times", g, round, i, c.hits[i], seen[i])
						return
					}
				}
			}
		})
	}
	wg.Wait()
	if raceEnabled {
		return // sync.Pool drops objects at random under the race detector
	}
	c := &countTask{hits: make([]int32, 64)}
	if n := allocs.PerRun(200, func() { perfRunTask(2, 64, c) }); n != 0 {
		t.Errorf("%v Go allocations per parallel loop with a perfTask, want 0", n)
	}
}

// TestPerfRunCallerTakesTheFront: the caller's items of a parallel loop
// are a prefix of them and the helpers' the rest, whatever the timing,
// so that with two threads consecutive loops give each thread the same
// part of their data (perfJob.claim). Every item runs once.
func TestPerfRunCallerTakesTheFront(t *testing.T) {
	for _, threads := range []int{2, 3} {
		for round := range 400 {
			items := 2 + round%15
			who := make([]int32, items)
			runs := make([]int32, items)
			perfRun(threads, items, func(worker, i int) {
				who[i] = int32(worker)
				runs[i]++
				s := 0
				for k := range 20000 * (i%3 + 1) {
					s += k
				}
				_ = s
			})
			front := 0
			for front < items && who[front] == 0 {
				front++
			}
			for i := range items {
				if runs[i] != 1 {
					t.Fatalf("%d threads, %d items: item %d ran %d times", threads, items, i, runs[i])
				}
				if i >= front && who[i] == 0 {
					t.Fatalf("%d threads, %d items: workers %v, the caller's items are not a prefix", threads, items, who)
				}
			}
		}
	}
}
