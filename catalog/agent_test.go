package catalog

import (
	"errors"
	"fmt"
	"testing"
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
