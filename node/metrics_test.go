package node

import (
	"math"
	"testing"
	"time"

	"github.com/hashicorp/raft"
)

func TestLastContactSecondsGrowsOnAFollowerCutOffFromItsLeader(t *testing.T) {
	now := time.Now()
	for _, tc := range []struct {
		name  string
		state raft.RaftState
		last  time.Time
		want  float64
	}{
		{"the leader is in contact with itself", raft.Leader, time.Time{}, 0},
		{"a follower that heard from the leader a moment ago", raft.Follower, now.Add(-50 * time.Millisecond), 0.05},
		{"a follower cut off for a minute", raft.Follower, now.Add(-time.Minute), 60},
		{"a node that never heard from a leader", raft.Candidate, time.Time{}, math.Inf(1)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := lastContactSeconds(tc.state, tc.last, now); math.Abs(got-tc.want) > 1e-9 && got != tc.want {
				t.Fatalf("got %v, want %v", got, tc.want)
			}
		})
	}
}
