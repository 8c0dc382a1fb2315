package actors

import (
	"fmt"
	"reflect"
	"sync/atomic"
	"testing"
	"time"
)

func TestActivitySurvivesTheWire(t *testing.T) {
	op := &Activity{Key: "acs/w/h", Member: "dev", Record: true, Failed: true, Succeeded: false, WindowNs: 60e9,
		RetainNs: 3600e9, MaxMembers: 8, Failures: 2.5, Distinct: 3, Seen: true, Known: true}
	if got := roundTrip(t, op); !reflect.DeepEqual(got, op) {
		t.Fatalf("got %+v, want %+v", got, op)
	}
	a := &PutAssessment{Assessment: Assessment{ID: "acc/1", WorkspaceID: "w", SubjectKey: "s", DeviceKey: "d", Risk: 0.5}}
	if got := roundTrip(t, a); !reflect.DeepEqual(got, a) {
		t.Fatalf("an assessment lost its device key: %+v", got)
	}
}

// TestActivity drives one shard by messages, the way the router does, and
// moves the shard clock instead of sleeping.
func TestActivity(t *testing.T) {
	var now atomic.Int64
	now.Store(1_000_000_000_000)
	s := mustNewSystem(t, func() int64 { return now.Load() })
	const win = int64(60e9)
	ask := func(op Activity) Activity {
		t.Helper()
		op.WindowNs, op.RetainNs = win, 10*win
		if op.MaxMembers == 0 {
			op.MaxMembers = 3
		}
		if err := s.Ask(2, &op, time.Second); err != nil {
			t.Fatal(err)
		}
		return op
	}
	steps := []struct {
		name    string
		advance int64
		op      Activity
		check   func(Activity) error
	}{
		{"a read of an unknown key answers nothing and creates nothing", 0, Activity{Key: "k", Member: "d1"},
			want(0, 0, false, false)},
		{"the first event with a device counts it, as seen but not known", 0, Activity{Key: "k", Member: "d1", Record: true, Failed: true},
			want(1, 1, false, false)},
		{"a second failure with the same device counts twice, one distinct member", 0, Activity{Key: "k", Member: "d1", Record: true, Failed: true},
			want(2, 1, true, false)},
		{"a success makes the device known afterwards", 0, Activity{Key: "k", Member: "d1", Record: true, Succeeded: true},
			want(2, 1, true, false)},
		{"a read sees the known device without counting", 0, Activity{Key: "k", Member: "d1"},
			want(2, 1, true, true)},
		{"another device is a second distinct member", 0, Activity{Key: "k", Member: "d2", Record: true},
			want(2, 2, false, false)},
		{"half a window later the previous failures count half", win + win/2, Activity{Key: "k"},
			want(1, 0, false, false)},
		{"two windows later failures are gone but devices are retained", win, Activity{Key: "k", Member: "d1"},
			want(0, 0, true, true)},
		{"recording d1 again refreshes it", 0, Activity{Key: "k", Member: "d1", Record: true}, want(0, 1, true, true)},
		{"a third member fills the set", 0, Activity{Key: "k", Member: "d3", Record: true}, want(0, 2, false, false)},
		{"a fourth member evicts d2, the least recently seen", 0, Activity{Key: "k", Member: "d4", Record: true}, want(0, 3, false, false)},
		{"so d2 is new again", 0, Activity{Key: "k", Member: "d2"}, want(0, 3, false, false)},
		{"and d1 is still known", 0, Activity{Key: "k", Member: "d1"}, want(0, 3, true, true)},
		{"after the retention the key is forgotten", 11 * win, Activity{Key: "k", Member: "d1"}, want(0, 0, false, false)},
	}
	for _, st := range steps {
		now.Add(st.advance)
		got := ask(st.op)
		if err := st.check(got); err != nil {
			t.Fatalf("%s: %v (%+v)", st.name, err, got)
		}
	}
}

func want(failures float64, distinct int, seen, known bool) func(Activity) error {
	return func(a Activity) error {
		if a.Failures != failures || a.Distinct != distinct || a.Seen != seen || a.Known != known {
			return fmt.Errorf("got failures=%v distinct=%d seen=%v known=%v, want %v %d %v %v",
				a.Failures, a.Distinct, a.Seen, a.Known, failures, distinct, seen, known)
		}
		return nil
	}
}

func TestActivityMembersAreBounded(t *testing.T) {
	s := mustNewSystem(t, nil)
	for i := 0; i < 500; i++ {
		op := &Activity{Key: "dev", Member: fmt.Sprint("subject-", i), Record: true, WindowNs: int64(time.Hour), MaxMembers: 1000}
		if err := s.Ask(1, op, time.Second); err != nil {
			t.Fatal(err)
		}
		if op.Distinct > MaxActivityMembers {
			t.Fatalf("the set grew to %d members, over %d", op.Distinct, MaxActivityMembers)
		}
	}
}

func TestActivityOfNeverProvenKeysIsForgottenSooner(t *testing.T) {
	var now atomic.Int64
	now.Store(1_000_000_000_000)
	s := mustNewSystem(t, func() int64 { return now.Load() })
	const win = int64(60e9)
	ask := func(key string, record, succeeded bool) *Activity {
		t.Helper()
		op := &Activity{Key: key, Member: "dev", Record: record, Failed: !succeeded && record, Succeeded: succeeded,
			WindowNs: win, RetainNs: 100 * win, MaxMembers: 4}
		if err := s.Ask(0, op, time.Second); err != nil {
			t.Fatal(err)
		}
		return op
	}
	ask("made-up", true, false)
	ask("real", true, true)
	now.Add(2*win + 1)
	if op := ask("made-up", false, false); op.Seen {
		t.Fatal("a key that only ever failed was kept beyond two windows")
	}
	if op := ask("real", false, false); !op.Known {
		t.Fatal("a key with a succeeded member was forgotten before its retention")
	}
}

func TestAFullActivityTableForgetsRatherThanRefuses(t *testing.T) {
	s := NewSystem(Config{Shards: 1, MaxKeysPerTable: 4, SweepEvery: 5 * time.Millisecond}, nil)
	t.Cleanup(s.Stop)
	for i := 0; i < 20; i++ {
		op := &Activity{Key: fmt.Sprint("subject-", i), Member: "d", Record: true, Succeeded: i == 0, WindowNs: 60e9, RetainNs: 3600e9, MaxMembers: 4}
		if err := s.Ask(0, op, time.Second); err != nil {
			t.Fatalf("event %d: %v", i, err)
		}
	}
	deadline := time.Now().Add(5 * time.Second)
	for s.HeldKeys()[KindActivity] == 0 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond) // poll until a sweep published the count
	}
	if n := s.HeldKeys()[KindActivity]; n == 0 || n > 4 {
		t.Fatalf("the table holds %d keys, want 1 to 4", n)
	}
	op := &Activity{Key: "subject-0", Member: "d", WindowNs: 60e9}
	if err := s.Ask(0, op, time.Second); err != nil || !op.Known {
		t.Fatalf("the one proven key was evicted before the unproven ones: %+v %v", op, err)
	}
}
