package http

import (
	"context"
	"errors"
	"time"

	"github.com/trustd/trustd/persistence"
	"github.com/trustd/trustd/persistence/backup"
)

// Backup and restore of the replicated state (persistence/backup.go does
// the work; trustctl snapshot seals the archive into an encrypted file).
// The archive crosses the wire in clear, as every admin answer does:
// protect the API with TLS where it leaves the host.

// Snapshots takes and restores backups (persistence.Store).
type Snapshots interface {
	Backup(ctx context.Context) ([]byte, error)
	RestoreBackup(ctx context.Context, archive []byte) (backup.Meta, error)
}

// restoreSnapshotID is the restore operation, whose body limit
// fitSnapshotLimit sets.
const restoreSnapshotID = "restoreSnapshot"

// fitSnapshotLimit bounds a restore's archive by the largest body any
// other route already accepts (the identity face steps, an area's route),
// so the snapshot route does not raise what the server reads before
// routing.
func fitSnapshotLimit(rs []Route) {
	limit, at := 0, -1
	for i := range rs {
		if rs[i].ID == restoreSnapshotID {
			at = i
			continue
		}
		limit = max(limit, rs[i].MaxBody)
	}
	if at >= 0 {
		rs[at].MaxBody = limit
	}
}

func (s *Server) snapshotRoutes() []Route {
	a := []Auth{AuthAdmin}
	return []Route{
		{Method: "GET", Path: "/snapshot", Admin: true, ID: "saveSnapshot", Tag: "Admin", Auth: a, ContentType: "application/octet-stream",
			Summary: "A consistent backup archive of the replicated state (catalog with signing keys and sealed secrets, approvals, sessions, outbox), taken through the leader without stopping the cluster. Unencrypted: trustctl snapshot save encrypts it.",
			Errors:  adminErrors, Handle: s.admin(s.saveSnapshot)},
		{Method: "POST", Path: "/snapshot/restore", Admin: true, ID: restoreSnapshotID, Tag: "Admin", Auth: a,
			Summary: "Replace the replicated state with a backup archive (the body, as GET /snapshot returned it), keeping this cluster's membership. On the Raft leader only (409 names it). Single-use markers are not part of a backup.",
			Result:  &backup.Meta{}, Errors: append(adminErrors, ErrBadRequest, ErrConflict), Handle: s.admin(s.restoreSnapshot)},
	}
}

func (s *Server) saveSnapshot(c *Call) {
	if s.cfg.Snapshots == nil {
		c.fail(ErrUnavailable, "this node cannot take backups")
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	b, err := s.cfg.Snapshots.Backup(ctx)
	if err != nil {
		c.fail(ErrUnavailable, err.Error())
		return
	}
	c.Ctx.SetContentType("application/octet-stream")
	c.Ctx.Response.Header.Set("Cache-Control", "no-store")
	c.Ctx.SetBody(b)
}

func (s *Server) restoreSnapshot(c *Call) {
	if s.cfg.Snapshots == nil {
		c.fail(ErrUnavailable, "this node cannot restore backups")
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	meta, err := s.cfg.Snapshots.RestoreBackup(ctx, c.Ctx.Request.Body())
	var nl *persistence.NotLeaderError
	switch {
	case errors.Is(err, persistence.ErrBadArchive):
		c.fail(ErrBadRequest, err.Error())
	case errors.As(err, &nl) && nl.LeaderID != "":
		c.fail(ErrConflict, nl.Error())
	case err != nil:
		c.fail(ErrUnavailable, err.Error())
	default:
		c.ok(&meta)
	}
}
