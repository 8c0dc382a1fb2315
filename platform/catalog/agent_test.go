package catalog

import (
	"errors"
	"fmt"
	"testing"
	"time"
)

func TestAgentRegistry(t *testing.T) {
	key := []AgentKey{{Sealed: []byte("sealed")}}
	c, err := mustApplyTraffic(t, Empty(),
		&CreateWorkspace{Workspace: Workspace{ID: "w1"}},
		&CreateWorkspace{Workspace: Workspace{ID: "w2"}},
		&PutAgent{Agent: Agent{ID: "a1", WorkspaceID: "w1", Name: "bot", Status: "active", Keys: key}},
	)
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		cmd  Command
		want error
	}{
		{"unknown workspace", &PutAgent{Agent: Agent{ID: "a2", WorkspaceID: "nope", Name: "x", Keys: key}}, ErrNotFound},
		{"other workspace's agent", &PutAgent{Agent: Agent{ID: "a1", WorkspaceID: "w2", Name: "x", Keys: key}}, ErrNotFound},
		{"duplicate name", &PutAgent{Agent: Agent{ID: "a2", WorkspaceID: "w1", Name: "bot", Keys: key}}, ErrConflict},
		{"no key", &PutAgent{Agent: Agent{ID: "a2", WorkspaceID: "w1", Name: "x"}}, ErrConflict},
		{"too many keys", &PutAgent{Agent: Agent{ID: "a2", WorkspaceID: "w1", Name: "x", Keys: make([]AgentKey, MaxAgentKeys+1)}}, ErrConflict},
		{"same name elsewhere", &PutAgent{Agent: Agent{ID: "a3", WorkspaceID: "w2", Name: "bot", Keys: key}}, nil},
		{"delete from other workspace", &DeleteAgent{WorkspaceID: "w2", ID: "a1"}, ErrNotFound},
	}
	for _, tc := range cases {
		_, err := mustApplyTraffic(t, c, tc.cmd)
		if tc.want == nil && err != nil || tc.want != nil && !errors.Is(err, tc.want) {
			t.Errorf("%s: got %v, want %v", tc.name, err, tc.want)
		}
	}
	t.Run("cap per workspace", func(t *testing.T) {
		tx := Begin(c)
		for i := 1; i < MaxAgentsPerWorkspace; i++ {
			if _, err := (&PutAgent{Agent: Agent{ID: fmt.Sprint("x", i), WorkspaceID: "w1", Name: fmt.Sprint("n", i), Keys: key}}).Apply(tx); err != nil {
				t.Fatal(err)
			}
		}
		_, err := (&PutAgent{Agent: Agent{ID: "over", WorkspaceID: "w1", Name: "over", Keys: key}}).Apply(tx)
		if !errors.Is(err, ErrConflict) {
			t.Fatalf("agent over the cap: %v", err)
		}
	})
	t.Run("deleting the workspace deletes its agents", func(t *testing.T) {
		c2, err := mustApplyTraffic(t, c, &DeleteWorkspace{ID: "w1"})
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := c2.Agents["a1"]; ok {
			t.Fatal("agent survived its workspace")
		}
	})
	t.Run("commands round-trip the wire", func(t *testing.T) {
		b, err := Encode(&PutAgent{Agent: *c.Agents["a1"]})
		if err != nil {
			t.Fatal(err)
		}
		cmd, err := Decode("agent.put", b)
		if err != nil || cmd.(*PutAgent).Agent.Name != "bot" {
			t.Fatalf("decode: %v %+v", err, cmd)
		}
	})
}

// Deleting an agent deletes its approval requests in the same command, so
// none can be approved or consumed afterwards; other agents' stay.
func TestDeleteAgentDeletesItsApprovals(t *testing.T) {
	key := []AgentKey{{Sealed: []byte("sealed")}}
	now := time.Unix(1_800_000_000, 0).UTC()
	ap := func(id, agent string) Command {
		return &CreateApproval{Approval: Approval{ID: id, WorkspaceID: "w1", AgentID: agent, Status: "pending", CreatedAt: now, ExpiresAt: now.Add(time.Hour)}}
	}
	c, err := mustApplyTraffic(t, Empty(),
		&CreateWorkspace{Workspace: Workspace{ID: "w1"}},
		&PutAgent{Agent: Agent{ID: "a1", WorkspaceID: "w1", Name: "bot", Status: "active", Keys: key}},
		&PutAgent{Agent: Agent{ID: "a2", WorkspaceID: "w1", Name: "other", Status: "active", Keys: key}},
		ap("p1", "a1"), ap("p2", "a1"), ap("p3", "a1"), ap("q1", "a2"),
		&DecideApproval{WorkspaceID: "w1", ID: "p2", Approve: true, By: "alice", At: now},
		&DecideApproval{WorkspaceID: "w1", ID: "p3", Approve: true, By: "alice", At: now},
		&ConsumeApproval{AgentID: "a1", ID: "p3", At: now},
	)
	if err != nil {
		t.Fatal(err)
	}
	tx := Begin(c)
	v, err := (&DeleteAgent{WorkspaceID: "w1", ID: "a1", At: now.Add(time.Minute)}).Apply(tx)
	if err != nil {
		t.Fatal(err)
	}
	r := v.(*DeleteAgentResult)
	if r.Approvals != 3 || r.Pending != 1 || r.ApprovedUnconsumed != 1 {
		t.Fatalf("result %+v, want 3 approvals, 1 pending, 1 approved unconsumed", r)
	}
	c2 := tx.Commit(100)
	for _, id := range []string{"p1", "p2", "p3"} {
		if _, ok := c2.Approvals[id]; ok {
			t.Fatalf("approval %s survived its agent", id)
		}
	}
	if _, ok := c2.Approvals["q1"]; !ok {
		t.Fatal("another agent's approval was deleted")
	}
	if _, err := mustApplyTraffic(t, c2, &DecideApproval{WorkspaceID: "w1", ID: "p1", Approve: true, By: "bob", At: now}); !errors.Is(err, ErrNotFound) {
		t.Fatalf("approving a deleted agent's approval: %v", err)
	}
	if _, err := mustApplyTraffic(t, c2, &ConsumeApproval{AgentID: "a1", ID: "p2", At: now}); !errors.Is(err, ErrNotFound) {
		t.Fatalf("consuming a deleted agent's approval: %v", err)
	}
}
