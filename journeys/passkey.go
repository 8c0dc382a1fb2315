package journeys

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"net/url"
	"strings"
	"time"

	"github.com/go-webauthn/webauthn/protocol"
	"github.com/go-webauthn/webauthn/webauthn"

	"github.com/trustd/trustd/platform/catalog"
)

// device_authorization: a passkey ceremony (WebAuthn) run by the person's
// page, which trustd serves at its own origin. The relying party id is the
// site's hostname that the page's host falls under (the page must be
// served under the site's domain, such as verify.shop.example for
// shop.example); a session of a mobile app or of a site none of whose
// hostnames covers the page's host cannot run the method. A subject with
// no passkey registers one (user verification required) and then asserts
// with it in the same attempt; a subject with passkeys asserts with user
// verification. Only public keys are stored (catalog.Passkey), and every
// assertion's sign count must increase, checked in the Raft command so two
// nodes cannot both accept one counter value.

// ErrNoRelyingParty is a session whose site has no hostname covering the
// page's host.
var ErrNoRelyingParty = ErrMethodUnavailable.With("no hostname of the session's site covers this service's host; passkeys need the page under the site's domain")

// WithPasskeys sets the page origin (scheme://host[:port]) passkey
// ceremonies run at: the service's public base URL.
func (m *Module) WithPasskeys(origin string) *Module {
	return m.setEngines(func(e *engines) { e.origin = strings.TrimRight(origin, "/") })
}

// passkeyState is a passkey attempt's MethodState.
type passkeyState struct {
	Registration bool                 `json:"registration"`
	Session      webauthn.SessionData `json:"session"`
}

// passkeyUser is the subject as WebAuthn sees it: an opaque handle (the
// subject binding, a keyed hash), no name, and its public keys.
type passkeyUser struct {
	id    []byte
	creds []webauthn.Credential
}

func (u passkeyUser) WebAuthnID() []byte                         { return u.id }
func (u passkeyUser) WebAuthnName() string                       { return "account" }
func (u passkeyUser) WebAuthnDisplayName() string                { return "Account" }
func (u passkeyUser) WebAuthnCredentials() []webauthn.Credential { return u.creds }

// relyingParty builds the WebAuthn configuration of a session.
func (m *Module) relyingParty(cat *catalog.Catalog, s *catalog.JourneySession) (*webauthn.WebAuthn, error) {
	origin := m.engines().origin
	if origin == "" {
		return nil, ErrMethodUnavailable.With("passkeys are not configured on this node (no public origin)")
	}
	u, err := url.Parse(origin)
	if err != nil || u.Hostname() == "" {
		return nil, ErrMethodUnavailable.With("the node's public origin is not a URL")
	}
	host := strings.ToLower(u.Hostname())
	site := cat.Sites[s.AppID]
	if site == nil || s.Channel != "server" {
		return nil, ErrNoRelyingParty
	}
	rp := ""
	for _, h := range site.Hostnames {
		h = strings.ToLower(h)
		if (host == h || strings.HasSuffix(host, "."+h)) && len(h) > len(rp) {
			rp = h
		}
	}
	if rp == "" {
		return nil, ErrNoRelyingParty
	}
	w, err := webauthn.New(&webauthn.Config{RPID: rp, RPDisplayName: site.Name, RPOrigins: []string{origin},
		Timeouts: webauthn.TimeoutsConfig{Login: webauthn.TimeoutConfig{Enforce: true, Timeout: 2 * time.Minute},
			Registration: webauthn.TimeoutConfig{Enforce: true, Timeout: 2 * time.Minute}}})
	if err != nil {
		return nil, ErrMethodUnavailable.With("passkey configuration: %v", err)
	}
	return w, nil
}

func userOf(cat *catalog.Catalog, s *catalog.JourneySession) passkeyUser {
	raw, _ := base64.RawURLEncoding.DecodeString(s.SubjectHash)
	u := passkeyUser{id: raw}
	for _, p := range cat.PasskeysOf(s.WorkspaceID, s.SubjectHash) {
		u.creds = append(u.creds, webauthn.Credential{ID: p.CredentialID, PublicKey: p.PublicKey,
			Flags:         webauthn.CredentialFlags{UserVerified: true, BackupEligible: p.BackupEligible, BackupState: p.BackupState},
			Authenticator: webauthn.Authenticator{AAGUID: p.AAGUID, SignCount: p.SignCount}})
	}
	return u
}

// PasskeyCeremony is what the page runs next: the options of
// navigator.credentials.create (Registration) or .get.
type PasskeyCeremony struct {
	Registration bool
	// Options is the PublicKeyCredential{Creation,Request}Options JSON
	// (binary fields base64url).
	Options map[string]any
}

func (m *Module) ceremony(w *webauthn.WebAuthn, u passkeyUser) (PasskeyCeremony, passkeyState, error) {
	var opts any
	var sd *webauthn.SessionData
	var err error
	reg := len(u.creds) == 0
	if reg {
		var cc *protocol.CredentialCreation
		cc, sd, err = w.BeginRegistration(u,
			webauthn.WithAuthenticatorSelection(protocol.AuthenticatorSelection{ResidentKey: protocol.ResidentKeyRequirementPreferred,
				UserVerification: protocol.VerificationRequired}),
			webauthn.WithConveyancePreference(protocol.PreferNoAttestation))
		if cc != nil {
			opts = cc.Response
		}
	} else {
		var ca *protocol.CredentialAssertion
		ca, sd, err = w.BeginLogin(u, webauthn.WithUserVerification(protocol.VerificationRequired))
		if ca != nil {
			opts = ca.Response
		}
	}
	if err != nil {
		return PasskeyCeremony{}, passkeyState{}, ErrMethodUnavailable.With("passkey ceremony: %v", err)
	}
	b, _ := json.Marshal(opts)
	var out map[string]any
	_ = json.Unmarshal(b, &out)
	return PasskeyCeremony{Registration: reg, Options: out}, passkeyState{Registration: reg, Session: *sd}, nil
}

// BeginPasskey opens a device_authorization attempt.
func (m *Module) BeginPasskey(ctx context.Context, capability string) (PasskeyCeremony, error) {
	cat, s, _, err := m.personSession(ctx, capability)
	if err != nil {
		return PasskeyCeremony{}, err
	}
	if err := checkOpen(s, MethodDevice, m.now()); err != nil {
		return PasskeyCeremony{}, err
	}
	w, err := m.relyingParty(cat, s)
	if err != nil {
		return PasskeyCeremony{}, err
	}
	c, st, err := m.ceremony(w, userOf(cat, s))
	if err != nil {
		return PasskeyCeremony{}, err
	}
	state, _ := json.Marshal(st)
	if _, err := m.begin(ctx, s, state); err != nil {
		return PasskeyCeremony{}, err
	}
	return c, nil
}

// PasskeyResult is a finished ceremony: a registration continues with
// the assertion ceremony Next; an assertion ends the attempt.
type PasskeyResult struct {
	Attempt
	Next *PasskeyCeremony
}

// MaxCredentialJSON bounds a ceremony's response.
const MaxCredentialJSON = 16 << 10

// FinishPasskey checks the page's PublicKeyCredential (JSON, binary
// fields base64url) against the open ceremony.
func (m *Module) FinishPasskey(ctx context.Context, capability string, credential []byte) (PasskeyResult, error) {
	cat, s, ws, err := m.personSession(ctx, capability)
	if err != nil {
		return PasskeyResult{}, err
	}
	now := m.now()
	if err := checkOpen(s, MethodDevice, now); err != nil {
		return PasskeyResult{}, err
	}
	var st passkeyState
	if s.Status != StatusProofPending || len(s.MethodState) == 0 || json.Unmarshal(s.MethodState, &st) != nil {
		return PasskeyResult{}, ErrNoChallenge
	}
	if len(credential) == 0 || len(credential) > MaxCredentialJSON {
		return PasskeyResult{}, ErrInvalidRequest.With("credential: the PublicKeyCredential JSON, at most 16 KiB")
	}
	w, err := m.relyingParty(cat, s)
	if err != nil {
		return PasskeyResult{}, err
	}
	u := userOf(cat, s)
	fail := func(reason string) (PasskeyResult, error) {
		a, err := m.finish(ctx, ws, s, false, []string{reason}, false)
		return PasskeyResult{Attempt: a}, err
	}
	if st.Registration {
		parsed, err := protocol.ParseCredentialCreationResponseBytes(credential)
		if err != nil {
			return fail("passkey-response-invalid")
		}
		cred, err := w.CreateCredential(u, st.Session, parsed)
		if err != nil {
			return fail("passkey-registration-refused")
		}
		pk := catalog.Passkey{CredentialID: cred.ID, PublicKey: cred.PublicKey, AAGUID: cred.Authenticator.AAGUID,
			SignCount: cred.Authenticator.SignCount, BackupEligible: cred.Flags.BackupEligible, BackupState: cred.Flags.BackupState,
			CreatedAt: now.UTC(), LastUsedAt: now.UTC()}
		if _, err := m.store.Apply(ctx, &catalog.PutPasskey{WorkspaceID: s.WorkspaceID, SubjectHash: s.SubjectHash, Passkey: pk}); err != nil {
			if errors.Is(err, catalog.ErrConflict) {
				return fail("passkey-registration-refused")
			}
			return PasskeyResult{}, err
		}
		// Continue with an assertion of the new key in the same attempt.
		u.creds = append(u.creds, *cred)
		next, nst, err := m.ceremony(w, u)
		if err != nil {
			return PasskeyResult{}, err
		}
		state, _ := json.Marshal(nst)
		n, err := m.transition(ctx, s, func(n *catalog.JourneySession) { n.MethodState = state })
		if errors.Is(err, catalog.ErrJourneySessionChanged) {
			return PasskeyResult{}, ErrBusy
		}
		if err != nil {
			return PasskeyResult{}, err
		}
		return PasskeyResult{Attempt: Attempt{Status: n.Status}, Next: &next}, nil
	}
	parsed, err := protocol.ParseCredentialRequestResponseBytes(credential)
	if err != nil {
		return fail("passkey-response-invalid")
	}
	cred, err := w.ValidateLogin(u, st.Session, parsed)
	if err != nil {
		return fail("passkey-assertion-refused")
	}
	if cred.Authenticator.CloneWarning {
		return fail("passkey-counter-replayed")
	}
	pk := catalog.Passkey{CredentialID: cred.ID, PublicKey: cred.PublicKey, SignCount: cred.Authenticator.SignCount,
		BackupState: cred.Flags.BackupState, LastUsedAt: now.UTC()}
	if _, err := m.store.Apply(ctx, &catalog.PutPasskey{WorkspaceID: s.WorkspaceID, SubjectHash: s.SubjectHash, Passkey: pk, Use: true}); err != nil {
		if errors.Is(err, catalog.ErrConflict) || errors.Is(err, catalog.ErrNotFound) {
			return fail("passkey-counter-replayed")
		}
		return PasskeyResult{}, err
	}
	a, err := m.finish(ctx, ws, s, true, nil, false)
	return PasskeyResult{Attempt: a}, err
}
