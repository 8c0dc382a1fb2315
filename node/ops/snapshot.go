package ops

import (
	"context"
	"errors"
	"time"

	kernel "github.com/trustd/trustd/platform/http"
	"github.com/trustd/trustd/platform/persistence"
	"github.com/trustd/trustd/platform/persistence/backup"
)

// Backup and restore of the replicated state (platform/persistence/backup.go does
// the work; trustctl snapshot seals the archive into an encrypted file).
// The archive crosses the wire in clear, as every admin answer does:
// protect the API with TLS where it leaves the host.

// Snapshots takes and restores backups (persistence.Store).
type Snapshots interface {
	Backup(ctx context.Context) ([]byte, error)
	RestoreBackup(ctx context.Context, archive []byte) (backup.Meta, error)
}

func (x snapshotAPI) routes() []kernel.Route {
	a := []kernel.Auth{kernel.AuthAdmin}
	return []kernel.Route{
		{Method: "GET", Path: "/snapshot", Admin: true, ID: "saveSnapshot", Tag: "Admin", Auth: a, ContentType: "application/octet-stream",
			Summary: "A consistent backup archive of the replicated state (catalog with signing keys and sealed secrets, approvals, sessions, outbox), taken through the leader without stopping the cluster. Unencrypted: trustctl snapshot save encrypts it.",
			Errors:  kernel.AdminErrors(), Handle: kernel.AdminOnly(x.save)},
		{Method: "POST", Path: "/snapshot/restore", Admin: true, ID: restoreID, Tag: "Admin", Auth: a,
			Summary: "Replace the replicated state with a backup archive (the body, as GET /snapshot returned it), keeping this cluster's membership. On the Raft leader only (409 names it). Single-use markers are not part of a backup.",
			Result:  &backup.Meta{}, Errors: append(kernel.AdminErrors(), kernel.ErrBadRequest, kernel.ErrConflict), Handle: kernel.AdminOnly(x.restore)},
	}
}

func (x snapshotAPI) save(c *kernel.Call) {
	if x.s == nil {
		c.Fail(kernel.ErrUnavailable, "this node cannot take backups")
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	b, err := x.s.Backup(ctx)
	if err != nil {
		c.Fail(kernel.ErrUnavailable, err.Error())
		return
	}
	c.Ctx.SetContentType("application/octet-stream")
	c.Ctx.Response.Header.Set("Cache-Control", "no-store")
	c.Ctx.SetBody(b)
}

func (x snapshotAPI) restore(c *kernel.Call) {
	if x.s == nil {
		c.Fail(kernel.ErrUnavailable, "this node cannot restore backups")
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	meta, err := x.s.RestoreBackup(ctx, c.Ctx.Request.Body())
	var nl *persistence.NotLeaderError
	switch {
	case errors.Is(err, persistence.ErrBadArchive):
		c.Fail(kernel.ErrBadRequest, err.Error())
	case errors.As(err, &nl) && nl.LeaderID != "":
		c.Fail(kernel.ErrConflict, nl.Error())
	case err != nil:
		c.Fail(kernel.ErrUnavailable, err.Error())
	default:
		c.OK(&meta)
	}
}

// snapshotAPI serves backup and restore.
type snapshotAPI struct{ s Snapshots }

// restoreID is the operation id of the restore, whose body limit
// FitRestoreLimit sets.
const restoreID = "restoreSnapshot"

// FitRestoreLimit bounds a restore's archive by the largest body any other
// route of areas already accepts (the identity face steps), so the
// restore does not raise what the server reads before routing. node/
// calls it on every area before handing them to the transport.
func FitRestoreLimit(areas []kernel.Area) {
	limit := 0
	var restore *kernel.Route
	for _, a := range areas {
		for i := range a.Routes {
			if a.Routes[i].ID == restoreID {
				restore = &a.Routes[i]
				continue
			}
			limit = max(limit, a.Routes[i].MaxBody)
		}
	}
	if restore != nil {
		restore.MaxBody = limit
	}
}
