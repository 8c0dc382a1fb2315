package persistence

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
	"github.com/hashicorp/raft"
	gproto "google.golang.org/protobuf/proto"

	"github.com/trustd/trustd/platform/catalog"
	"github.com/trustd/trustd/platform/persistence/backup"
	"github.com/trustd/trustd/platform/proto/raftpb"
)

// Backup and restore of the whole replicated state, as `consul snapshot
// save|restore` do: a backup is the catalog at a consistency point the
// leader vouches for, taken without stopping anything; a restore replaces
// the catalog of a running (typically fresh) cluster through the leader,
// which installs it as a Raft snapshot on every member.
//
// What a backup is not: actor state. Single-use markers (redeemed
// response tokens, nonces, idempotency keys), buckets and leases live in
// the shard actors' memory and their replicas, never in Raft, so a
// restore brings none of them back (docs/operations.md says what that
// means for tokens redeemed before the backup).

// ErrBadArchive is returned by RestoreBackup for an archive that does not
// decode or whose catalog does not load; nothing was changed.
var ErrBadArchive = errors.New("persistence: backup archive refused")

// NotLeaderError is RestoreBackup's answer on a follower: a restore runs
// on the leader, named here (LeaderAPI is empty when unknown).
type NotLeaderError struct{ LeaderID, LeaderAPI string }

func (e *NotLeaderError) Error() string {
	if e.LeaderID == "" {
		return "persistence: restore runs on the raft leader; none is known (election under way?)"
	}
	return fmt.Sprintf("persistence: restore runs on the raft leader: node %s (API %s)", e.LeaderID, e.LeaderAPI)
}

func (e *NotLeaderError) Unwrap() error { return ErrNotLeader }

// restoreGap lifts a restored catalog's Index and ConfigIndex this far
// above the log's last index when the restore starts, so they differ from
// every ConfigIndex a node saw before (caches of compiled configuration
// key on it, traffic/ratecheck) and stay below the index of the snapshot
// Raft installs (max(last index, meta index) + 1) and of every later
// entry, unless this many entries commit while the restore is set up.
const restoreGap = 1 << 16

// Backup returns an archive of the catalog as of a point that includes
// every write acknowledged before the call: on the leader a Raft barrier,
// on a follower an empty batch forwarded to the leader and applied here.
func (s *Store) Backup(ctx context.Context) ([]byte, error) {
	if err := s.barrier(ctx); err != nil {
		return nil, fmt.Errorf("persistence: backup: no consistency point through the leader: %w", err)
	}
	c := s.Catalog()
	data, err := c.MarshalSnapshot()
	if err != nil {
		return nil, fmt.Errorf("persistence: backup: %w", err)
	}
	term, _ := strconv.ParseUint(s.raft.Stats()["term"], 10, 64)
	a := backup.Archive{Meta: backup.Meta{Index: c.Index, Term: term, TakenAt: time.Now().UTC().Format(time.RFC3339),
		TakenOn: s.cfg.NodeID, Counts: Counts(c), CatalogSHA256: backup.Sum(data)}, Catalog: data}
	return a.Encode()
}

// barrier returns once this node has applied every entry committed
// before the call.
func (s *Store) barrier(ctx context.Context) error {
	timeout := 10 * time.Second
	if d, ok := ctx.Deadline(); ok {
		timeout = time.Until(d)
	}
	if s.raft.State() == raft.Leader {
		return s.raft.Barrier(timeout).Error()
	}
	fwd := s.fwd.Load()
	if fwd == nil {
		return ErrNotLeader
	}
	// An empty batch changes nothing (the FSM treats it as a membership
	// transaction: no ConfigIndex move); its being applied here is the
	// point.
	seq := s.seq.Add(1)
	data, err := gproto.Marshal(&raftpb.Batch{Origin: s.cfg.NodeID, Seq: seq, Format: LogFormat})
	if err != nil {
		return err
	}
	delivered := s.fsm.await(seq, nil)
	if err := (*fwd).ForwardApply(ctx, data); err != nil {
		s.fsm.abandon(seq)
		return err
	}
	select {
	case <-delivered:
		return nil
	case <-ctx.Done():
		s.fsm.abandon(seq)
		return ctx.Err()
	case <-s.done:
		return ErrClosed
	}
}

// RestoreBackup replaces the replicated state of this cluster with the
// archive's, keeping this cluster's own membership (its nodes, ring and
// epochs: the archive's name nodes that may not exist any more). It runs
// on the leader only, returns once a quorum installed it, and refuses an
// archive that does not load before anything changes.
func (s *Store) RestoreBackup(ctx context.Context, archive []byte) (backup.Meta, error) {
	a, err := backup.Decode(archive)
	if err != nil {
		return backup.Meta{}, fmt.Errorf("%w: %w", ErrBadArchive, err)
	}
	if s.raft.State() != raft.Leader {
		_, id := s.raft.LeaderWithID()
		e := &NotLeaderError{LeaderID: string(id)}
		if n := s.Catalog().Nodes[e.LeaderID]; n != nil {
			e.LeaderAPI = n.APIAddr
		}
		return backup.Meta{}, e
	}
	var tables map[string]jsontext.Value
	if err := json.Unmarshal(a.Catalog, &tables); err != nil {
		return backup.Meta{}, fmt.Errorf("%w: %w", ErrBadArchive, err)
	}
	if _, err := catalog.UnmarshalSnapshot(a.Catalog); err != nil {
		return backup.Meta{}, fmt.Errorf("%w: %w", ErrBadArchive, err)
	}
	cur, err := s.Catalog().MarshalSnapshot()
	if err != nil {
		return backup.Meta{}, err
	}
	var mine map[string]jsontext.Value
	if err := json.Unmarshal(cur, &mine); err != nil {
		return backup.Meta{}, err
	}
	for _, k := range []string{"nodes", "ring", "prev_ring"} {
		if v, ok := mine[k]; ok {
			tables[k] = v
		} else {
			delete(tables, k)
		}
	}
	at := max(a.Meta.Index, s.raft.LastIndex()) + restoreGap
	n := jsontext.Value(strconv.FormatUint(at, 10))
	tables["index"], tables["config_index"] = n, n
	data, err := json.Marshal(tables, json.Deterministic(true))
	if err != nil {
		return backup.Meta{}, err
	}
	// A catalog the FSM cannot load would panic Raft on every member
	// (hashicorp/raft panics on a failed user restore): load it first.
	if _, err := catalog.UnmarshalSnapshot(data); err != nil {
		return backup.Meta{}, fmt.Errorf("%w: %w", ErrBadArchive, err)
	}
	timeout := 30 * time.Second
	if d, ok := ctx.Deadline(); ok {
		timeout = time.Until(d)
	}
	meta := &raft.SnapshotMeta{Version: raft.SnapshotVersionMax, Index: at, Size: int64(len(data))}
	if err := s.raft.Restore(meta, bytes.NewReader(data), timeout); err != nil {
		return backup.Meta{}, fmt.Errorf("persistence: restore: %w", err)
	}
	s.log.Warn("persistence: replicated state replaced from a backup", "backup_index", a.Meta.Index,
		"backup_taken_at", a.Meta.TakenAt, "backup_taken_on", a.Meta.TakenOn, "now_at", at)
	return a.Meta, nil
}

// Counts are the records per table of c, for a backup's meta: per
// workspace tables are summed.
func Counts(c *catalog.Catalog) map[string]int {
	m := map[string]int{
		"workspaces": len(c.Workspaces), "sites": len(c.Sites), "mobile_apps": len(c.MobileApps),
		"credentials": len(c.Credentials), "signing_keys": len(c.Keys),
		"rate_limit_policies": len(c.RateLimitPolicies), "api_protection_policies": len(c.APIProtectionPolicies),
		"feedback": len(c.Feedback), "concurrency_constraints": len(c.ConcurrencyConstraints),
		"dependencies": len(c.Dependencies), "agents": len(c.Agents), "approvals": len(c.Approvals),
		"webhook_endpoints": len(c.WebhookEndpoints), "trust_policies": len(c.TrustPolicies),
		"messaging_settings": len(c.Messaging), "branding_profiles": len(c.BrandingProfiles),
		"console_users": len(c.ConsoleUsers), "audit_entries": len(c.Audit), "journeys": len(c.Journeys),
	}
	for _, o := range c.WebhookOutboxes {
		m["webhook_outbox_events"] += len(o.Events)
	}
	for _, w := range c.Identity {
		m["identity_sessions"] += len(w.Sessions)
		m["review_cases"] += len(w.Cases)
	}
	for _, w := range c.JourneySessions {
		m["journey_sessions"] += len(w.Sessions)
	}
	for _, w := range c.TrustedDevices {
		m["trusted_devices"] += w.Count
	}
	for _, w := range c.Passkeys {
		m["passkeys"] += w.Count
	}
	for _, w := range c.JourneyFaces {
		m["face_templates"] += len(w)
	}
	return m
}
