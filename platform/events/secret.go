package events

import (
	"time"

	"github.com/trustd/trustd/platform/catalog"
	"github.com/trustd/trustd/platform/token"
)

// Sealer seals endpoint secrets for the catalog (token.Sealer under this
// package's label, the endpoint id as associated data), so a sealed secret
// reads neither without the cluster key nor under another endpoint.
// Signing needs the secret itself, so it cannot be stored hashed; the Raft
// log and snapshots hold only sealed bytes.
type Sealer struct{ s *token.Sealer }

// NewSealer derives the sealing key from the cluster key.
func NewSealer(clusterKey string) *Sealer {
	return &Sealer{s: token.NewSealer(clusterKey, "trustd webhooks secret seal v1")}
}

func (s *Sealer) seal(endpointID, secret string) []byte { return s.s.Seal(endpointID, []byte(secret)) }

func (s *Sealer) open(endpointID string, sealed []byte) (string, bool) {
	b, ok := s.s.Open(endpointID, sealed)
	return string(b), ok
}

// secrets returns the endpoint's secrets valid at now, current first.
func (s *Sealer) secrets(e *catalog.WebhookEndpoint, now time.Time) []string {
	var out []string
	for _, k := range e.Secrets {
		if !k.NotAfter.IsZero() && !k.NotAfter.After(now) {
			continue
		}
		if sec, ok := s.open(e.ID, k.Sealed); ok {
			out = append(out, sec)
		}
	}
	return out
}
