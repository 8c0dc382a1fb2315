//go:build race

package api

// raceEnabled: the race detector makes sync.Pool drop items, so pooled
// state allocates and allocation counts mean nothing under it.
const raceEnabled = true
