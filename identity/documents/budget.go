package documents

import (
	"context"
	"errors"
	"sync"
	"time"

	"golang.org/x/sync/semaphore"
)

// The decode budget bounds the memory that concurrent screenings hold on
// one node. Each screening reads its images' headers first, prices them
// with DecodeCost (width × height × bytes per pixel, by depth and
// channels, plus the grey copies), and takes that many bytes from a
// weighted semaphore before any pixel is decoded; it gives them back when
// it answers. A screening that cannot get its bytes within the wait is
// refused with ErrBusy (503 screening-busy, Retry-After) instead of
// growing the heap; one whose cost alone is over the whole budget is
// refused as image-too-large. The largest legal image (24 Mpx CMYK JPEG)
// costs about 125 MiB, so the default budget lets a screening with two of
// them run.
const (
	// DefaultDecodeBudget is the bytes all screenings of a node may hold.
	DefaultDecodeBudget = 256 << 20
	// DefaultBudgetWait is how long a screening waits for budget before
	// ErrBusy.
	DefaultBudgetWait = 5 * time.Second
)

// budget is the weighted semaphore plus what tests and operators read:
// the bytes held now and the most ever held at once.
type budget struct {
	sem   *semaphore.Weighted
	total int64
	wait  time.Duration

	mu         sync.Mutex
	held, peak int64
}

func newBudget(total int64, wait time.Duration) *budget {
	return &budget{sem: semaphore.NewWeighted(total), total: total, wait: wait}
}

// acquire takes cost bytes, waiting at most b.wait (and never past ctx).
// The returned func gives them back.
func (b *budget) acquire(ctx context.Context, cost int64) (func(), error) {
	if cost > b.total {
		return nil, ErrImageTooLarge.With("decoding these images needs %d bytes; the node's decode budget is %d (see GET /v1/documents/supported)", cost, b.total)
	}
	if !b.sem.TryAcquire(cost) {
		if b.wait <= 0 {
			return nil, b.busy()
		}
		wctx, cancel := context.WithTimeout(ctx, b.wait)
		err := b.sem.Acquire(wctx, cost)
		cancel()
		if err != nil {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			if errors.Is(err, context.DeadlineExceeded) {
				return nil, b.busy()
			}
			return nil, err
		}
	}
	b.mu.Lock()
	b.held += cost
	b.peak = max(b.peak, b.held)
	b.mu.Unlock()
	return func() {
		b.mu.Lock()
		b.held -= cost
		b.mu.Unlock()
		b.sem.Release(cost)
	}, nil
}

func (b *budget) busy() error {
	return ErrBusy.With("the node's decode memory budget (%d bytes) is in use by other screenings; retry after a few seconds", b.total)
}

// BudgetUse is the decode budget's state: its size and wait, the bytes
// held now and the most held at once since the screener started.
type BudgetUse struct {
	Total, Held, Peak int64
	Wait              time.Duration
}

// Budget reports the decode budget's use.
func (s *Screener) Budget() BudgetUse {
	s.budget.mu.Lock()
	defer s.budget.mu.Unlock()
	return BudgetUse{Total: s.budget.total, Held: s.budget.held, Peak: s.budget.peak, Wait: s.budget.wait}
}

// DecodeCostRule says in words how DecodeCost prices an image, for GET
// /v1/documents/supported.
const DecodeCostRule = "width × height × (decoder bytes per pixel + 1 for the grey copy, 2 for JPEG) + 1200 × the height scaled to 1200 px wide. " +
	"Decoder bytes per pixel by format, depth and channels: PNG 8-bit grey or palette 1, other 8-bit PNG 4 (×2 when interlaced), " +
	"16-bit PNG 0 (decoded straight to 8-bit grey); JPEG grey 1, YCbCr 3, CMYK 4; WebP lossy 1.5 (2.5 with alpha), lossless 4. " +
	"Front and back are priced together before any pixel is decoded."
