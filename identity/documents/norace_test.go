//go:build !race

package documents

// raceAllocSlack is 1 in a build without the race detector (race_test.go).
const raceAllocSlack = 1.0
