package node

import (
	"context"
	"time"

	identityapi "github.com/trustd/trustd/identity/api"
	"github.com/trustd/trustd/identity/documents"
	"github.com/trustd/trustd/identity/face"
	"github.com/trustd/trustd/identity/session"
	api "github.com/trustd/trustd/platform/http"
)

// newIdentity builds the identity area's modules (document screening and
// verification sessions over the face engine, presence check and matcher
// given: nil fails standard and high sessions closed) and its routes.
func (n *Node) newIdentity(base string, fe face.Engine, presence session.Presence, match session.Matcher) (*session.Module, []api.Area) {
	screener := documents.NewScreener(documents.Tesseract{Timeout: 5 * time.Second}, 2)
	sessions := session.New(n.cfg.Identity, session.Deps{Store: n.store, Screener: screener, Engine: fe, Presence: presence,
		Match: match, Now: time.Now, Log: n.cfg.Logger, Events: n.webhooks})
	return sessions, identityapi.Areas(identityapi.Deps{Sessions: sessions, Screener: screener, BaseURL: base})
}

// sweepIdentity hands identity sessions' pending webhook events to the
// outbox every interval while leader (an Emit that failed inside a request
// is retried here, not only when the session is next touched), and
// applies the identity retention, until ctx ends.
func (n *Node) sweepIdentity(ctx context.Context, sessions *session.Module, every time.Duration, leader func() bool) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if leader() {
				fctx, cancel := context.WithTimeout(ctx, every)
				sessions.FlushPending(fctx)
				// Retention on a timer: ended sessions and resolved cases
				// past their retention go even in a quiet workspace.
				if _, err := sessions.Prune(fctx); err != nil && ctx.Err() == nil {
					n.log.Warn("identity retention: prune failed; retried on the next sweep", "err", err)
				}
				cancel()
			}
		}
	}
}
