package client

import "sync"

// cacheShards splits the partition cache so concurrent checks rarely
// wait on one another's lock.
const cacheShards = 64

// cacheShard is one shard of the partition cache: request key →
// partition, at most max entries. A full shard drops an arbitrary entry
// (Go's map iteration starts at random), an approximation of LRU that
// costs nothing on a hit: a hot key is rarely the one drawn, and a
// dropped key costs one forwarded check before it is learnt again.
type cacheShard struct {
	mu  sync.Mutex
	m   map[Key]int16
	max int
}

func (s *cacheShard) get(k Key) (int16, bool) {
	s.mu.Lock()
	p, ok := s.m[k]
	s.mu.Unlock()
	return p, ok
}

func (s *cacheShard) put(k Key, p int16) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if old, ok := s.m[k]; ok {
		if old != p {
			s.m[k] = p
		}
		return
	}
	if len(s.m) >= s.max {
		for drop := range s.m {
			delete(s.m, drop)
			break
		}
	}
	s.m[k] = p
}
