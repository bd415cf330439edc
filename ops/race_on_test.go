//go:build race

package ops_test

// raceEnabled: under the race detector sync.Pool drops objects at random,
// so counting Go allocations per run means nothing.
const raceEnabled = true
