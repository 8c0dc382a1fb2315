// Package load drives a Worker from many goroutines for a bounded time, in a
// closed loop (each goroutine sends as soon as its previous answer came back)
// or an open loop (sends follow a fixed arrival schedule and latency is counted
// from the intended send time, so a server stall is not hidden by the
// generator waiting for it: coordinated omission is corrected), and records
// HDR latency histograms, errors and decisions, excluding the warm-up.
//
// Each goroutine owns its Worker and its recorder, so the hot loop takes no
// lock and allocates nothing; recorders are merged once the run is over. The
// package never talks to the network itself: Workers do.
package load
