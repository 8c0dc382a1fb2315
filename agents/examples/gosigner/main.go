// Command gosigner is a minimal Go signer for trustd Agent Trust (HMAC v1),
// standard library only.
//
//	TRUSTD_URL=http://127.0.0.1:8080 AGENT_ID=<uuid> AGENT_SECRET=ags_… \
//	  go run ./agents/examples/gosigner /v1/agents/decision '{"request_id":"r1",...}'
package main

import (
	"bytes"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"time"
)

func main() {
	if len(os.Args) != 3 {
		fmt.Fprintln(os.Stderr, "usage: gosigner PATH BODY")
		os.Exit(2)
	}
	path, body := os.Args[1], []byte(os.Args[2])
	ts := strconv.FormatInt(time.Now().Unix(), 10) // exactly 10 digits
	var rnd [24]byte
	_, _ = rand.Read(rnd[:])
	nonce := base64.RawURLEncoding.EncodeToString(rnd[:]) // 32 chars
	m := hmac.New(sha256.New, []byte(os.Getenv("AGENT_SECRET")))
	m.Write([]byte(ts + "\n" + nonce + "\n"))
	m.Write(body) // the exact bytes sent below
	req, err := http.NewRequest("POST", os.Getenv("TRUSTD_URL")+path, bytes.NewReader(body))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Service-Agent", os.Getenv("AGENT_ID"))
	req.Header.Set("X-Service-Timestamp", ts)
	req.Header.Set("X-Service-Nonce", nonce)
	req.Header.Set("X-Service-Signature", "v1="+hex.EncodeToString(m.Sum(nil)))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	defer resp.Body.Close()
	out, _ := io.ReadAll(resp.Body)
	fmt.Println(resp.StatusCode, string(out))
}
