// Command gohttpsig is a minimal Go signer for trustd Agent Trust with HTTP
// Message Signatures (RFC 9421, Ed25519, Web Bot Auth profile), standard
// library only: it signs "@authority", "@path" and "content-digest" with
// keyid = the agent_id, and sends the request.
//
//	TRUSTD_URL=http://127.0.0.1:8080 AGENT_ID=<uuid> AGENT_ED25519_SEED=<base64url of the 32-byte seed> \
//	  go run ./agents/examples/gohttpsig /v1/agents/decision '{"request_id":"r1",...}'
package main

import (
	"bytes"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"
)

func main() {
	if len(os.Args) != 3 {
		fmt.Fprintln(os.Stderr, "usage: gohttpsig PATH BODY")
		os.Exit(2)
	}
	path, body := os.Args[1], []byte(os.Args[2]) // the exact bytes sent below
	seed, err := base64.RawURLEncoding.DecodeString(os.Getenv("AGENT_ED25519_SEED"))
	if err != nil || len(seed) != ed25519.SeedSize {
		fmt.Fprintln(os.Stderr, "AGENT_ED25519_SEED must be base64url of 32 bytes")
		os.Exit(2)
	}
	u, err := url.Parse(os.Getenv("TRUSTD_URL") + path)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	// @authority: the Host header lowercased, without a default port.
	authority := strings.TrimSuffix(strings.TrimSuffix(strings.ToLower(u.Host), ":443"), ":80")
	var rnd [32]byte
	_, _ = rand.Read(rnd[:])
	nonce := base64.RawURLEncoding.EncodeToString(rnd[:]) // 43 chars
	created := time.Now().Unix()
	sum := sha256.Sum256(body)
	digest := "sha-256=:" + base64.StdEncoding.EncodeToString(sum[:]) + ":"
	params := fmt.Sprintf(`("@authority" "@path" "content-digest");created=%d;expires=%d;keyid="%s";nonce="%s";alg="ed25519";tag="web-bot-auth"`,
		created, created+60, os.Getenv("AGENT_ID"), nonce)
	base := `"@authority": ` + authority + "\n" + `"@path": ` + u.EscapedPath() + "\n" + `"content-digest": ` + digest + "\n" +
		`"@signature-params": ` + params
	sig := ed25519.Sign(ed25519.NewKeyFromSeed(seed), []byte(base))
	req, err := http.NewRequest("POST", u.String(), bytes.NewReader(body))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Content-Digest", digest)
	req.Header.Set("Signature-Input", "sig1="+params)
	req.Header.Set("Signature", "sig1=:"+base64.StdEncoding.EncodeToString(sig)+":")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	defer resp.Body.Close()
	out, _ := io.ReadAll(resp.Body)
	fmt.Println(resp.StatusCode, string(out))
}
