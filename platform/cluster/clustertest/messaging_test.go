package clustertest

import (
	"errors"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/trustd/trustd/platform/catalog"
	"github.com/trustd/trustd/risk/messaging"
)

// Messaging preflights spread over three nodes share their counters, and
// a signed request's nonce used through one node is refused through the
// others: the pumping pattern is blocked whichever node the provider hits.
func TestMessagingPreflightAcrossNodes(t *testing.T) {
	c := Start(t, 3)
	sealer := messaging.NewSealer("clustertest-key")
	set, secret, err := sealer.Rotate(nil, "w1", 0, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	mod := func(i int) *messaging.Module { return messaging.New(c.Nodes[i].Router(), sealer, time.Now) }
	caller := messaging.Caller{WorkspaceID: "w1", ScopeKey: []byte("scope"),
		Policy: messagingPolicy(5)}

	body := []byte(`{"message_reference":"x","status":"verified"}`)
	ts := strconv.FormatInt(time.Now().Unix(), 10)
	req := messaging.Signed{Workspace: "w1", Timestamp: ts, Nonce: "cluster-nonce-000001", Body: body,
		Signature: messaging.Sign([]byte(secret), ts, "cluster-nonce-000001", body)}
	if err := mod(1).Verify(&set, req); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 3; i++ {
		if err := mod(i).Verify(&set, req); !errors.Is(err, messaging.ErrNonceReused) {
			t.Fatalf("replay through node-%d: %v", i, err)
		}
	}

	var decisions []string
	for i := 0; i < 7; i++ {
		d, err := mod(i%3).Preflight(caller, messaging.PreflightRequest{DestinationNumber: fmt.Sprintf("+3362222%04d", i),
			Country: "FR", Channel: "sms", TemplateKind: "otp_login", MessageReference: "pump-" + strconv.Itoa(i)})
		if err != nil {
			t.Fatal(err)
		}
		decisions = append(decisions, d.Decision)
	}
	want := []string{"allow", "allow", "allow", "allow", "allow", "block", "block"}
	if fmt.Sprint(decisions) != fmt.Sprint(want) {
		t.Fatalf("decisions across nodes %v, want %v", decisions, want)
	}
	// A verified event through any node counts for a message allowed
	// through another.
	d, err := mod(0).Preflight(caller, messaging.PreflightRequest{DestinationNumber: "+33611110000", Country: "FR", Channel: "sms",
		TemplateKind: "otp_login", MessageReference: "ok-1"})
	if err != nil || d.Decision != "allow" {
		t.Fatalf("normal send: %+v %v", d, err)
	}
	if r, err := mod(2).Event(caller, messaging.EventRequest{MessageReference: "ok-1", Status: "verified"}); err != nil || r.Duplicate {
		t.Fatalf("event through node-2: %+v %v", r, err)
	}
	if r, err := mod(1).Event(caller, messaging.EventRequest{MessageReference: "ok-1", Status: "verified"}); err != nil || !r.Duplicate {
		t.Fatalf("the same event through node-1: %+v %v", r, err)
	}
}

func messagingPolicy(minSends int) (p catalog.MessagingPolicy) {
	p.ConversionMinSends, p.ConversionMinPercent, p.PrefixLimit = minSends, 50, 1000
	return p
}
