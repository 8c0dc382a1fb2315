package challenge

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"
)

// Progress is called now and then while minting, with tokens minted so far.
type Progress func(done, want int)

// MintMany mints want tokens with workers goroutines. It gives up early, with
// the tokens it has, when ctx ends or when failures pass a tenth of the
// attempts (after 20 attempts), since then the server is not minting.
func MintMany(ctx context.Context, m *Minter, want, workers int, progress Progress) ([]string, error) {
	if workers < 1 {
		workers = 1
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		mu        sync.Mutex
		tokens    = make([]string, 0, want)
		firstErr  error
		claimed   atomic.Int64
		failures  atomic.Int64
		attempts  atomic.Int64
		wg        sync.WaitGroup
		lastPrint = time.Now()
	)
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil && claimed.Add(1) <= int64(want) {
				tok, err := m.Mint(ctx)
				a := attempts.Add(1)
				if err != nil {
					claimed.Add(-1) // retry this slot
					f := failures.Add(1)
					mu.Lock()
					if firstErr == nil {
						firstErr = err
					}
					mu.Unlock()
					if a >= 20 && f*10 > a {
						cancel()
					}
					continue
				}
				mu.Lock()
				tokens = append(tokens, tok)
				if progress != nil && (time.Since(lastPrint) > time.Second || len(tokens) == want) {
					lastPrint = time.Now()
					progress(len(tokens), want)
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if len(tokens) < want {
		err := firstErr
		if err == nil {
			err = ctx.Err()
		}
		if err == nil {
			err = errors.New("unknown")
		}
		return tokens, fmt.Errorf("challenge: minted %d of %d tokens (%d failures): %w", len(tokens), want, failures.Load(), err)
	}
	return tokens, nil
}
