package messaging

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/trustd/trustd/platform/actors"
	"github.com/trustd/trustd/platform/catalog"
	"github.com/trustd/trustd/platform/cluster"
)

type shardAsker struct{ sys *actors.System }

func (a *shardAsker) Ask(key string, op actors.Op) error {
	return a.sys.Ask(cluster.Partition(key), op, time.Second)
}

type fixture struct {
	m      *Module
	now    atomic.Int64
	caller Caller
}

func (f *fixture) clock() time.Time        { return time.Unix(0, f.now.Load()) }
func (f *fixture) advance(d time.Duration) { f.now.Add(int64(d)) }

func mustNewFixture(t *testing.T) *fixture {
	t.Helper()
	f := &fixture{}
	// Start on an hour boundary so the aligned windows are predictable.
	f.now.Store(time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC).UnixNano())
	sys := actors.NewSystem(actors.Config{Shards: 2}, func() int64 { return f.now.Load() })
	t.Cleanup(sys.Stop)
	f.m = New(&shardAsker{sys: sys}, NewSealer("test-cluster-key"), f.clock)
	f.caller = Caller{WorkspaceID: "w1", ScopeKey: []byte("scope-key-1")}
	return f
}

func (f *fixture) preflight(t *testing.T, req PreflightRequest) Decision {
	t.Helper()
	d, err := f.m.Preflight(f.caller, req)
	if err != nil {
		t.Fatalf("preflight %+v: %v", req, err)
	}
	return d
}

func (f *fixture) event(t *testing.T, ref, status string) EventResult {
	t.Helper()
	r, err := f.m.Event(f.caller, EventRequest{MessageReference: ref, Status: status})
	if err != nil {
		t.Fatalf("event %s %s: %v", ref, status, err)
	}
	return r
}

func sms(number, ref string) PreflightRequest {
	return PreflightRequest{DestinationNumber: number, Country: "GB", Channel: "sms", TemplateKind: "otp_login", MessageReference: ref}
}

// A pumping pattern: many sends to numbers of one prefix range, none
// verified. It must end blocked (and stay blocked), while a normal prefix
// whose codes are verified keeps passing.
func TestPumpingIsBlockedWhileNormalTrafficPasses(t *testing.T) {
	f := mustNewFixture(t)
	var pumpBlocked, normalRefused int
	var blockedAt int
	for i := 0; i < 40; i++ {
		f.advance(61 * time.Second) // under the default prefix velocity (10 in 10 minutes)
		// Pumping: sequential numbers in +44 7700 90xxxx, never verified.
		d := f.preflight(t, sms(fmt.Sprintf("+4477009%05d", i), "pump-"+strconv.Itoa(i)))
		if d.Decision == Block {
			if pumpBlocked == 0 {
				blockedAt = i
				if !slices.Contains(d.Reasons, ReasonPumping) || d.RetryAfter != Defaults.BlockSeconds {
					t.Fatalf("first block: %+v, want %s for %d s", d, ReasonPumping, Defaults.BlockSeconds)
				}
			} else if !slices.Contains(d.Reasons, ReasonPrefixBlocked) {
				t.Fatalf("later block: %+v, want %s", d, ReasonPrefixBlocked)
			}
			pumpBlocked++
		} else if d.Decision == Allow {
			f.event(t, "pump-"+strconv.Itoa(i), StatusDelivered)
		}
		// Normal: a different prefix, every code delivered and verified.
		ref := "ok-" + strconv.Itoa(i)
		n := f.preflight(t, sms(fmt.Sprintf("+4479461%05d", i*7), ref))
		if i == 0 && n.Prefix == d.Prefix {
			t.Fatal("the two streams share a prefix")
		}
		if n.Decision != Allow {
			normalRefused++
			t.Errorf("normal send %d refused: %+v", i, n)
			continue
		}
		f.event(t, ref, StatusDelivered)
		f.event(t, ref, StatusVerified)
	}
	if pumpBlocked == 0 {
		t.Fatal("the pumping prefix was never blocked")
	}
	if blockedAt != Defaults.ConversionMinSends {
		t.Errorf("blocked at send %d, want right after %d unverified sends", blockedAt, Defaults.ConversionMinSends)
	}
	// The block outlives the conversion window and ends after BlockSeconds.
	f.advance(2 * time.Hour)
	if d := f.preflight(t, sms("+447700900999", "pump-later")); d.Decision != Block || d.Reasons[0] != ReasonPrefixBlocked {
		t.Fatalf("two hours later: %+v, want still blocked", d)
	}
	f.advance(time.Duration(Defaults.BlockSeconds) * time.Second)
	if d := f.preflight(t, sms("+447700900998", "pump-after")); d.Decision != Allow {
		t.Fatalf("after the block: %+v, want allow", d)
	}
}

func TestVelocityDelaysThenBlocksAPrefix(t *testing.T) {
	f := mustNewFixture(t)
	f.caller.Policy = catalog.MessagingPolicy{PrefixLimit: 3, PrefixBlockFactor: 2, NumberLimit: 100}
	var got []string
	for i := 0; i < 8; i++ {
		d := f.preflight(t, sms(fmt.Sprintf("+3361234%04d", i), "v"+strconv.Itoa(i)))
		got = append(got, d.Decision)
		if d.Decision == Delay && (d.RetryAfter < 1 || d.RetryAfter > 600 || d.Reasons[0] != ReasonPrefixVelocity) {
			t.Fatalf("delay %d: %+v", i, d)
		}
	}
	want := []string{Allow, Allow, Allow, Delay, Delay, Delay, Block, Block}
	if !slices.Equal(got, want) {
		t.Fatalf("decisions %v, want %v", got, want)
	}
	// Another prefix of the same workspace is unaffected.
	if d := f.preflight(t, sms("+33699990000", "other")); d.Decision != Allow {
		t.Fatalf("other prefix: %+v", d)
	}
}

func TestNumberSubjectAndCountryVelocity(t *testing.T) {
	f := mustNewFixture(t)
	f.caller.Policy = catalog.MessagingPolicy{NumberLimit: 2, SubjectLimit: 2, CountryLimit: 100}
	r := sms("+14155550100", "n1")
	f.preflight(t, r)
	r.MessageReference = "n2"
	f.preflight(t, r)
	r.MessageReference = "n3"
	if d := f.preflight(t, r); d.Decision != Delay || !slices.Contains(d.Reasons, ReasonNumberVelocity) {
		t.Fatalf("third send to one number: %+v", d)
	}
	for i := 0; i < 3; i++ {
		r := sms(fmt.Sprintf("+1212555%04d", i), "s"+strconv.Itoa(i))
		r.SubjectID = "alice@example.com"
		d := f.preflight(t, r)
		if i == 2 && (d.Decision != Delay || !slices.Contains(d.Reasons, ReasonSubjectVelocity)) {
			t.Fatalf("third send for one subject: %+v", d)
		}
	}
	f.caller.Policy.CountryLimit = 1
	r = sms("+4915112345678", "de-1")
	r.Country = "DE"
	if d := f.preflight(t, r); d.Decision != Allow {
		t.Fatalf("first DE send: %+v", d)
	}
	r = sms("+4917612345678", "de-2")
	r.Country = "DE"
	r.MessageReference = "de-3"
	if d := f.preflight(t, r); d.Decision != Delay || !slices.Contains(d.Reasons, ReasonCountryVelocity) {
		t.Fatalf("country over its limit: %+v", d)
	}
}

func TestCountryAndChannelPolicy(t *testing.T) {
	f := mustNewFixture(t)
	f.caller.Policy = catalog.MessagingPolicy{AllowedCountries: []string{"FR", "GB"}, BlockedCountries: []string{"GB"}, Channels: []string{"sms"}}
	tests := []struct {
		name, country, channel, want string
	}{
		{"an allowed country and channel passes", "FR", "sms", ""},
		{"a blocked country is refused even when allowed", "GB", "sms", ReasonCountryNotPermitted},
		{"a country outside the allow list is refused", "DE", "sms", ReasonCountryNotPermitted},
		{"a channel outside the list is refused", "FR", "voice", ReasonChannelNotPermitted},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := sms("+33612345678", "p"+strconv.Itoa(i))
			r.Country, r.Channel = tt.country, tt.channel
			d := f.preflight(t, r)
			if tt.want == "" && d.Decision != Allow || tt.want != "" && (d.Decision != Block || !slices.Contains(d.Reasons, tt.want)) {
				t.Fatalf("got %+v, want %q", d, tt.want)
			}
		})
	}
}

func TestBadInput(t *testing.T) {
	f := mustNewFixture(t)
	long := string(make([]byte, 129))
	tests := []struct {
		name string
		req  PreflightRequest
		want error
	}{
		{"no destination", PreflightRequest{Country: "GB", Channel: "sms", TemplateKind: "otp_login", MessageReference: "r"}, ErrDestination},
		{"both number and prefix", PreflightRequest{DestinationNumber: "+447700900123", DestinationPrefix: "+4477009", Country: "GB", Channel: "sms", TemplateKind: "otp_login", MessageReference: "r"}, ErrDestination},
		{"a number without +", sms("447700900123", "r"), ErrDestination},
		{"a number too short", sms("+4477009", "r"), ErrDestination},
		{"a number too long", sms("+4477009001234567", "r"), ErrDestination},
		{"a number with letters", sms("+44770090012a", "r"), ErrDestination},
		{"a lower-case country", PreflightRequest{DestinationNumber: "+447700900123", Country: "gb", Channel: "sms", TemplateKind: "otp_login", MessageReference: "r"}, ErrCountry},
		{"an unknown channel", PreflightRequest{DestinationNumber: "+447700900123", Country: "GB", Channel: "email", TemplateKind: "otp_login", MessageReference: "r"}, ErrChannel},
		{"an unknown template kind", PreflightRequest{DestinationNumber: "+447700900123", Country: "GB", Channel: "sms", TemplateKind: "marketing", MessageReference: "r"}, ErrTemplateKind},
		{"a reference too long", sms("+447700900123", long), ErrReference},
		{"a reference with a control character", sms("+447700900123", "a\nb"), ErrReference},
		{"a subject with a control character", PreflightRequest{DestinationNumber: "+447700900123", Country: "GB", Channel: "sms", TemplateKind: "otp_login", MessageReference: "r", SubjectID: "a\x00"}, ErrSubject},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := f.m.Preflight(f.caller, tt.req); !errors.Is(err, tt.want) {
				t.Fatalf("got %v, want %v", err, tt.want)
			}
		})
	}
	// A prefix alone works and is used as is.
	d := f.preflight(t, PreflightRequest{DestinationPrefix: "+4477009", Country: "GB", Channel: "sms", TemplateKind: "otp_signup", MessageReference: "px"})
	if d.Prefix != "+4477009" || d.Decision != Allow {
		t.Fatalf("prefix only: %+v", d)
	}
	if d := f.preflight(t, sms("+447700900123", "num")); d.Prefix != "+44770090" {
		t.Fatalf("derived prefix %q, want +44770090 (the number without its last 4 digits)", d.Prefix)
	}
}

func TestReferencesAndEvents(t *testing.T) {
	f := mustNewFixture(t)
	f.preflight(t, sms("+447700900123", "m1"))
	if _, err := f.m.Preflight(f.caller, sms("+447700900124", "m1")); !errors.Is(err, ErrReferenceReused) {
		t.Fatalf("a reused reference: %v", err)
	}
	if _, err := f.m.Event(f.caller, EventRequest{MessageReference: "never", Status: StatusVerified}); !errors.Is(err, ErrMessageUnknown) {
		t.Fatalf("an unknown reference: %v", err)
	}
	if _, err := f.m.Event(f.caller, EventRequest{MessageReference: "m1", Status: "read"}); !errors.Is(err, ErrEventStatus) {
		t.Fatalf("an unknown status: %v", err)
	}
	if r := f.event(t, "m1", StatusVerified); r.Duplicate {
		t.Fatal("first verified event reported duplicate")
	}
	if r := f.event(t, "m1", StatusVerified); !r.Duplicate {
		t.Fatal("a retried verified event was counted again")
	}
	d := f.preflight(t, sms("+447700900125", "m2"))
	if d.PrefixVerified != 1 || d.PrefixSends != 2 {
		t.Fatalf("conversion counters: %+v, want 2 sends and 1 verified", d)
	}
	// Another workspace does not see w1's message.
	other := f.caller
	other.WorkspaceID, other.ScopeKey = "w2", []byte("scope-key-2")
	if _, err := f.m.Event(other, EventRequest{MessageReference: "m1", Status: StatusVerified}); !errors.Is(err, ErrMessageUnknown) {
		t.Fatalf("another workspace's event: %v", err)
	}
}

func TestFailedMessagesDoNotCountAsPumping(t *testing.T) {
	f := mustNewFixture(t)
	for i := 0; i < 40; i++ {
		f.advance(61 * time.Second)
		ref := "f" + strconv.Itoa(i)
		d := f.preflight(t, sms(fmt.Sprintf("+4477009%05d", i), ref))
		if d.Decision != Allow {
			t.Fatalf("send %d: %+v (failed deliveries are an outage, not pumping)", i, d)
		}
		f.event(t, ref, StatusFailed)
	}
}

func TestDecodeBodyRefusesCodesAndMessageBodies(t *testing.T) {
	tests := []struct {
		name string
		body string
		want error
	}{
		{"a code field", `{"destination_number":"+447700900123","code":"123456"}`, ErrContentRefused},
		{"a message body", `{"message_body":"Your code is 123456"}`, ErrContentRefused},
		{"an OTP in another case", `{"OTP":"123456"}`, ErrContentRefused},
		{"an unknown field", `{"destination":"+447700900123"}`, ErrBodyInvalid},
		{"a duplicate field", `{"country":"GB","country":"FR"}`, ErrBodyInvalid},
		{"trailing data", `{"country":"GB"} {}`, ErrBodyInvalid},
		{"not an object", `[1]`, ErrBodyInvalid},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var r PreflightRequest
			if err := DecodeBody([]byte(tt.body), &r); !errors.Is(err, tt.want) {
				t.Fatalf("got %v, want %v", err, tt.want)
			}
		})
	}
	var r PreflightRequest
	if err := DecodeBody([]byte(`{"country":"GB","channel":"sms"}`), &r); err != nil || r.Country != "GB" {
		t.Fatalf("a valid body: %v %+v", err, r)
	}
}

func TestSignatureAndReplay(t *testing.T) {
	f := mustNewFixture(t)
	sealer := NewSealer("test-cluster-key")
	set, secret, err := sealer.Rotate(nil, "w1", DefaultOverlap, f.clock())
	if err != nil {
		t.Fatal(err)
	}
	body := []byte(`{"message_reference":"m1","status":"verified"}`)
	ts := strconv.FormatInt(f.clock().Unix(), 10)
	nonce := "0123456789abcdef-1"
	good := Signed{Workspace: "w1", Timestamp: ts, Nonce: nonce, Signature: Sign([]byte(secret), ts, nonce, body), Body: body}
	bad := func(mut func(*Signed)) Signed { s := good; mut(&s); return s }
	old := strconv.FormatInt(f.clock().Add(-301*time.Second).Unix(), 10)
	tests := []struct {
		name string
		set  *catalog.MessagingSettings
		req  Signed
		want error
	}{
		{"no settings", nil, good, ErrNotConfigured},
		{"another workspace", &set, bad(func(s *Signed) { s.Workspace = "w2" }), ErrNotConfigured},
		{"a short timestamp", &set, bad(func(s *Signed) { s.Timestamp = "123" }), ErrTimestampFormat},
		{"a stale timestamp", &set, bad(func(s *Signed) { s.Timestamp = old; s.Signature = Sign([]byte(secret), old, nonce, body) }), ErrTimestampStale},
		{"a short nonce", &set, bad(func(s *Signed) { s.Nonce = "short" }), ErrNonceInvalid},
		{"a tampered body", &set, bad(func(s *Signed) { s.Body = []byte(`{"message_reference":"m2","status":"verified"}`) }), ErrSignatureInvalid},
		{"an upper-case signature", &set, bad(func(s *Signed) {
			s.Signature = "v1=" + "ABCDEF0123456789ABCDEF0123456789ABCDEF0123456789ABCDEF0123456789"
		}), ErrSignatureInvalid},
		{"the valid request", &set, good, nil},
		{"the same request replayed", &set, good, ErrNonceReused},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := f.m.Verify(tt.set, tt.req); !errors.Is(err, tt.want) {
				t.Fatalf("got %v, want %v", err, tt.want)
			}
		})
	}
	// Rotation: the old secret keeps working during the overlap, not after.
	set2, secret2, err := sealer.Rotate(&set, "w1", time.Minute, f.clock())
	if err != nil || Valid(&set2, f.clock()) != 2 {
		t.Fatalf("rotate: %v, %d valid", err, Valid(&set2, f.clock()))
	}
	for i, sec := range []string{secret, secret2} {
		n := fmt.Sprintf("rotation-nonce-%04d", i)
		if err := f.m.Verify(&set2, Signed{Workspace: "w1", Timestamp: ts, Nonce: n, Signature: Sign([]byte(sec), ts, n, body), Body: body}); err != nil {
			t.Fatalf("secret %d during the overlap: %v", i, err)
		}
	}
	f.advance(2 * time.Minute)
	ts = strconv.FormatInt(f.clock().Unix(), 10)
	n := "rotation-nonce-late"
	if err := f.m.Verify(&set2, Signed{Workspace: "w1", Timestamp: ts, Nonce: n, Signature: Sign([]byte(secret), ts, n, body), Body: body}); !errors.Is(err, ErrSignatureInvalid) {
		t.Fatalf("old secret after the overlap: %v", err)
	}
	// A sealed secret does not open under another workspace.
	moved := set2
	moved.WorkspaceID = "w2"
	if err := f.m.Verify(&moved, Signed{Workspace: "w2", Timestamp: ts, Nonce: n, Signature: Sign([]byte(secret2), ts, n, body), Body: body}); !errors.Is(err, ErrSignatureInvalid) {
		t.Fatalf("settings moved to another workspace: %v", err)
	}
}

func TestValidatePolicy(t *testing.T) {
	if _, err := ValidatePolicy(catalog.MessagingPolicy{PrefixLimit: -1}); !errors.Is(err, ErrPolicyInvalid) {
		t.Fatalf("negative limit: %v", err)
	}
	if _, err := ValidatePolicy(catalog.MessagingPolicy{BlockSeconds: 10}); !errors.Is(err, ErrPolicyInvalid) {
		t.Fatalf("block too short: %v", err)
	}
	if _, err := ValidatePolicy(catalog.MessagingPolicy{AllowedCountries: []string{"gb"}}); !errors.Is(err, ErrPolicyInvalid) {
		t.Fatalf("lower-case country: %v", err)
	}
	if _, err := ValidatePolicy(catalog.MessagingPolicy{Channels: []string{"email"}}); !errors.Is(err, ErrPolicyInvalid) {
		t.Fatalf("unknown channel: %v", err)
	}
	p, err := ValidatePolicy(catalog.MessagingPolicy{BlockedCountries: []string{"RU", "KP", "RU"}})
	if err != nil || !slices.Equal(p.BlockedCountries, []string{"KP", "RU"}) {
		t.Fatalf("normalised: %v %v", p.BlockedCountries, err)
	}
	if e := Effective(catalog.MessagingPolicy{PrefixLimit: 7}); e.PrefixLimit != 7 || e.BlockSeconds != Defaults.BlockSeconds {
		t.Fatalf("effective: %+v", e)
	}
}

// The test vector of DESIGN.md (and its openssl shell client).
func TestSignTestVector(t *testing.T) {
	const want = "v1=693056e21b7cd8bad8940aef58dd3fff49dc35cf14166864700298dc31fbdf66"
	if got := Sign([]byte("msk_test"), "1700000000", "0123456789abcdef", []byte(`{"a":1}`)); got != want {
		t.Fatalf("got %s, want %s", got, want)
	}
}

// Rotating again and again keeps the secret just rotated out valid (the
// cap drops the oldest), and never more than MaxMessagingKeys.
func TestRepeatedRotationKeepsThePreviousSecret(t *testing.T) {
	f := mustNewFixture(t)
	sealer := NewSealer("test-cluster-key")
	var set *catalog.MessagingSettings
	var prev string
	for i := 0; i < 5; i++ {
		next, secret, err := sealer.Rotate(set, "w1", time.Hour, f.clock())
		if err != nil {
			t.Fatal(err)
		}
		if len(next.Keys) > catalog.MaxMessagingKeys {
			t.Fatalf("rotation %d: %d keys", i, len(next.Keys))
		}
		body := []byte(`{}`)
		ts := strconv.FormatInt(f.clock().Unix(), 10)
		for j, sec := range []string{secret, prev} {
			if sec == "" {
				continue
			}
			n := fmt.Sprintf("rotation-%d-secret-%d", i, j)
			if err := f.m.Verify(&next, Signed{Workspace: "w1", Timestamp: ts, Nonce: n, Signature: Sign([]byte(sec), ts, n, body), Body: body}); err != nil {
				t.Fatalf("rotation %d, secret %d: %v", i, j, err)
			}
		}
		set, prev = &next, secret
	}
}
