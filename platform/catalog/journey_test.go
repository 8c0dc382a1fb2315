package catalog

import (
	"errors"
	"testing"
	"time"
)

func applyJ(t *testing.T, c *Catalog, cmd Command) (*Catalog, any, error) {
	t.Helper()
	tx := Begin(c)
	v, err := cmd.Apply(tx)
	if err != nil {
		return c, nil, err
	}
	return tx.Commit(c.Index + 1), v, nil
}

func journeyCatalog() *Catalog {
	c := Empty()
	c.Workspaces["ws"] = &Workspace{ID: "ws"}
	return c
}

func TestJourneyPolicyVersionIsSetByTheCatalog(t *testing.T) {
	c := journeyCatalog()
	for want := 1; want <= 3; want++ {
		// The proposer's policy_version is ignored: the catalog counts.
		var v any
		var err error
		c, v, err = applyJ(t, c, &PutJourney{Journey: Journey{WorkspaceID: "ws", Key: "pay", Name: "Pay", PolicyVersion: 99}})
		if err != nil || v.(*Journey).PolicyVersion != want {
			t.Fatalf("put %d: %+v %v", want, v, err)
		}
	}
}

func TestJourneySessionsAreCappedAndPruned(t *testing.T) {
	c := journeyCatalog()
	now := time.Unix(1_800_000_000, 0)
	w := &WorkspaceJourneySessions{Sessions: map[string]*JourneySession{}}
	for i := 0; i < MaxJourneySessionsPerWorkspace; i++ {
		id := string(rune('a'+i%26)) + time.Duration(i).String()
		w.Sessions[id] = &JourneySession{ID: id, WorkspaceID: "ws", ExpiresAt: now.Add(time.Minute)}
	}
	c.JourneySessions = map[string]*WorkspaceJourneySessions{"ws": w}
	_, _, err := applyJ(t, c, &CreateJourneySession{Session: JourneySession{ID: "new", WorkspaceID: "ws", ExpiresAt: now.Add(5 * time.Minute)}, At: now})
	if !errors.Is(err, ErrJourneySessionsFull) {
		t.Fatalf("a full workspace: %v", err)
	}
	// Once they expired past the retention, the next create prunes them.
	later := now.Add(time.Minute + JourneySessionRetention + time.Second)
	c2, _, err := applyJ(t, c, &CreateJourneySession{Session: JourneySession{ID: "new", WorkspaceID: "ws", ExpiresAt: later.Add(5 * time.Minute)}, At: later})
	if err != nil || c2.JourneySessionCount("ws") != 1 {
		t.Fatalf("prune: %v, %d left", err, c2.JourneySessionCount("ws"))
	}
	if c.JourneySessionCount("ws") != MaxJourneySessionsPerWorkspace {
		t.Fatal("the previous catalog version changed")
	}
}

func TestJourneySessionTransitionIsCompareAndSet(t *testing.T) {
	c := journeyCatalog()
	c, v, err := applyJ(t, c, &CreateJourneySession{Session: JourneySession{ID: "s1", WorkspaceID: "ws", Status: "started"}})
	if err != nil {
		t.Fatal(err)
	}
	s := *v.(*JourneySession)
	next := s
	next.Version, next.Status = s.Version+1, "completed"
	c2, _, err := applyJ(t, c, &TransitionJourneySession{Next: next})
	if err != nil {
		t.Fatal(err)
	}
	// A second transition computed from the same version is refused.
	other := s
	other.Version, other.Status = s.Version+1, "failed"
	if _, _, err := applyJ(t, c2, &TransitionJourneySession{Next: other}); !errors.Is(err, ErrJourneySessionChanged) {
		t.Fatalf("stale transition: %v", err)
	}
}

func TestPasskeyCapsAndCounter(t *testing.T) {
	c := journeyCatalog()
	var err error
	for i := 0; i < MaxPasskeysPerSubject; i++ {
		c, _, err = applyJ(t, c, &PutPasskey{WorkspaceID: "ws", SubjectHash: "h", Passkey: Passkey{CredentialID: []byte{byte(i)}, PublicKey: []byte{1}}})
		if err != nil {
			t.Fatal(err)
		}
	}
	if _, _, err = applyJ(t, c, &PutPasskey{WorkspaceID: "ws", SubjectHash: "h", Passkey: Passkey{CredentialID: []byte{99}, PublicKey: []byte{1}}}); !errors.Is(err, ErrConflict) {
		t.Fatalf("eleventh passkey: %v", err)
	}
	// The same credential id cannot be registered for another subject.
	if _, _, err = applyJ(t, c, &PutPasskey{WorkspaceID: "ws", SubjectHash: "other", Passkey: Passkey{CredentialID: []byte{0}, PublicKey: []byte{1}}}); !errors.Is(err, ErrConflict) {
		t.Fatalf("a credential of another subject: %v", err)
	}
	use := func(n uint32) error {
		var err error
		c, _, err = applyJ(t, c, &PutPasskey{WorkspaceID: "ws", SubjectHash: "h", Use: true, Passkey: Passkey{CredentialID: []byte{0}, PublicKey: []byte{1}, SignCount: n}})
		return err
	}
	if err := use(3); err != nil {
		t.Fatal(err)
	}
	for _, n := range []uint32{3, 2, 0} {
		if err := use(n); !errors.Is(err, ErrPasskeyCounter) {
			t.Fatalf("counter %d after 3: %v", n, err)
		}
	}
	c, v, err := applyJ(t, c, &DeleteSubjectCredentials{WorkspaceID: "ws", SubjectHash: "h"})
	if err != nil || v.(int) != MaxPasskeysPerSubject || c.Passkeys["ws"].Count != 0 || len(c.PasskeysOf("ws", "h")) != 0 {
		t.Fatalf("erase: %v %v", v, err)
	}
}
