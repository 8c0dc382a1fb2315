// Package challenge mints siteverify tokens the way a browser does: it asks
// trustd for a challenge, solves its proof of work and redeems the solution.
// It owns the client side of the challenge protocol only; minting happens
// before a measured phase, never during one.
package challenge

import (
	"bytes"
	"cmp"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/trustd/trustd/verify/pow"
)

// ErrUnsolvable is returned when no nonce up to MaxNonce meets the
// difficulty, which at the bench difficulty means the challenge is broken.
var ErrUnsolvable = errors.New("challenge: no solution found")

// ErrUnsupported is returned for a proof-of-work algorithm other than
// pbkdf2-sha256.
var ErrUnsupported = errors.New("challenge: unsupported proof of work")

// MaxNonce bounds the search: 2^24 tries is ~2^(24-d) times the expected
// work at difficulty d, so hitting it means something is wrong.
const MaxNonce = 1 << 24

// PoW is the proof-of-work part of a challenge.
type PoW struct {
	Algorithm  string `json:"algorithm"`
	Salt       string `json:"salt"`
	Iterations int    `json:"iterations"`
	Difficulty int    `json:"difficulty"`
}

// Challenge is trustd's answer to POST /v1/challenge.
type Challenge struct {
	Challenge string `json:"challenge"`
	Type      string `json:"challenge_type"`
	PoW       PoW    `json:"pow"`
	ExpiresIn int    `json:"expires_in"`
}

// Solve finds the first nonce n (0, 1, 2, …) whose PBKDF2-HMAC-SHA256 of the
// decimal string of n, with the challenge's salt and iterations, has at least
// Difficulty leading zero bits. It stops when ctx is done.
func Solve(ctx context.Context, p PoW) (int, error) {
	if p.Algorithm != "pbkdf2-sha256" {
		return 0, fmt.Errorf("%w: %q", ErrUnsupported, p.Algorithm)
	}
	salt, err := base64.RawURLEncoding.DecodeString(p.Salt)
	if err != nil {
		return 0, fmt.Errorf("challenge: salt: %w", err)
	}
	if p.Iterations < 1 {
		return 0, fmt.Errorf("challenge: bad iteration count %d", p.Iterations)
	}
	for n := range MaxNonce {
		if n&63 == 0 && ctx.Err() != nil {
			return 0, ctx.Err()
		}
		if dk := pow.Derive(strconv.Itoa(n), salt, p.Iterations); len(dk) == 32 && pow.LeadingZeroBits(dk) >= p.Difficulty {
			return n, nil
		}
	}
	return 0, ErrUnsolvable
}

// Minter obtains tokens for one site.
type Minter struct {
	base    string
	origin  string
	sitekey string
	hc      *http.Client
	// Action is the action each token is bound to ("bench" when empty);
	// a siteverify naming another action refuses the token.
	Action string
	// spread mints each token from its own loopback source address
	// (127.x.y.z), as real traffic comes from many clients: the server
	// raises proof-of-work difficulty for an address that asks for many
	// challenges, which would otherwise throttle minting from one address.
	spread bool
}

// NewMinter returns a Minter talking to the node at base, presenting Origin
// origin, for the site with key sitekey; conns sizes its connection pool.
func NewMinter(base, origin, sitekey string, conns int) *Minter {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConnsPerHost = conns
	m := &Minter{base: strings.TrimRight(base, "/"), origin: origin, sitekey: sitekey,
		hc: &http.Client{Timeout: 30 * time.Second, Transport: tr}}
	if u, err := url.Parse(m.base); err == nil {
		if ip := net.ParseIP(u.Hostname()); ip != nil && ip.To4() != nil && ip.To4()[0] == 127 {
			m.spread = true
		}
	}
	return m
}

// clientFor returns the client one token is minted with: the shared pool,
// or with spread a client bound to a random loopback source address (a
// challenge is bound to the address that asked for it, so both requests of
// one token use the same one).
func (m *Minter) clientFor() (*http.Client, func()) {
	if !m.spread {
		return m.hc, func() {}
	}
	src := &net.TCPAddr{IP: net.IPv4(127, byte(1+rand.IntN(254)), byte(rand.IntN(256)), byte(1+rand.IntN(254)))}
	tr := &http.Transport{
		DialContext:         (&net.Dialer{LocalAddr: src, Timeout: 5 * time.Second}).DialContext,
		MaxIdleConnsPerHost: 1,
	}
	return &http.Client{Timeout: 30 * time.Second, Transport: tr}, tr.CloseIdleConnections
}

func (m *Minter) post(ctx context.Context, hc *http.Client, path string, in, out any) error {
	b, err := json.Marshal(in)
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, m.base+path, bytes.NewReader(b))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Origin", m.origin)
	resp, err := hc.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s: HTTP %d: %s", path, resp.StatusCode, strings.TrimSpace(string(body[:min(len(body), 300)])))
	}
	if err := json.Unmarshal(body, out); err != nil {
		return fmt.Errorf("%s: decode %q: %w", path, body, err)
	}
	return nil
}

// Mint runs the whole protocol once and returns a fresh token.
func (m *Minter) Mint(ctx context.Context) (string, error) {
	hc, done := m.clientFor()
	defer done()
	var ch Challenge
	if err := m.post(ctx, hc, "/v1/challenge", map[string]string{"sitekey": m.sitekey, "action": cmp.Or(m.Action, "bench")}, &ch); err != nil {
		return "", fmt.Errorf("challenge: %w", err)
	}
	n, err := Solve(ctx, ch.PoW)
	if err != nil {
		return "", err
	}
	var red struct {
		Success bool   `json:"success"`
		Token   string `json:"token"`
	}
	in := map[string]any{
		"challenge": ch.Challenge,
		"nonce":     strconv.Itoa(n),
		"signals":   map[string]any{"interaction": true, "elapsed_ms": 1200},
	}
	if err := m.post(ctx, hc, "/v1/challenge/redeem", in, &red); err != nil {
		return "", fmt.Errorf("challenge: %w", err)
	}
	if !red.Success || red.Token == "" {
		return "", fmt.Errorf("challenge: redeem answered success=%v without a token", red.Success)
	}
	return red.Token, nil
}
