package token

import "testing"

func TestJourneyTokensRoundTripAndAreDomainSeparated(t *testing.T) {
	k := NewKey("k1", []byte("secret"))
	keys := func(id string) *Key {
		if id == "k1" {
			return k
		}
		return nil
	}
	j := Journey{ID: [16]byte{1, 2, 3}, WorkspaceID: "ws", Expires: 1_800_000_300}
	session, person := j.Sign(k, false), j.Sign(k, true)
	got, err := DecodeJourney(session, false, keys)
	if err != nil || got.ID != j.ID || got.WorkspaceID != "ws" || got.Expires != j.Expires || got.KeyID != "k1" {
		t.Fatalf("session token: %+v %v", got, err)
	}
	if _, err := DecodeJourney(person, true, keys); err != nil {
		t.Fatalf("capability: %v", err)
	}
	// Each verifies only as itself, never as a proof or the other.
	if _, err := DecodeJourney(session, true, keys); err == nil {
		t.Fatal("a session token verified as the person's capability")
	}
	if _, err := DecodeJourney(person, false, keys); err == nil {
		t.Fatal("a capability verified as a session token")
	}
	if _, err := DecodeProof(session, keys); err == nil {
		t.Fatal("a session token verified as a proof")
	}
	// A capability relabelled as a session token fails its MAC.
	forged := JourneySessionPrefix + person[len(JourneyPersonPrefix):]
	if _, err := DecodeJourney(forged, false, keys); err == nil {
		t.Fatal("a relabelled capability verified")
	}
}

func FuzzDecodeJourney(f *testing.F) {
	k := NewKey("k1", []byte("secret"))
	keys := func(id string) *Key {
		if id == "k1" {
			return k
		}
		return nil
	}
	j := Journey{ID: [16]byte{9}, WorkspaceID: "w", Expires: 7}
	f.Add(j.Sign(k, false))
	f.Add(j.Sign(k, true))
	f.Add(JourneySessionPrefix + "AQ")
	f.Fuzz(func(t *testing.T, text string) {
		for _, person := range []bool{false, true} {
			got, err := DecodeJourney(text, person, keys)
			if err != nil {
				continue
			}
			// Whatever verifies re-signs to the same text.
			if again := got.Sign(k, person); again != text {
				t.Fatalf("%q decoded and re-signed to %q", text, again)
			}
		}
	})
}
