// Package journeynode starts a --dev node with a device_authorization
// journey defined, for the journeys' node tests (journeys/api) and the
// tests that span journeys and other areas (node/crossarea), and reads
// the journey operations' answers. It is imported by tests only.
package journeynode

import (
	"strings"
	"testing"

	"github.com/trustd/trustd/node/nodetest"
)

// Env is a started --dev node, its dev workspace's credentials and the
// origin the person's page runs at.
type Env struct {
	*nodetest.DevNode
	Origin string
}

// Start starts a --dev node whose dev workspace defines journey "pay"
// (device_authorization, standard assurance, consent c1, identity,
// authorization and operation binding required); it stops when the test
// ends.
func Start(t testing.TB) *Env {
	t.Helper()
	e := &Env{DevNode: nodetest.StartDev(t)}
	tn := e.Node
	// WebAuthn refuses an IP address as relying party id: the person's
	// page runs at localhost (a dev site hostname) on the node's port.
	e.Origin = strings.Replace(tn.N.APIURL(), "127.0.0.1", "localhost", 1)
	tn.N.Journeys().WithPasskeys(e.Origin)
	r := e.Do("PUT", "/admin/v1/workspaces/"+e.Dev.WorkspaceID+"/journeys/pay", e.Dev.AdminToken, map[string]any{
		"name": "Payment", "method": "device_authorization", "requested_assurance": "standard",
		"consent":      map[string]any{"required": true, "version": "c1"},
		"requirements": map[string]any{"identity": true, "liveness": false, "authorization": true, "operation_binding": true}})
	if r.Status != 200 {
		t.Fatalf("define: %d %s", r.Status, r.Body)
	}
	return e
}

// StartAnswer is /journeys/start's answer.
type StartAnswer struct {
	SessionToken  string `json:"session_token"`
	Endpoint      string `json:"endpoint"`
	ExpiresIn     int    `json:"expires_in"`
	Method        string `json:"method"`
	PolicyVersion int    `json:"policy_version"`
}

// StartJourney posts /journeys/start and decodes its 200 answer.
func (e *Env) StartJourney(body map[string]any) StartAnswer {
	e.T.Helper()
	return nodetest.OK[StartAnswer](e.T, "start", e.Post("/journeys/start", body))
}

// CapabilityOf is the person's capability in a journey endpoint (its
// fragment).
func CapabilityOf(t testing.TB, endpoint string) string {
	t.Helper()
	i := strings.Index(endpoint, "#")
	if i < 0 {
		t.Fatalf("endpoint without capability: %s", endpoint)
	}
	return endpoint[i+1:]
}

// AttemptAnswer is the answer of a person's attempt at a journey step.
type AttemptAnswer struct {
	Success  bool     `json:"success"`
	Response string   `json:"response"`
	Status   string   `json:"status"`
	Reasons  []string `json:"reasons"`
}
