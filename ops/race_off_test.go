//go:build !race

package ops_test

const raceEnabled = false
