package catalog

import (
	"fmt"

	"github.com/go-json-experiment/json"
)

// MarshalSnapshot encodes the whole catalog for a Raft snapshot.
func (c *Catalog) MarshalSnapshot() ([]byte, error) { return json.Marshal(c) }

// UnmarshalSnapshot restores a catalog written by MarshalSnapshot.
func UnmarshalSnapshot(data []byte) (*Catalog, error) {
	c := Empty()
	if err := json.Unmarshal(data, c); err != nil {
		return nil, fmt.Errorf("catalog: restore snapshot: %w", err)
	}
	c.reindex()
	return c, nil
}
