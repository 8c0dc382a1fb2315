package node

import "github.com/trustd/trustd/journeys"

// Journeys is the node's journeys module, where the review queue, the
// human-verification verdict and the face engine are wired.
func (n *Node) Journeys() *journeys.Module { return n.api.Journeys() }
