package catalog

import "testing"

// A PATCH that sets a pointer field to its empty value (no hostnames, an
// empty list of event types) keeps it through the Raft log: json v2's
// omitempty dropped them, so the change was lost.
func TestEmptyPatchValuesSurviveTheLog(t *testing.T) {
	empty := []string{}
	cmd := &UpdateSite{ID: "s", Patch: SitePatch{Hostnames: &empty}}
	b, err := Encode(cmd)
	if err != nil {
		t.Fatal(err)
	}
	got, err := Decode(cmd.Kind(), b)
	if err != nil {
		t.Fatal(err)
	}
	if h := got.(*UpdateSite).Patch.Hostnames; h == nil || len(*h) != 0 {
		t.Fatalf("hostnames set to [] came back as %v (%s)", h, b)
	}
	// A webhook endpoint's description cleared with "".
	none := ""
	wh := &UpdateWebhookEndpoint{ID: "e", Description: &none}
	if b, err = Encode(wh); err != nil {
		t.Fatal(err)
	}
	if got, err = Decode(wh.Kind(), b); err != nil {
		t.Fatal(err)
	}
	if d := got.(*UpdateWebhookEndpoint).Description; d == nil || *d != "" {
		t.Fatalf("description cleared came back as %v (%s)", d, b)
	}
}
