package contract_test

import (
	"os"
	"regexp"
	"strconv"
	"testing"

	"github.com/trustd/trustd/node/nodetest"
)

// specOperations are the operations the specification names or implies
// (sections 4.1 to 4.13), as the contract writes them; docs/README.md
// ("How many operations") lists them by section.
var specOperations = []string{
	// 4.1
	"get /v1", "get /v1/openapi.json", "get /v1/postman-collection.json", "get /v1/changelog.json",
	// 4.2
	"post /v1/siteverify", "post /v1/challenge",
	// 4.3
	"post /v1/account/assess", "post /v1/account/feedback", "post /v1/account/password/range", "post /v1/account/trusted-device",
	// 4.4
	"post /v1/agents/decision", "post /v1/agents/approval/status",
	// 4.5
	"post /v1/api-protection/assess", "post /v1/api-protection/feedback",
	// 4.6
	"post /v1/documents/verify", "get /v1/documents/supported",
	// 4.7
	"post /v1/identity/verification/session", "post /v1/identity/verification/{session_id}/document",
	"post /v1/identity/verification/{session_id}/face", "post /v1/identity/verification/{session_id}/complete",
	"get /v1/identity/verification/{session_id}/result", "post /v1/identity/hosted/session",
	// 4.8
	"post /v1/journeys/start", "post /v1/journeys/siteverify", "post /v1/journeys/status", "post /v1/journeys/escalate",
	"post /v1/mobile/journeys/start", "post /v1/mobile/journeys/siteverify", "post /v1/mobile/journeys/status", "post /v1/mobile/journeys/escalate",
	// 4.9
	"post /v1/trust/decision", "post /v1/trust/siteverify", "post /v1/trust/orchestrate", "post /v1/trust/receipts/verify", "post /v1/trust/feedback",
	"post /v1/mobile/trust/decision", "post /v1/mobile/trust/siteverify", "post /v1/mobile/trust/orchestrate",
	"post /v1/mobile/trust/receipts/verify", "post /v1/mobile/trust/feedback",
	// 4.10
	"post /v1/rate-limit/check", "post /v1/mobile/rate-limit/check",
	"post /v1/concurrency/acquire", "post /v1/concurrency/renew", "post /v1/concurrency/release",
	"post /v1/mobile/concurrency/acquire", "post /v1/mobile/concurrency/renew", "post /v1/mobile/concurrency/release",
	"post /v1/dependency-resilience/admit", "post /v1/dependency-resilience/feedback",
	"post /v1/mobile/dependency-resilience/admit", "post /v1/mobile/dependency-resilience/feedback",
	// 4.11
	"get /v1/sandbox/scenarios", "post /v1/sandbox/issue", "post /v1/sandbox/siteverify",
	// 4.12
	"post /v1/detection/feedback", "post /v1/mobile/detection/feedback",
	// 4.13
	"post /v1/edge/preclearance/issue", "get /v1/edge/decision", "post /v1/integrations/messaging/preflight",
	"post /v1/integrations/messaging/events", "get /v1/branding/{profile_id}/logo",
}

// The contract has every operation the specification names or implies,
// and the user guide states the number of public operations a node
// serves.
func TestTheContractHasTheSpecOperationsAndTheGuideItsCount(t *testing.T) {
	tn := nodetest.Start(t)
	var doc struct {
		Paths map[string]map[string]any `json:"paths"`
	}
	tn.Do("GET", "/v1/openapi.json", "", nil).Decode(t, &doc)
	have := map[string]bool{}
	public := 0
	for p, ops := range doc.Paths {
		for m := range ops {
			if m == "parameters" {
				continue
			}
			have[m+" "+p] = true
			if len(p) >= 3 && p[:3] == "/v1" {
				public++
			}
		}
	}
	for _, op := range specOperations {
		if !have[op] {
			t.Errorf("the specification's %s is not in the contract", op)
		}
	}
	if len(specOperations) != 62 {
		t.Errorf("%d specification operations listed; docs/README.md says 62", len(specOperations))
	}
	guide, err := os.ReadFile("../../docs/README.md")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`\*\*(\d+) public operations\*\*`).FindSubmatch(guide)
	if m == nil {
		t.Fatal("docs/README.md does not state the number of public operations")
	}
	if n, _ := strconv.Atoi(string(m[1])); n != public {
		t.Errorf("docs/README.md says %d public operations; the contract has %d (update the count and the list of trustd's own)", n, public)
	}
	if others := regexp.MustCompile(`The other (\d+) public operations`).FindSubmatch(guide); others == nil {
		t.Error("docs/README.md does not say how many operations are trustd's own")
	} else if n, _ := strconv.Atoi(string(others[1])); n != public-len(specOperations) {
		t.Errorf("docs/README.md says %d of trustd's own; the contract has %d", n, public-len(specOperations))
	}
}
