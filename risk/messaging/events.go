package messaging

import (
	"fmt"

	"github.com/trustd/trustd/platform/actors"
	"github.com/trustd/trustd/platform/lib/ident"
)

// Event statuses.
const (
	StatusDelivered = "delivered"
	StatusVerified  = "verified"
	StatusFailed    = "failed"
)

// EventRequest is the signed body of a delivery event: what became of an
// allowed message.
type EventRequest struct {
	MessageReference string `json:"message_reference" required:"true" doc:"The message_reference of an allowed preflight of the last 24 hours."`
	Status           string `json:"status" required:"true" enum:"delivered|verified|failed" doc:"delivered: the carrier delivered it; verified: the person entered the code correctly; failed: it was never delivered."`
}

// EventResult is the answer of a delivery event.
type EventResult struct {
	Success          bool   `json:"success" required:"true"`
	MessageReference string `json:"message_reference" required:"true"`
	Status           string `json:"status" required:"true" enum:"delivered|verified|failed"`
	Duplicate        bool   `json:"duplicate" required:"true" doc:"true when this status was already recorded for the message: nothing was counted again."`
}

// Event records a delivery event. verified counts toward the prefix's
// conversion, failed takes the message out of it (it never went out);
// delivered is recorded once and counts nothing. Each status counts once
// per message, so a retried event is harmless.
func (m *Module) Event(caller Caller, req EventRequest) (EventResult, error) {
	if len(req.MessageReference) > 128 || !ident.Valid(req.MessageReference) {
		return EventResult{}, ErrReference
	}
	switch req.Status {
	case StatusDelivered, StatusVerified, StatusFailed:
	default:
		return EventResult{}, ErrEventStatus
	}
	ws := caller.WorkspaceID
	rh := hash(caller.ScopeKey, "msgref", req.MessageReference)
	rec := &actors.SubjectLabel{Key: messageKey(ws, rh)}
	if err := m.ask.Ask(rec.Key, rec); err != nil {
		return EventResult{}, fmt.Errorf("%w: %v", ErrUnavailable, err)
	}
	if rec.Label == "" {
		return EventResult{}, ErrMessageUnknown
	}
	now := m.now()
	once := &actors.Consume{ID: eventKey(ws, rh, req.Status), Expires: now.Add(MessageTTL).UnixNano()}
	if err := m.ask.Ask(once.ID, once); err != nil {
		return EventResult{}, fmt.Errorf("%w: %v", ErrUnavailable, err)
	}
	out := EventResult{Success: true, MessageReference: req.MessageReference, Status: req.Status, Duplicate: !once.First}
	if out.Duplicate {
		return out, nil
	}
	window := secs(Effective(caller.Policy).ConversionWindowSecs)
	var key string
	switch req.Status {
	case StatusVerified:
		key = verifiedKey(ws, rec.Label)
	case StatusFailed:
		key = failedKey(ws, rec.Label)
	default:
		return out, nil
	}
	if _, _, err := m.hit(key, window); err != nil {
		return EventResult{}, err
	}
	return out, nil
}
