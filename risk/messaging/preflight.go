package messaging

import (
	"encoding/base64"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/trustd/trustd/platform/actors"
	"github.com/trustd/trustd/platform/catalog"
	"github.com/trustd/trustd/platform/lib/ident"
	"github.com/trustd/trustd/platform/lib/jsonstrict"
	"github.com/trustd/trustd/platform/lib/ratelimit"
)

// Module answers preflights and records delivery events.
type Module struct {
	ask    actors.Asker
	now    func() time.Time
	sealer *Sealer
}

// New builds the module.
func New(ask actors.Asker, sealer *Sealer, now func() time.Time) *Module {
	return &Module{ask: ask, now: now, sealer: sealer}
}

// Caller is the workspace a verified signed request came from.
type Caller struct {
	WorkspaceID string
	ScopeKey    []byte
	Policy      catalog.MessagingPolicy
}

// Decisions.
const (
	Allow = "allow"
	Delay = "delay"
	Block = "block"
)

// Reason codes, stable.
const (
	ReasonCountryNotPermitted = "country-not-permitted"
	ReasonChannelNotPermitted = "channel-not-permitted"
	ReasonPrefixBlocked       = "prefix-blocked"
	ReasonPumping             = "sms-pumping-suspected"
	ReasonPrefixAbuse         = "prefix-velocity-abuse"
	ReasonPrefixVelocity      = "prefix-velocity"
	ReasonNumberVelocity      = "number-velocity"
	ReasonSubjectVelocity     = "subject-velocity"
	ReasonCountryVelocity     = "country-velocity"
)

// Reasons lists every reason code, for the contract.
var Reasons = []string{ReasonCountryNotPermitted, ReasonChannelNotPermitted, ReasonPrefixBlocked, ReasonPumping,
	ReasonPrefixAbuse, ReasonPrefixVelocity, ReasonNumberVelocity, ReasonSubjectVelocity, ReasonCountryVelocity}

// PreflightRequest is the signed body of a preflight. It never holds the
// one-time code or the message text.
type PreflightRequest struct {
	DestinationNumber string `json:"destination_number,omitempty" doc:"E.164: + then 8 to 15 digits. Kept only as a workspace-keyed hash; its prefix (all but the last 4 digits) is derived. Send this or destination_prefix."`
	DestinationPrefix string `json:"destination_prefix,omitempty" doc:"+ then 4 to 11 digits: the number without (at least) its last 4 digits, when you would rather not send the number."`
	Country           string `json:"country" required:"true" doc:"ISO 3166-1 alpha-2 of the destination, as your provider resolved it."`
	Channel           string `json:"channel" required:"true" enum:"sms|voice|whatsapp"`
	TemplateKind      string `json:"template_kind" required:"true" enum:"otp_login|otp_signup|otp_password_reset|otp_transaction|otp_step_up|otp_other"`
	MessageReference  string `json:"message_reference" required:"true" doc:"Your id of this message (1 to 128 bytes), unique per message; delivery events name it. Kept only as a keyed hash."`
	SubjectID         string `json:"subject_id,omitempty" doc:"The account the code is for (1 to 256 bytes). Kept only as a keyed hash."`
}

// Decision is the answer of a preflight.
type Decision struct {
	Success          bool     `json:"success" required:"true"`
	Decision         string   `json:"decision" required:"true" enum:"allow|delay|block" doc:"allow: send; delay: do not send now, retry after retry_after seconds; block: do not send."`
	Reasons          []string `json:"reasons" required:"true" doc:"Stable codes: country-not-permitted, channel-not-permitted, prefix-blocked, sms-pumping-suspected, prefix-velocity-abuse, prefix-velocity, number-velocity, subject-velocity, country-velocity."`
	RetryAfter       int      `json:"retry_after,omitempty" doc:"Seconds until a delayed send may be retried, or until a temporary prefix block ends."`
	Prefix           string   `json:"prefix" required:"true" doc:"The destination prefix the counters use."`
	MessageReference string   `json:"message_reference" required:"true"`
	PrefixSends      int64    `json:"prefix_sends" required:"true" doc:"Allowed sends to the prefix in the current conversion window (this one included when allowed)."`
	PrefixVerified   int64    `json:"prefix_verified" required:"true" doc:"Verified events for the prefix in the current conversion window."`
}

// forbidden are body fields that would carry a code or a message text:
// refused with their own code before anything else is read.
var forbidden = []string{"code", "otp", "otp_code", "one_time_code", "passcode", "pin", "verification_code",
	"message", "message_body", "body", "text", "content", "template_body", "template_text"}

// DecodeBody reads a signed body strictly into v, refusing code and
// message-text fields with ErrContentRefused.
func DecodeBody(body []byte, v any) error {
	if name, ok := jsonstrict.FindName(body, false, func(n string) bool { return slices.Contains(forbidden, n) }); ok {
		return ErrContentRefused.With("field %q is refused: never send one-time codes or message bodies", name)
	}
	if err := jsonstrict.Unmarshal(body, v); err != nil {
		return ErrBodyInvalid.With("%s", err.Error())
	}
	return nil
}

func validCountry(c string) bool {
	return len(c) == 2 && c[0] >= 'A' && c[0] <= 'Z' && c[1] >= 'A' && c[1] <= 'Z'
}

func digits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// PrefixOf returns the counters' prefix of a request: the number without
// its last 4 digits, or the prefix sent. number is "" when only a prefix
// was sent.
func PrefixOf(number, prefix string) (p string, err error) {
	switch {
	case number != "" && prefix != "", number == "" && prefix == "":
		return "", ErrDestination
	case number != "":
		d, ok := strings.CutPrefix(number, "+")
		if !ok || len(d) < 8 || len(d) > 15 || !digits(d) || d[0] == '0' {
			return "", ErrDestination.With("destination_number must be + and 8 to 15 digits without a leading 0")
		}
		return "+" + d[:len(d)-4], nil
	default:
		d, ok := strings.CutPrefix(prefix, "+")
		if !ok || len(d) < 4 || len(d) > 11 || !digits(d) || d[0] == '0' {
			return "", ErrDestination.With("destination_prefix must be + and 4 to 11 digits without a leading 0")
		}
		return prefix, nil
	}
}

func (r *PreflightRequest) validate() (prefix string, err error) {
	if prefix, err = PrefixOf(r.DestinationNumber, r.DestinationPrefix); err != nil {
		return "", err
	}
	if !validCountry(r.Country) {
		return "", ErrCountry
	}
	if !slices.Contains(Channels, r.Channel) {
		return "", ErrChannel
	}
	if !slices.Contains(TemplateKinds, r.TemplateKind) {
		return "", ErrTemplateKind
	}
	if len(r.MessageReference) > 128 || !ident.Valid(r.MessageReference) {
		return "", ErrReference
	}
	if r.SubjectID != "" && !ident.Valid(r.SubjectID) {
		return "", ErrSubject
	}
	return prefix, nil
}

// hash is the workspace-keyed hash of a value of kind, base64url.
func hash(scopeKey []byte, kind, v string) string {
	h := ratelimit.HashScope(scopeKey, kind+"\x00"+v)
	return base64.RawURLEncoding.EncodeToString(h[:])
}

// Preflight decides whether to send a one-time code.
func (m *Module) Preflight(caller Caller, req PreflightRequest) (Decision, error) {
	prefix, err := req.validate()
	if err != nil {
		return Decision{}, err
	}
	p := Effective(caller.Policy)
	ws := caller.WorkspaceID
	now := m.now()
	out := Decision{Success: true, Decision: Allow, Reasons: []string{}, Prefix: prefix, MessageReference: req.MessageReference}
	// Configuration first: these never depend on traffic.
	if len(p.Channels) > 0 && !slices.Contains(p.Channels, req.Channel) {
		out.block(ReasonChannelNotPermitted, 0)
	}
	if slices.Contains(p.BlockedCountries, req.Country) || (len(p.AllowedCountries) > 0 && !slices.Contains(p.AllowedCountries, req.Country)) {
		out.block(ReasonCountryNotPermitted, 0)
	}
	if out.Decision == Block {
		return out, nil
	}
	ph := hash(caller.ScopeKey, "msgprefix", prefix)
	// A prefix blocked after abuse stays blocked until the block ends.
	if until, err := m.blockedUntil(ws, ph); err != nil {
		return Decision{}, err
	} else if until.After(now) {
		out.block(ReasonPrefixBlocked, ceilSecs(until.Sub(now)))
		return out, nil
	}
	conv := secs(p.ConversionWindowSecs)
	sends, verified, failed, err := m.conversion(ws, ph, conv)
	if err != nil {
		return Decision{}, err
	}
	out.PrefixSends, out.PrefixVerified = sends, verified
	if pumping(p, sends, verified, failed) {
		if err := m.blockPrefix(ws, ph, now, p); err != nil {
			return Decision{}, err
		}
		out.block(ReasonPumping, p.BlockSeconds)
		return out, nil
	}
	// Velocity: every preflight counts, allowed or not, so hammering a
	// prefix keeps it delayed.
	pc, pend, err := m.hit(prefixKey(ws, ph), secs(p.PrefixWindowSecs))
	if err != nil {
		return Decision{}, err
	}
	if pc > int64(p.PrefixLimit*p.PrefixBlockFactor) {
		if err := m.blockPrefix(ws, ph, now, p); err != nil {
			return Decision{}, err
		}
		out.block(ReasonPrefixAbuse, p.BlockSeconds)
		return out, nil
	}
	if pc > int64(p.PrefixLimit) {
		out.delay(ReasonPrefixVelocity, pend.Sub(now))
	}
	// velocity counts this preflight in key's window and, past limit,
	// delays the answer with reason until the window ends.
	velocity := func(key string, windowSecs, limit int, reason string) error {
		n, end, err := m.hit(key, secs(windowSecs))
		if err == nil && n > int64(limit) {
			out.delay(reason, end.Sub(now))
		}
		return err
	}
	if req.DestinationNumber != "" {
		key := numberKey(ws, hash(caller.ScopeKey, "msgnumber", req.DestinationNumber))
		if err := velocity(key, p.NumberWindowSecs, p.NumberLimit, ReasonNumberVelocity); err != nil {
			return Decision{}, err
		}
	}
	if req.SubjectID != "" {
		key := subjectKey(ws, hash(caller.ScopeKey, "subject", req.SubjectID))
		if err := velocity(key, p.SubjectWindowSecs, p.SubjectLimit, ReasonSubjectVelocity); err != nil {
			return Decision{}, err
		}
	}
	if err := velocity(countryKey(ws, req.Country), p.CountryWindowSecs, p.CountryLimit, ReasonCountryVelocity); err != nil {
		return Decision{}, err
	}
	if out.Decision != Allow {
		return out, nil
	}
	// Allowed: the reference is single use and remembered with its
	// prefix, so delivery events count toward the prefix's conversion.
	rh := hash(caller.ScopeKey, "msgref", req.MessageReference)
	ref := &actors.Consume{ID: refKey(ws, rh), Expires: now.Add(MessageTTL).UnixNano()}
	if err := m.ask.Ask(ref.ID, ref); err != nil {
		return Decision{}, fmt.Errorf("%w: %v", ErrUnavailable, err)
	}
	if !ref.First {
		return Decision{}, ErrReferenceReused
	}
	rec := &actors.LabelSubject{Key: messageKey(ws, rh), Label: ph, Expires: now.Add(MessageTTL).UnixNano()}
	if err := m.ask.Ask(rec.Key, rec); err != nil {
		return Decision{}, fmt.Errorf("%w: %v", ErrUnavailable, err)
	}
	c := &actors.CountHit{Key: sendsKey(ws, ph), WindowNs: int64(conv)}
	if err := m.ask.Ask(c.Key, c); err != nil {
		return Decision{}, fmt.Errorf("%w: %v", ErrUnavailable, err)
	}
	out.PrefixSends = c.Count
	return out, nil
}

// pumping reports whether a prefix's conversion is that of SMS pumping:
// enough codes went out (sent and not reported failed) and too few of
// them were verified.
func pumping(p catalog.MessagingPolicy, sends, verified, failed int64) bool {
	out := sends - failed
	return out >= int64(p.ConversionMinSends) && verified*100 < out*int64(p.ConversionMinPercent)
}

func (d *Decision) block(reason string, retry int) {
	d.Decision = Block
	d.Reasons = append(d.Reasons, reason)
	if retry > d.RetryAfter {
		d.RetryAfter = retry
	}
}

func (d *Decision) delay(reason string, wait time.Duration) {
	if d.Decision == Allow {
		d.Decision = Delay
	}
	d.Reasons = append(d.Reasons, reason)
	if s := ceilSecs(wait); s > d.RetryAfter {
		d.RetryAfter = s
	}
}

func ceilSecs(d time.Duration) int {
	s := int((d + time.Second - 1) / time.Second)
	if s < 1 {
		return 1
	}
	return s
}

func (m *Module) hit(key string, window time.Duration) (int64, time.Time, error) {
	c := &actors.CountHit{Key: key, WindowNs: int64(window)}
	if err := m.ask.Ask(key, c); err != nil {
		return 0, time.Time{}, fmt.Errorf("%w: %v", ErrUnavailable, err)
	}
	return c.Count, time.Unix(0, c.EndNs), nil
}

func (m *Module) peek(key string, window time.Duration) (int64, error) {
	c := &actors.CountHit{Key: key, WindowNs: int64(window), Peek: true}
	if err := m.ask.Ask(key, c); err != nil {
		return 0, fmt.Errorf("%w: %v", ErrUnavailable, err)
	}
	return c.Count, nil
}

func (m *Module) conversion(ws, ph string, window time.Duration) (sends, verified, failed int64, err error) {
	if sends, err = m.peek(sendsKey(ws, ph), window); err != nil {
		return
	}
	if verified, err = m.peek(verifiedKey(ws, ph), window); err != nil {
		return
	}
	failed, err = m.peek(failedKey(ws, ph), window)
	return
}

// blockedUntil reads a prefix's block: the label holds its end, Unix s.
func (m *Module) blockedUntil(ws, ph string) (time.Time, error) {
	l := &actors.SubjectLabel{Key: blockKey(ws, ph)}
	if err := m.ask.Ask(l.Key, l); err != nil {
		return time.Time{}, fmt.Errorf("%w: %v", ErrUnavailable, err)
	}
	var until int64
	if _, err := fmt.Sscanf(l.Label, "blocked:%d", &until); err != nil {
		return time.Time{}, nil
	}
	return time.Unix(until, 0), nil
}

func (m *Module) blockPrefix(ws, ph string, now time.Time, p catalog.MessagingPolicy) error {
	until := now.Add(secs(p.BlockSeconds))
	l := &actors.LabelSubject{Key: blockKey(ws, ph), Label: fmt.Sprintf("blocked:%d", until.Unix()), Expires: until.UnixNano()}
	if err := m.ask.Ask(l.Key, l); err != nil {
		return fmt.Errorf("%w: %v", ErrUnavailable, err)
	}
	return nil
}
