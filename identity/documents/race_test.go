//go:build race

package documents

// raceAllocSlack widens allocation bounds under the race detector, whose
// instrumented build keeps more values on the heap (measured: 8 screenings
// of the 16-bit PNG allocated 272 MiB with -race against 237 MiB without).
const raceAllocSlack = 1.25
