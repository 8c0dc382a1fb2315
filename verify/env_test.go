package verify

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/trustd/trustd/platform/actors"
	"github.com/trustd/trustd/platform/catalog"
	"github.com/trustd/trustd/platform/cluster"
	"github.com/trustd/trustd/platform/errcode"
	"github.com/trustd/trustd/platform/token"
)

// env is a module over real shard actors on one node (no HTTP, no
// network), a catalog built by applying commands, and a clock the test
// moves.
type env struct {
	t    testing.TB
	mu   sync.Mutex
	m    *Module
	cat  *catalog.Catalog
	now  atomic.Int64
	live *token.Key
	sbx  *token.Key
}

const (
	testHost   = "shop.example.com"
	testAddr   = "203.0.113.7"
	testSecret = "sk_live_test_secret"
	sbxSecret  = "sk_sandbox_test_secret"
)

func mustNewEnv(t testing.TB) *env {
	t.Helper()
	e := &env{t: t}
	e.now.Store(time.Date(2026, 8, 8, 12, 0, 0, 0, time.UTC).UnixNano())
	sys := actors.NewSystem(actors.Config{Shards: 2, SweepEvery: time.Hour}, func() int64 { return e.now.Load() })
	t.Cleanup(sys.Stop)
	e.m = New(cluster.SingleNode("n1", sys, time.Second), e, func() time.Time { return time.Unix(0, e.now.Load()) }, Config{})
	created := time.Unix(0, e.now.Load()).UTC()
	e.apply(
		&catalog.AddSigningKey{Key: catalog.SigningKey{ID: "live1", Purpose: catalog.KeyLive, Secret: []byte("live-secret-live-secret-live-sec"), CreatedAt: created}},
		&catalog.AddSigningKey{Key: catalog.SigningKey{ID: "sbx1", Purpose: catalog.KeySandbox, Secret: []byte("sandbox-secret-sandbox-secret-sa"), CreatedAt: created}},
		&catalog.CreateWorkspace{Workspace: catalog.Workspace{ID: "ws1", Name: "test", Settings: catalog.DefaultSettings(), ScopeKey: []byte("scope-key")}},
		&catalog.CreateSite{Site: catalog.Site{ID: "site-1", WorkspaceID: "ws1", SiteKey: "site_pub", SecretHash: catalog.HashSecret(testSecret),
			Hostnames: []string{testHost}, Environment: catalog.EnvProduction, ChallengeMode: catalog.ModeCheckbox,
			ScoreThreshold: 0.5, TokenTTLSeconds: 300, ChallengeDifficulty: 1}},
		&catalog.CreateSite{Site: catalog.Site{ID: "site-sbx", WorkspaceID: "ws1", SiteKey: "site_sandbox_pub", SecretHash: catalog.HashSecret(sbxSecret),
			Environment: catalog.EnvSandbox, ChallengeMode: catalog.ModeCheckbox, ScoreThreshold: 0.5, TokenTTLSeconds: 300}},
	)
	e.live, e.sbx = e.m.Signer(e.cat, catalog.KeyLive), e.m.Signer(e.cat, catalog.KeySandbox)
	return e
}

func (e *env) apply(cmds ...catalog.Command) {
	e.t.Helper()
	if e.cat == nil {
		e.cat = catalog.Empty()
	}
	for _, cmd := range cmds {
		tx := catalog.Begin(e.cat)
		if _, err := cmd.Apply(tx); err != nil {
			e.t.Fatal(err)
		}
		e.cat = tx.Commit(e.cat.Index + 1)
	}
}

// Apply is the env's Store: commands apply in order to the catalog, after
// the encoding round trip the Raft log makes.
func (e *env) Apply(_ context.Context, cmd catalog.Command) (any, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	body, err := catalog.Encode(cmd)
	if err != nil {
		return nil, err
	}
	dec, err := catalog.Decode(cmd.Kind(), body)
	if err != nil {
		return nil, err
	}
	tx := catalog.Begin(e.cat)
	v, err := dec.Apply(tx)
	if err != nil {
		return nil, err
	}
	e.cat = tx.Commit(e.cat.Index + 1)
	return v, nil
}

func (e *env) advance(d time.Duration) { e.now.Add(int64(d)) }
func (e *env) site() *catalog.Site     { return e.cat.Sites["site-1"] }

// mint signs a live token as a redeem would.
func (e *env) mint(mod func(*token.Response)) string {
	now := time.Unix(0, e.now.Load()).Unix()
	t := token.Response{ID: RandomID(), SiteID: "site-1", Hostname: testHost, Action: "login", HasIP: true,
		IPHash: IPHash(e.live, testAddr), Mode: token.ModeCheckbox, Score: 900, Issued: now, Expires: now + 300}
	if mod != nil {
		mod(&t)
	}
	return t.Sign(e.live, token.LivePrefix)
}

// code is the errcode code of err, "" for nil, "?" for an error that is
// no domain error.
func code(err error) string {
	if err == nil {
		return ""
	}
	if c, _, ok := errcode.From(err); ok {
		return c.Code
	}
	if errors.Is(err, cluster.ErrUnavailable) {
		return "unavailable"
	}
	if errors.Is(err, catalog.ErrNotFound) {
		return "not-found"
	}
	if errors.Is(err, catalog.ErrConflict) {
		return "conflict"
	}
	return "?"
}

// downAsker is an owner that never answers.
type downAsker struct{}

func (downAsker) Ask(string, actors.Op) error       { return cluster.ErrUnavailable }
func (downAsker) AskPartition(int, actors.Op) error { return cluster.ErrUnavailable }
