package resilience

// Bulkhead counts calls in flight to one dependency so a slow dependency
// cannot take every worker with it. The limit is passed on each call rather
// than stored, so a policy change applies at once and the state stays a
// single integer.
type Bulkhead struct {
	InFlight int
}

// TryAcquire takes a slot if fewer than limit calls are in flight. A limit
// of zero or less admits nothing.
func (b *Bulkhead) TryAcquire(limit int) bool {
	if b.InFlight < 0 {
		b.InFlight = 0 // only a corrupted snapshot gets here
	}
	if b.InFlight >= limit {
		return false
	}
	b.InFlight++
	return true
}

// Release returns a slot. Extra releases, such as a retried release request,
// stop at zero instead of granting capacity that was never taken.
func (b *Bulkhead) Release() {
	if b.InFlight > 0 {
		b.InFlight--
	}
}
