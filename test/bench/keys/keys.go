// Package keys chooses which key each generated request is about, uniformly
// or with a Zipf skew, and pre-builds the request payload for each key. It owns
// only the choice: it never touches the network, and choosing a key allocates
// nothing, because it runs once per request inside the load generator.
package keys

import (
	"errors"
	"fmt"
	"math/rand/v2"
)

// Distribution names how keys are spread over requests.
type Distribution string

const (
	// Uniform gives every key the same probability.
	Uniform Distribution = "uniform"
	// Zipf makes key 0 the hottest, key 1 the next, and so on, with
	// probability proportional to 1/(1+k)^s.
	Zipf Distribution = "zipf"
)

// DefaultZipfS is the Zipf exponent used when none is given: a hot set that is
// clearly skewed (a few keys take a large share) without one key taking all.
const DefaultZipfS = 1.1

// ErrBadSpec is returned for a key count below one, an unknown distribution
// or a Zipf exponent not above one (math/rand's Zipf requires s > 1).
var ErrBadSpec = errors.New("keys: bad chooser spec")

// Spec describes a key space: N keys spread by Distribution.
type Spec struct {
	N            int
	Distribution Distribution
	// ZipfS is the Zipf exponent (> 1); zero means DefaultZipfS.
	ZipfS float64
}

// Validate reports whether the spec can build a chooser.
func (s Spec) Validate() error {
	if s.N < 1 {
		return fmt.Errorf("%w: need at least one key, got %d", ErrBadSpec, s.N)
	}
	switch s.Distribution {
	case Uniform, "":
	case Zipf:
		if s.ZipfS != 0 && s.ZipfS <= 1 {
			return fmt.Errorf("%w: zipf exponent must be > 1, got %g", ErrBadSpec, s.ZipfS)
		}
	default:
		return fmt.Errorf("%w: unknown distribution %q (uniform|zipf)", ErrBadSpec, s.Distribution)
	}
	return nil
}

// Chooser picks a key index in [0, N). A Chooser is owned by one goroutine.
type Chooser struct {
	n    uint64
	rng  *rand.Rand
	zipf *rand.Zipf
}

// New returns a Chooser for spec seeded with seed; two choosers with the same
// seed yield the same sequence, so each load worker gets its own seed.
func New(spec Spec, seed uint64) (*Chooser, error) {
	if err := spec.Validate(); err != nil {
		return nil, err
	}
	rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	c := &Chooser{n: uint64(spec.N), rng: rng}
	if spec.Distribution == Zipf && spec.N > 1 {
		s := spec.ZipfS
		if s == 0 {
			s = DefaultZipfS
		}
		c.zipf = rand.NewZipf(rng, s, 1, uint64(spec.N-1))
	}
	return c, nil
}

// Next returns the next key index.
func (c *Chooser) Next() int {
	switch {
	case c.n == 1:
		return 0
	case c.zipf != nil:
		return int(c.zipf.Uint64())
	default:
		return int(c.rng.Uint64N(c.n))
	}
}

// Rand exposes the chooser's generator so a worker can draw other choices
// (such as which operation of a mix to run) without a second source.
func (c *Chooser) Rand() *rand.Rand { return c.rng }
