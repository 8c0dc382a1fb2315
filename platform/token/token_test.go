package token

import (
	"bytes"
	"errors"
	"strings"
	"testing"
)

func mustKeys(t testing.TB) (*Key, Lookup) {
	t.Helper()
	k := NewKey("l1234567", []byte("0123456789abcdef0123456789abcdef"))
	return k, func(id string) *Key {
		if id == k.ID {
			return k
		}
		return nil
	}
}

func sampleResponse() Response {
	return Response{ID: [16]byte{1, 2, 3}, SiteID: "9f1c2d3e-0000-4000-8000-000000000001", Hostname: "shop.example.com",
		Action: "login", CData: "sess-42", HasIP: true, IPHash: [16]byte{9, 9}, Mode: ModeVisual, Variant: "image",
		Score: 870, Reasons: 0b1010, Issued: 1_700_000_000, Expires: 1_700_000_300}
}

func TestResponseRoundTrip(t *testing.T) {
	k, keys := mustKeys(t)
	in := sampleResponse()
	text := in.Sign(k, LivePrefix)
	out, err := DecodeResponse(text, LivePrefix, keys, nil)
	if err != nil {
		t.Fatal(err)
	}
	in.KeyID = k.ID
	if out != in {
		t.Fatalf("round trip changed the token:\n got %+v\nwant %+v", out, in)
	}
}

func TestResponseRefusals(t *testing.T) {
	k, keys := mustKeys(t)
	good := func() string { r := sampleResponse(); return r.Sign(k, LivePrefix) }()
	other := NewKey(k.ID, []byte("another secret of the same id....."))
	forged := func() string { r := sampleResponse(); return r.Sign(other, LivePrefix) }()
	unknown := func() string { r := sampleResponse(); return r.Sign(NewKey("zz", []byte("x")), LivePrefix) }()
	sandbox := func() string { r := sampleResponse(); return r.Sign(k, SandboxPrefix) }()
	flipped := []byte(good)
	flipped[len(LivePrefix)+20] ^= 0x01
	if flipped[len(LivePrefix)+20] == '-' || flipped[len(LivePrefix)+20] == '_' {
		flipped[len(LivePrefix)+20] = 'A'
	}
	tests := []struct {
		name string
		text string
		want error
	}{
		{"an empty string is malformed", "", ErrMalformed},
		{"a value without the prefix is malformed", "hello", ErrMalformed},
		{"bad base64 is malformed", LivePrefix + "!!!!", ErrMalformed},
		{"a truncated value is malformed", good[:len(good)-10], ErrSignature},
		{"an over-long value is refused before decoding", LivePrefix + strings.Repeat("A", 5000), ErrMalformed},
		{"a flipped payload bit breaks the signature", string(flipped), ErrSignature},
		{"a token signed with another secret is forged", forged, ErrSignature},
		{"a token of an unknown key is refused", unknown, ErrUnknownKey},
		{"a sandbox token is not a live token", sandbox, ErrMalformed},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := DecodeResponse(tc.text, LivePrefix, keys, nil)
			if err == nil {
				t.Fatal("decoded; want an error")
			}
			if tc.want != nil && !errors.Is(err, tc.want) && !errors.Is(err, ErrMalformed) {
				t.Fatalf("err = %v, want %v", err, tc.want)
			}
		})
	}
}

func TestSandboxPrefixIsUnderTheMAC(t *testing.T) {
	k, keys := mustKeys(t)
	r := sampleResponse()
	text := r.Sign(k, SandboxPrefix)
	relabelled := LivePrefix + strings.TrimPrefix(text, SandboxPrefix)
	if _, err := DecodeResponse(relabelled, LivePrefix, keys, nil); !errors.Is(err, ErrSignature) {
		t.Fatalf("a sandbox token relabelled as live: err = %v, want ErrSignature", err)
	}
}

func TestChallengePuzzleClearanceRoundTrip(t *testing.T) {
	k, keys := mustKeys(t)
	ch := Challenge{ID: [16]byte{7}, SiteID: "s", Hostname: "h.example", Action: "signup", CData: "c", IPHash: [16]byte{1},
		Mode: ModeScoreEnforced, Salt: [16]byte{4, 4}, Iterations: 1000, Difficulty: 9, Risk: 2, HasPuzzle: true,
		PuzzleSeed: [16]byte{5}, Issued: 10, Expires: 130}
	gotC, err := DecodeChallenge(ch.Sign(k), keys)
	ch.KeyID = k.ID
	if err != nil || gotC != ch {
		t.Fatalf("challenge round trip: %v\n got %+v\nwant %+v", err, gotC, ch)
	}
	pz := Puzzle{Seed: [16]byte{3}, Expires: 99}
	gotP, err := DecodePuzzle(pz.Sign(k), keys)
	pz.KeyID = k.ID
	if err != nil || gotP != pz {
		t.Fatalf("puzzle round trip: %v", err)
	}
	cl := Clearance{ID: [16]byte{2}, SiteID: "s", AssessmentID: "a", Host: "h", Action: "pay", Path: "/checkout",
		HasSubject: true, SubjectHash: [16]byte{8}, Issued: 1, Expires: 2}
	gotL, err := DecodeClearance(cl.Sign(k), keys)
	cl.KeyID = k.ID
	if err != nil || gotL != cl {
		t.Fatalf("clearance round trip: %v", err)
	}
	// A challenge is not a clearance even under the same key.
	if _, err := DecodeClearance(ch.Sign(k), keys); err == nil {
		t.Fatal("a challenge decoded as a clearance")
	}
}

func TestHash16SeparatesLabels(t *testing.T) {
	k, _ := mustKeys(t)
	if k.Hash16("ip", "1.2.3.4") == k.Hash16("subject", "1.2.3.4") {
		t.Fatal("the same value under two labels hashed alike")
	}
	if k.Hash16("ip", "1.2.3.4") != k.Hash16("ip", "1.2.3.4") {
		t.Fatal("hash is not deterministic")
	}
}

func FuzzDecodeResponse(f *testing.F) {
	k, keys := mustKeys(f)
	r := sampleResponse()
	f.Add(r.Sign(k, LivePrefix))
	f.Add(LivePrefix + "AAAA")
	f.Fuzz(func(t *testing.T, s string) {
		_, _ = DecodeResponse(s, LivePrefix, keys, nil)
		_, _ = DecodeChallenge(s, keys)
		_, _ = DecodeClearance(s, keys)
	})
}

func BenchmarkResponseSign(b *testing.B) {
	k, _ := mustKeys(b)
	r := sampleResponse()
	b.ReportAllocs()
	for b.Loop() {
		_ = r.Sign(k, LivePrefix)
	}
}

func BenchmarkResponseVerify(b *testing.B) {
	k, keys := mustKeys(b)
	r := sampleResponse()
	text := r.Sign(k, LivePrefix)
	scratch := make([]byte, 512)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := DecodeResponse(text, LivePrefix, keys, scratch); err != nil {
			b.Fatal(err)
		}
	}
}

func TestAResponseTokenRevealsNothingAboutTheClient(t *testing.T) {
	k, keys := mustKeys(t)
	tr := sampleResponse()
	tr.Hostname, tr.Action, tr.CData, tr.Score = "shop.example.com", "checkout-pay", "session-cdata-xyz", 123
	text := tr.Sign(k, LivePrefix)
	raw, err := b64.DecodeString(strings.TrimPrefix(text, LivePrefix))
	if err != nil {
		t.Fatal(err)
	}
	for _, secret := range []string{tr.Hostname, tr.Action, tr.CData, tr.SiteID} {
		if bytes.Contains(raw, []byte(secret)) {
			t.Fatalf("the token carries %q in the clear", secret)
		}
	}
	// The same claims sealed twice (another token id) share no body bytes
	// a client could compare to infer its score.
	tr2 := tr
	tr2.ID[0] ^= 0xff
	raw2, _ := b64.DecodeString(strings.TrimPrefix(tr2.Sign(k, LivePrefix), LivePrefix))
	if bytes.Equal(raw[len(raw)-60:len(raw)-MACSize], raw2[len(raw2)-60:len(raw2)-MACSize]) {
		t.Fatal("two tokens with the same claims have the same ciphertext")
	}
	got, err := DecodeResponse(text, LivePrefix, keys, nil)
	if err != nil || got.Score != 123 || got.Action != "checkout-pay" || got.CData != "session-cdata-xyz" {
		t.Fatalf("round trip: %+v %v", got, err)
	}
}

func TestVersionOneTokensStillVerifyDuringAnUpgrade(t *testing.T) {
	k, keys := mustKeys(t)
	tr := sampleResponse()
	w := writer{}
	w.str(k.ID)
	w.u8(responseVersionSigned)
	w.fixed(tr.ID[:])
	tr.appendBody(&w)
	got, err := DecodeResponse(seal(k, LivePrefix, w.b), LivePrefix, keys, nil)
	if err != nil || got.Score != tr.Score || got.Hostname != tr.Hostname {
		t.Fatalf("a version 1 token: %+v %v", got, err)
	}
}

// A bot operator must not read its verdict from the length of its token:
// every score and every reason set seals to the same length (issue 24:
// a scripted client's token was one byte longer than a browser's).
func TestEveryVerdictSealsToOneLength(t *testing.T) {
	k, keys := mustKeys(t)
	reasonSets := []uint32{0, 0xffffffff, 0x7f, 0x80, 0x3fff, 0x4000, 0x1fffff, 0x200000, 0xfffffff, 0x10000000}
	for bit := 0; bit < 32; bit++ {
		reasonSets = append(reasonSets, 1<<bit, ^uint32(0)>>bit)
	}
	for a := 0; a < 32; a++ {
		for b := a + 1; b < 32; b++ {
			reasonSets = append(reasonSets, 1<<a|1<<b)
		}
	}
	for _, prefix := range []string{LivePrefix, SandboxPrefix} {
		want := -1
		check := func(score uint16, reasons uint32) {
			t.Helper()
			tr := sampleResponse()
			tr.Score, tr.Reasons = score, reasons
			text := tr.Sign(k, prefix)
			if want < 0 {
				want = len(text)
			}
			if len(text) != want {
				t.Fatalf("%s: score %d with reasons %#x seals to %d characters, others to %d", prefix, score, reasons, len(text), want)
			}
			got, err := DecodeResponse(text, prefix, keys, nil)
			if err != nil || got.Score != score || got.Reasons != reasons {
				t.Fatalf("%s: score %d reasons %#x decode as %d %#x: %v", prefix, score, reasons, got.Score, got.Reasons, err)
			}
		}
		for score := uint16(0); score <= 1000; score++ {
			check(score, uint32(score)*0x10001)
		}
		for _, reasons := range reasonSets {
			for _, score := range []uint16{0, 1, 127, 128, 500, 999, 1000} {
				check(score, reasons)
			}
		}
	}
}

// Tokens sealed before the verdict had a fixed width (minimal varints)
// still verify, and tokens sealed now verify on a node of the earlier
// build: the padded varints are ordinary varints to any reader.
func TestTokensSealedBeforeTheFixedWidthStillVerify(t *testing.T) {
	k, keys := mustKeys(t)
	for _, v := range []struct {
		score   uint16
		reasons uint32
	}{{0, 0}, {870, 0b1010}, {1000, 0xffffffff}, {5, 1 << 31}} {
		tr := sampleResponse()
		tr.Score, tr.Reasons = v.score, v.reasons
		// The earlier build's Sign: minimal varints for score and reasons.
		w := writer{}
		w.str(k.ID)
		w.u8(responseVersion)
		w.fixed(tr.ID[:])
		head := len(w.b)
		b := writer{}
		b.str(tr.SiteID)
		b.str(tr.Hostname)
		b.str(tr.Action)
		b.str(tr.CData)
		b.flag(tr.HasIP)
		b.fixed(tr.IPHash[:])
		b.u8(byte(tr.Mode))
		b.str(tr.Variant)
		b.uvarint(uint64(tr.Score))
		b.uvarint(uint64(tr.Reasons))
		b.varint(tr.Issued)
		b.varint(tr.Expires)
		b.u8(tr.Scenario)
		w.b = k.aead.Seal(w.b[:head], tr.ID[:12], b.b, w.b[:head])
		got, err := DecodeResponse(seal(k, LivePrefix, w.b), LivePrefix, keys, nil)
		tr.KeyID = k.ID
		if err != nil || got != tr {
			t.Fatalf("a token of the earlier build: %+v %v", got, err)
		}
	}
}
