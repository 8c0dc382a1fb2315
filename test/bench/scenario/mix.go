package scenario

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"

	"github.com/trustd/trustd/test/bench/load"
)

// ErrBadMix is returned for a mix spec that does not parse.
var ErrBadMix = errors.New("scenario: bad mix")

// Weight is one operation's share of a mix.
type Weight struct {
	Name   string
	Weight int
}

// ParseMix parses "ratelimit=80,siteverify=20" into weights over the given
// known operation names; weights need not sum to 100.
func ParseMix(spec string, known ...string) ([]Weight, error) {
	var ws []Weight
	total := 0
	for part := range strings.SplitSeq(spec, ",") {
		name, num, ok := strings.Cut(strings.TrimSpace(part), "=")
		w, err := strconv.Atoi(num)
		if !ok || err != nil || w < 0 {
			return nil, fmt.Errorf("%w: %q (want name=weight)", ErrBadMix, part)
		}
		found := false
		for _, k := range known {
			found = found || k == name
		}
		if !found {
			return nil, fmt.Errorf("%w: unknown operation %q (known: %s)", ErrBadMix, name, strings.Join(known, ", "))
		}
		ws = append(ws, Weight{Name: name, Weight: w})
		total += w
	}
	if total == 0 {
		return nil, fmt.Errorf("%w: weights sum to zero", ErrBadMix)
	}
	return ws, nil
}

// Mix is a Worker that runs one of its Workers per request, chosen at
// random in proportion to the weights.
type Mix struct {
	workers []load.Worker
	cum     []int
	rng     *rand.Rand
}

// NewMix combines workers (one per weight, same order) using rng for the
// draw; rng belongs to the calling goroutine.
func NewMix(weights []Weight, workers []load.Worker, rng *rand.Rand) *Mix {
	m := &Mix{workers: workers, rng: rng}
	sum := 0
	for _, w := range weights {
		sum += w.Weight
		m.cum = append(m.cum, sum)
	}
	return m
}

// Do runs the drawn Worker.
func (m *Mix) Do() load.Outcome {
	x := m.rng.IntN(m.cum[len(m.cum)-1])
	for i, c := range m.cum {
		if x < c {
			return m.workers[i].Do()
		}
	}
	return m.workers[len(m.workers)-1].Do()
}
