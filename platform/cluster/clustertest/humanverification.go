package clustertest

import (
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	nethttp "net/http"
	"net/url"
	"strings"
	"time"

	"github.com/trustd/trustd/platform/actors"
	"github.com/trustd/trustd/platform/errcode"
	"github.com/trustd/trustd/platform/token"
	"github.com/trustd/trustd/verify/pow"
)

// Helpers that drive the human-verification protocol over HTTP against
// any node's API URL, as a browser widget and a customer backend would.
// The multi-process system tests use them too.

// hvClient keeps at most 8 connections per node, as a backend's pooled
// HTTP client would: 200 parallel callers then queue for a connection
// rather than open 200 at once, which under the race detector on a loaded
// 2-core machine starves the in-process nodes past their 500 ms ask bound.
var hvClient = &nethttp.Client{Timeout: 15 * time.Second, Transport: &nethttp.Transport{MaxIdleConnsPerHost: 8, MaxConnsPerHost: 8}}

func postJSON(u string, headers map[string]string, body any, out any) (int, []byte, error) {
	b, err := json.Marshal(body)
	if err != nil {
		return 0, nil, err
	}
	req, err := nethttp.NewRequest("POST", u, bytes.NewReader(b))
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	resp, err := hvClient.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	rb, err := io.ReadAll(resp.Body)
	if err == nil && out != nil && resp.StatusCode == 200 {
		err = json.Unmarshal(rb, out)
	}
	return resp.StatusCode, rb, err
}

// MintToken runs the widget protocol against api: POST /v1/challenge with
// origin (which must be on the site's allow-list), a proof-of-work
// solution, POST /v1/challenge/redeem. It returns the response token.
func MintToken(api, siteKey, origin, action string) (string, error) {
	return MintTokenWithCData(api, siteKey, origin, action, "")
}

// MintTokenWithCData is MintToken with cdata bound to the token (a
// journey's human_verification binds the session reference).
func MintTokenWithCData(api, siteKey, origin, action, cdata string) (string, error) {
	hdr := map[string]string{"Origin": origin}
	var ch struct {
		Challenge string `json:"challenge"`
		Pow       struct {
			Salt       string `json:"salt"`
			Iterations int    `json:"iterations"`
			Difficulty int    `json:"difficulty"`
		} `json:"pow"`
	}
	if st, b, err := postJSON(api+"/v1/challenge", hdr, map[string]any{"sitekey": siteKey, "action": action, "cdata": cdata}, &ch); err != nil || st != 200 {
		return "", fmt.Errorf("challenge: %d %s %v", st, b, err)
	}
	salt, err := base64.RawURLEncoding.DecodeString(ch.Pow.Salt)
	if err != nil {
		return "", err
	}
	nonce, ok := pow.Solve(salt, ch.Pow.Iterations, ch.Pow.Difficulty, 1<<22)
	if !ok {
		return "", errors.New("no proof-of-work solution")
	}
	var rd struct {
		Success bool   `json:"success"`
		Token   string `json:"token"`
	}
	body := map[string]any{"challenge": ch.Challenge, "nonce": nonce,
		"signals": map[string]any{"interaction": true, "visible": true, "elapsed_ms": 1800, "pointer_moves": 12}}
	// A 503 (the challenge's owner lapsed, or gained its partition a
	// moment ago and waits for the hand-off) used nothing: retried for a
	// bound, as the widget does.
	for deadline := time.Now().Add(15 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		st, b, err := postJSON(api+"/v1/challenge/redeem", hdr, body, &rd)
		if st == 503 && time.Now().Before(deadline) {
			continue
		}
		if err != nil || st != 200 || !rd.Success || rd.Token == "" {
			return "", fmt.Errorf("redeem: %d %s %v", st, b, err)
		}
		return rd.Token, nil
	}
}

// Verdict is the part of a siteverify answer the tests look at.
type Verdict struct {
	Success      bool     `json:"success"`
	ErrorCodes   []string `json:"error-codes"`
	AssessmentID string   `json:"assessment_id"`
}

// Siteverify posts one form-encoded /v1/siteverify of response with the
// site secret, and an idempotency key when idem is not empty.
func Siteverify(api, secret, response, idem string) (int, Verdict, error) {
	form := url.Values{"secret": {secret}, "response": {response}}
	if idem != "" {
		form.Set("idempotency_key", idem)
	}
	var v Verdict
	resp, err := hvClient.Post(api+"/v1/siteverify", "application/x-www-form-urlencoded", strings.NewReader(form.Encode()))
	if err != nil {
		return 0, v, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err == nil && resp.StatusCode == 200 {
		err = json.Unmarshal(b, &v)
	}
	return resp.StatusCode, v, err
}

// SiteverifyAnswered posts a siteverify as a backend that retries
// "unavailable" would: a 503 (the owner of the token could not answer in
// time, and the token was not burnt) is retried with the same idempotency
// key, through the next of apis, until another answer or the deadline.
// It returns that answer and how many 503s came before it.
func SiteverifyAnswered(apis []string, secret, response, idem string, deadline time.Time) (Verdict, int, error) {
	unavailable := 0
	for attempt := 0; ; attempt++ {
		st, v, err := Siteverify(apis[attempt%len(apis)], secret, response, idem)
		switch {
		case err == nil && st == 200:
			return v, unavailable, nil
		case err == nil && st == 503 && time.Now().Before(deadline):
			unavailable++
			time.Sleep(20 * time.Millisecond)
		default:
			return v, unavailable, fmt.Errorf("siteverify: %d %v (after %d unavailable)", st, err, unavailable)
		}
	}
}

// SiteverifyRetried is SiteverifyAnswered for a backend whose request may
// also be cut off (the node it asked died, the connection broke): a 503
// or a transport error is retried with the same idempotency key through
// the next of apis, after a bounded backoff with jitter (20 ms doubling
// to 640 ms), until a 200 or the deadline. It returns the answer and how
// many attempts failed before it.
func SiteverifyRetried(apis []string, secret, response, idem string, deadline time.Time) (Verdict, int, error) {
	failed := 0
	backoff := 20 * time.Millisecond
	for attempt := 0; ; attempt++ {
		st, v, err := Siteverify(apis[attempt%len(apis)], secret, response, idem)
		switch {
		case err == nil && st == 200:
			return v, failed, nil
		case (err != nil || st == 503) && time.Now().Before(deadline):
			failed++
			time.Sleep(backoff/2 + rand.N(backoff/2+1))
			backoff = min(2*backoff, 640*time.Millisecond)
		default:
			return v, failed, fmt.Errorf("siteverify: %d %v (after %d failed attempts)", st, err, failed)
		}
	}
}

// Duplicate reports a refused replay.
func (v Verdict) Duplicate() bool {
	return !v.Success && len(v.ErrorCodes) == 1 && v.ErrorCodes[0] == errcode.CodeTimeoutOrDuplicate
}

// TokenMarkerKey is the router key under which siteverify redeems a live
// response token ("tok/" and the token id in hex), so a test can find the
// token's owner. It reads the id from the token's public payload (key id,
// version, id; package token) without checking the signature.
func TokenMarkerKey(response string) (string, error) {
	raw, err := base64.RawURLEncoding.DecodeString(strings.TrimPrefix(response, token.LivePrefix))
	if err != nil {
		return "", err
	}
	kid, n := binary.Uvarint(raw)
	if n <= 0 || uint64(len(raw)) < uint64(n)+kid+1+16 {
		return "", errors.New("clustertest: not a response token")
	}
	id := raw[uint64(n)+kid+1 : uint64(n)+kid+1+16]
	return actors.SpaceToken + hex.EncodeToString(id), nil
}
