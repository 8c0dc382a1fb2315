package ops_test

import (
	"testing"
	"time"

	"github.com/trustd/trustd/node/nodetest"
)

// TestTheNodeOperationsOfASingleNode drives the cluster and snapshot
// operations on a real node: it sees itself as the only, leading member;
// its summary counts the answers it gave; the only member refuses to
// leave and keeps serving; a backup is an archive and a restore of
// garbage is refused before it touches the state.
func TestTheNodeOperationsOfASingleNode(t *testing.T) {
	n := nodetest.Start(t)
	tok := n.N.AdminToken()

	var st struct {
		Leader string `json:"leader"`
		Nodes  []struct {
			NodeID     string `json:"node_id"`
			Self       bool   `json:"self"`
			Partitions int    `json:"partitions"`
			Health     string `json:"health"`
		} `json:"nodes"`
	}
	r := n.Do("GET", "/admin/v1/cluster", tok, nil)
	if r.Status != 200 {
		t.Fatalf("cluster status: %d %s", r.Status, r.Body)
	}
	r.Decode(t, &st)
	if len(st.Nodes) != 1 || !st.Nodes[0].Self || st.Nodes[0].Partitions != 1024 || st.Nodes[0].Health != "ok" || st.Leader != st.Nodes[0].NodeID {
		t.Fatalf("cluster status of a single node: %+v", st)
	}

	var m struct {
		Nodes []struct {
			NodeID  string `json:"node_id"`
			Modules []struct {
				Module   string `json:"module"`
				Requests uint64 `json:"requests"`
			} `json:"modules"`
		} `json:"nodes"`
	}
	r = n.Do("GET", "/admin/v1/cluster/metrics", tok, nil)
	if r.Status != 200 {
		t.Fatalf("cluster metrics: %d %s", r.Status, r.Body)
	}
	r.Decode(t, &m)
	if len(m.Nodes) != 1 || m.Nodes[0].NodeID != st.Nodes[0].NodeID {
		t.Fatalf("cluster metrics of a single node: %s", r.Body)
	}
	counted := false
	for _, mod := range m.Nodes[0].Modules {
		counted = counted || mod.Module == "Admin" && mod.Requests >= 1
	}
	if !counted {
		t.Fatalf("the status read is not counted: %s", r.Body)
	}

	n.Do("POST", "/admin/v1/cluster/leave", tok, nil).Want(t, 409, "conflict")
	select {
	case err := <-n.N.Done():
		t.Fatalf("the node stopped: %v", err)
	case <-time.After(300 * time.Millisecond):
	}
	if r := n.Do("GET", "/v1/", "", nil); r.Status != 200 {
		t.Fatalf("the node no longer answers: %d", r.Status)
	}

	r = n.Do("GET", "/admin/v1/snapshot", tok, nil)
	if r.Status != 200 || r.Header.Get("Content-Type") != "application/octet-stream" || len(r.Body) < 64 {
		t.Fatalf("snapshot: %d %q, %d bytes", r.Status, r.Header.Get("Content-Type"), len(r.Body))
	}
	n.Do("POST", "/admin/v1/snapshot/restore", tok, "not an archive").Want(t, 400, "bad-request")
	n.Do("GET", "/admin/v1/cluster", "", nil).Want(t, 401, "unauthorized")
}
