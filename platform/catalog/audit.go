package catalog

import "time"

// MaxAuditEntries bounds the audit log: it is a ring, the oldest entry
// leaves when a new one arrives at the cap. AuditRetention drops entries
// older than this at each append, whatever the count.
const (
	MaxAuditEntries = 2000
	AuditRetention  = 90 * 24 * time.Hour
)

// AuditEntry records one change made through the admin API or the
// console: who (the admin token or a console user), what (the operation,
// method and path, the workspace), when, and the answer's status.
type AuditEntry struct {
	Seq         uint64    `json:"seq"`
	At          time.Time `json:"at"`
	Actor       string    `json:"actor"`
	Via         string    `json:"via"` // api | console
	Operation   string    `json:"operation"`
	Method      string    `json:"method"`
	Path        string    `json:"path"`
	WorkspaceID string    `json:"workspace_id,omitempty"`
	Status      int       `json:"status"`
	RequestID   string    `json:"request_id,omitempty"`
}

// RecordAudit appends one entry to the audit ring.
type RecordAudit struct {
	Entry AuditEntry `json:"entry"`
}

func (*RecordAudit) Kind() string { return "audit.record" }
func (c *RecordAudit) Apply(tx *Tx) (any, error) {
	e := c.Entry
	cur := tx.next.Audit
	// A retried record (its first apply's outcome was unknown to the
	// sender, as when the leader changed under it) is the same entry:
	// applied once. Retries follow within seconds, so the newest entries
	// are enough to look at.
	for i := len(cur) - 1; i >= 0 && i >= len(cur)-64; i-- {
		if sameAudit(&cur[i], &e) {
			return &cur[i], nil
		}
	}
	var seq uint64 = 1
	if n := len(cur); n > 0 {
		seq = cur[n-1].Seq + 1
	}
	e.Seq = seq
	cutoff := e.At.Add(-AuditRetention)
	start := 0
	for start < len(cur) && (cur[start].At.Before(cutoff) || len(cur)-start >= MaxAuditEntries) {
		start++
	}
	next := make([]AuditEntry, 0, len(cur)-start+1)
	next = append(append(next, cur[start:]...), e)
	tx.next.Audit = next
	return &e, nil
}

// sameAudit reports whether two entries record the same change (all but
// the sequence number, which the log assigns).
func sameAudit(a, b *AuditEntry) bool {
	return a.At.Equal(b.At) && a.RequestID == b.RequestID && a.Operation == b.Operation && a.Path == b.Path &&
		a.Actor == b.Actor && a.Via == b.Via && a.Method == b.Method && a.WorkspaceID == b.WorkspaceID && a.Status == b.Status
}
