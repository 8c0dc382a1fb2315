package http

import (
	"context"
	"time"

	"github.com/trustd/trustd/platform/catalog"
)

// Audit records e in the replicated audit ring: an area's own event that
// is not an admin operation (a console login). The admin operations are
// recorded by the transport itself (auditCall).
func (s *Server) Audit(e catalog.AuditEntry) { s.audit(e) }

// audit records a change in the replicated audit ring. It runs after the
// change answered; a failure to record is logged, never turned into a
// failure of the change that already happened.
func (s *Server) audit(e catalog.AuditEntry) {
	// The change is already committed; its record follows as its own
	// entry. A leader change can fail the apply without saying whether it
	// committed, so it is retried (the catalog applies a repeated record
	// once) until it lands or 10 s pass.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for wait := 50 * time.Millisecond; ; wait = min(2*wait, time.Second) {
		_, err := s.store.Apply(ctx, &catalog.RecordAudit{Entry: e})
		if err == nil {
			return
		}
		select {
		case <-ctx.Done():
			s.log.Warn("audit record failed", "op", e.Operation, "actor", e.Actor, "request_id", e.RequestID, "err", err)
			return
		case <-time.After(wait):
		}
	}
}

// auditCall records an admin write that succeeded.
func (s *Server) auditCall(c *Call, r *Route, status int, actor, via string) {
	if !r.Admin || r.Method == "GET" || r.Method == "HEAD" || status >= 300 {
		return
	}
	s.audit(catalog.AuditEntry{At: s.clock().UTC(), Actor: actor, Via: via, Operation: r.ID, Method: r.Method,
		Path: string(c.Ctx.Path()), WorkspaceID: c.Param("workspace_id"), Status: status, RequestID: c.RequestID()})
}
