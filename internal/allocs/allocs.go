// Package allocs counts Go heap allocations for the tests that promise
// none (kernels, exec, bench): testing.AllocsPerRun forces GOMAXPROCS to
// 1, under which no parallel loop would run on more than one goroutine,
// so the paths these tests care about would go untested.
package allocs

import "runtime"

// PerRun is testing.AllocsPerRun without its GOMAXPROCS(1): it calls f
// once to warm up, then runs times, and returns the Go heap allocations
// per call. Like testing.AllocsPerRun it rounds down, since a garbage
// collection now and then empties the sync.Pools the kernels draw from.
func PerRun(runs int, f func()) float64 {
	f()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for range runs {
		f()
	}
	runtime.ReadMemStats(&after)
	return float64((after.Mallocs - before.Mallocs) / uint64(runs))
}
