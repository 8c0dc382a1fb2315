package cluster

import (
	"slices"
	"testing"
	"time"

	"github.com/hashicorp/raft"
)

func TestPlanVoters(t *testing.T) {
	now := time.Unix(1_000_000, 0)
	voter := func(id string) raft.Server {
		return raft.Server{ID: raft.ServerID(id), Address: raft.ServerAddress(id + ":8300"), Suffrage: raft.Voter}
	}
	nonvoter := func(id string) raft.Server {
		s := voter(id)
		s.Suffrage = raft.Nonvoter
		return s
	}
	member := func(id string) Meta {
		return Meta{ID: id, PeerAddr: id + ":8090", RaftAddr: id + ":8300", State: Ready}
	}
	members := func(ms ...Meta) map[string]Meta {
		out := map[string]Meta{}
		for _, m := range ms {
			out[m.ID] = m
		}
		return out
	}
	set := func(ids ...string) map[string]bool {
		out := map[string]bool{}
		for _, id := range ids {
			out[id] = true
		}
		return out
	}
	ago := func(d time.Duration, ids ...string) map[string]time.Time {
		out := map[string]time.Time{}
		for _, id := range ids {
			out[id] = now.Add(-d)
		}
		return out
	}
	draining := member("c")
	draining.State = Draining
	moved := member("b")
	moved.RaftAddr = "b2:8300"
	noRaft := member("b")
	noRaft.RaftAddr = ""
	tests := []struct {
		name string
		view voterView
		want []voterChange
	}{
		{"an unverified gossip member is never added to raft",
			voterView{Servers: []raft.Server{voter("a")}, Members: members(member("a"), member("ghost"))},
			nil},
		{"a verified member enters as a non-voter, never straight as a voter",
			voterView{Servers: []raft.Server{voter("a")}, Members: members(member("a"), member("b")), Verified: set("b")},
			[]voterChange{{Kind: addNonvoter, ID: "b", Addr: "b:8300"}}},
		{"a non-voter that has not caught up is not promoted",
			voterView{Servers: []raft.Server{voter("a"), nonvoter("b")}, Members: members(member("a"), member("b")), Verified: set("b"),
				Since: ago(time.Second, "b")},
			nil},
		{"a verified non-voter that caught up is promoted",
			voterView{Servers: []raft.Server{voter("a"), nonvoter("b")}, Members: members(member("a"), member("b")), Verified: set("b"),
				CaughtUp: set("b"), Since: ago(time.Second, "b")},
			[]voterChange{{Kind: promote, ID: "b", Addr: "b:8300"}}},
		{"a caught-up non-voter whose verification lapsed (new address, not yet probed) is not promoted",
			voterView{Servers: []raft.Server{voter("a"), nonvoter("b")}, Members: members(member("a"), member("b")),
				CaughtUp: set("b"), Since: ago(time.Second, "b")},
			nil},
		{"promotions stop at the voter limit",
			voterView{Servers: []raft.Server{voter("a"), voter("b"), nonvoter("c"), nonvoter("d")},
				Members: members(member("a"), member("b"), member("c"), member("d")), Verified: set("b", "c", "d"),
				CaughtUp: set("b", "c", "d"), MaxVoters: 3},
			[]voterChange{{Kind: promote, ID: "c", Addr: "c:8300"}}},
		{"a draining member is neither added nor promoted",
			voterView{Servers: []raft.Server{voter("a"), nonvoter("c")}, Members: members(member("a"), draining), Verified: set("c"), CaughtUp: set("c")},
			nil},
		{"a member without a raft address is not added",
			voterView{Servers: []raft.Server{voter("a")}, Members: members(member("a"), noRaft), Verified: set("b")},
			nil},
		{"a verified member's new raft address is taken, keeping its vote",
			voterView{Servers: []raft.Server{voter("a"), voter("b")}, Members: members(member("a"), moved), Verified: set("b"), CaughtUp: set("b")},
			[]voterChange{{Kind: updateAddr, ID: "b", Addr: "b2:8300", Voter: true}}},
		{"an unverified claim of a new raft address for a voter is ignored",
			voterView{Servers: []raft.Server{voter("a"), voter("b")}, Members: members(member("a"), moved), CaughtUp: set("b")},
			nil},
		{"a ghost voter never seen caught up is removed after the bound",
			voterView{Servers: []raft.Server{voter("a"), voter("b"), voter("c"), voter("ghost")},
				Members: members(member("a"), member("b"), member("c"), member("ghost")), Verified: set("b", "c"),
				CaughtUp: set("b", "c"), Since: ago(31*time.Second, "b", "c", "ghost")},
			[]voterChange{{Kind: remove, ID: "ghost"}}},
		{"a ghost voter is kept until the bound has passed",
			voterView{Servers: []raft.Server{voter("a"), voter("ghost")}, Members: members(member("a"), member("ghost")),
				Since: ago(29*time.Second, "ghost")},
			nil},
		{"a server gone from gossip and never seen caught up by this leader is removed after the bound",
			voterView{Servers: []raft.Server{voter("a"), voter("b"), voter("c")}, Members: members(member("a"), member("b")),
				Verified: set("b"), CaughtUp: set("b"), Since: ago(time.Minute, "b", "c")},
			[]voterChange{{Kind: remove, ID: "c"}}},
		{"a server gone from gossip that this leader saw caught up waits for the reaper",
			voterView{Servers: []raft.Server{voter("a"), voter("b"), voter("c")}, Members: members(member("a"), member("b")),
				Verified: set("b"), CaughtUp: set("b", "c"), Since: ago(time.Minute, "b", "c")},
			nil},
		{"a live verified member slow to catch up stays a non-voter",
			voterView{Servers: []raft.Server{voter("a"), nonvoter("b")}, Members: members(member("a"), member("b")), Verified: set("b"),
				Since: ago(time.Hour, "b")},
			nil},
		{"the leader never removes itself",
			voterView{Servers: []raft.Server{voter("a")}, Members: members(member("a")), Since: ago(time.Hour, "a")},
			nil},
		{"a removed ghost's vote frees a place for a caught-up non-voter",
			voterView{Servers: []raft.Server{voter("a"), voter("ghost"), nonvoter("b")}, Members: members(member("a"), member("b")),
				Verified: set("b"), CaughtUp: set("b"), Since: ago(time.Minute, "ghost", "b"), MaxVoters: 2},
			[]voterChange{{Kind: remove, ID: "ghost"}, {Kind: promote, ID: "b", Addr: "b:8300"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := tt.view
			v.Self, v.Now, v.Bound = "a", now, CatchUpBound
			if v.MaxVoters == 0 {
				v.MaxVoters = MaxVoters
			}
			if got := planVoters(v); !slices.Equal(got, tt.want) {
				t.Fatalf("planVoters = %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestIsCaughtUp(t *testing.T) {
	tests := []struct {
		name                   string
		last, addIndex, commit uint64
		want                   bool
	}{
		{"a follower that has received nothing has not caught up", 0, 0, 10, false},
		{"a follower at the commit index has caught up", 40, 30, 40, true},
		{"a follower a little behind the commit index has caught up", 40, 30, 40 + MaxTrailing, true},
		{"a follower further behind than MaxTrailing has not", 40, 30, 41 + MaxTrailing, false},
		{"a follower without the entry that added it has not", 29, 30, 29, false},
		{"a follower ahead of the commit index the leader had when it asked has", 50, 0, 45, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := isCaughtUp(tt.last, tt.addIndex, tt.commit); got != tt.want {
				t.Fatalf("isCaughtUp(%d, %d, %d) = %v", tt.last, tt.addIndex, tt.commit, got)
			}
		})
	}
}
