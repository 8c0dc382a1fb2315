package agents

import "github.com/trustd/trustd/platform/actors"

// MarkerNonces is the cluster-wide nonce store: each nonce is a single-use
// marker (actors.Consume) owned by one shard and confirmed by the
// partition's replica before Consume returns, exactly as response tokens
// are, so a replay through any node, even after the owner died, is refused.
type MarkerNonces struct{ Router actors.Asker }

// Consume implements Nonces.
func (m MarkerNonces) Consume(id string, expires int64) (bool, error) {
	op := &actors.Consume{ID: id, Expires: expires}
	if err := m.Router.Ask(id, op); err != nil {
		return false, err
	}
	return op.First, nil
}
