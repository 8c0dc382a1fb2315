package account

import (
	"encoding/base64"
	"time"

	"github.com/trustd/trustd/platform/actors"
	"github.com/trustd/trustd/platform/lib/ratelimit"
)

// The actor key spaces of Account Defence, in one place. Every key carries
// the workspace id and, for a subject or device, only its keyed hash.
//
//	prefix                 op                          lifetime
//	aca/<ws>/s/<hash>      actors.Activity             Retention after the subject's last event
//	aca/<ws>/d/<hash>      actors.Activity             Retention after the device's last event
//	acr/<ws>/s|d/<hash>    actors.LabelSubject         LabelTTL after the last feedback
//	acv/<ws>/<site>        actors.Hit                  an hour after the site's last event
//	acc/<uuid>             actors.Put/Get/AnnotateAssessment  AssessmentTTL
//
// The assessment's own id in the table is "acc/<uuid>" too, so an id of
// another module's assessment (API Protection keeps bare UUIDs) never
// matches one of ours, even on a shared shard.

// Windows and lifetimes.
const (
	// Window is the sliding window of failures and of distinct counterparts.
	Window = time.Hour
	// Retention is how long a device stays known to a subject (and a
	// subject to a device) after their last event together.
	Retention = 30 * 24 * time.Hour
	// MaxCounterparts bounds the devices remembered per subject and the
	// subjects per device.
	MaxCounterparts = 32
	// LabelTTL is how long a feedback label affects later assessments.
	LabelTTL = 30 * 24 * time.Hour
	// AssessmentTTL is how long an assessment can take feedback.
	AssessmentTTL = 24 * time.Hour
	// FeedbackDedup is the window in which an exact retry of feedback
	// answers the first feedback_id and changes nothing (spec 8).
	FeedbackDedup = 5 * time.Minute
	// siteWindow is the window of the site's event rate.
	siteWindow = time.Minute
)

// SubjectHash is the keyed hash under which a subject's state is stored:
// HMAC-SHA-256 with the workspace's ScopeKey, base64url. The Trust API
// hashes the same way to read Signals.
func SubjectHash(scopeKey []byte, subjectID string) string {
	return keyedHash(scopeKey, "subject", subjectID)
}

// DeviceHash is the keyed hash of a device identifier.
func DeviceHash(scopeKey []byte, deviceID string) string {
	return keyedHash(scopeKey, "device", deviceID)
}

func keyedHash(key []byte, kind, v string) string {
	h := ratelimit.HashScope(key, kind+"\x00"+v)
	return base64.RawURLEncoding.EncodeToString(h[:])
}

func subjectActivityKey(ws, h string) string { return actors.SpaceAccountActivity + ws + "/s/" + h }
func deviceActivityKey(ws, h string) string  { return actors.SpaceAccountActivity + ws + "/d/" + h }
func subjectLabelKey(ws, h string) string    { return actors.SpaceAccountLabel + ws + "/s/" + h }
func deviceLabelKey(ws, h string) string     { return actors.SpaceAccountLabel + ws + "/d/" + h }
func siteKey(ws, site string) string         { return actors.SpaceAccountSiteRate + ws + "/" + site }
func assessmentKey(id string) string         { return actors.SpaceAccountAssessment + id }
