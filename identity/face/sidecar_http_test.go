package face_test

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/trustd/trustd/identity/face"
)

// The sidecar's own guards, on a second sidecar with a small body limit and
// no waiting queue: the secret is required (and compared whole), bodies
// over the limit are refused with 413 before analysis, a second concurrent
// analysis is refused with 503 (ErrUnavailable), and /healthz answers
// without the secret.
func TestSidecarGuards(t *testing.T) {
	engine(t) // skips when the sidecar is not installed
	dir, _ := face.FindSidecarDir()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	s, err := face.StartSidecar(ctx, face.SidecarConfig{Dir: dir, Env: []string{"FACE_SIDECAR_MAX_BODY=200000", "FACE_SIDECAR_MAX_QUEUE=0"}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Stop()
	raw, _ := sampleFace(t)
	cfg := s.Config()

	post := func(secret string, body []byte) int {
		req, _ := http.NewRequest(http.MethodPost, cfg.URL+"/v1/analyze", bytes.NewReader(body))
		if secret != "" {
			req.Header.Set(face.SecretHeader, secret)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return -1
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	for name, secret := range map[string]string{
		"none":   "",
		"prefix": cfg.Secret[:len(cfg.Secret)-1],
		"longer": cfg.Secret + "x",
		"other":  strings.Repeat("a", len(cfg.Secret)),
	} {
		if code := post(secret, raw); code != http.StatusUnauthorized {
			t.Errorf("secret %s: %d", name, code)
		}
	}
	if code := post(cfg.Secret, raw); code != http.StatusOK {
		t.Fatalf("right secret: %d", code)
	}
	if code := post(cfg.Secret, bytes.Repeat([]byte{0xff}, 300000)); code != http.StatusRequestEntityTooLarge && code != -1 {
		t.Errorf("oversized body: %d", code)
	}
	resp, err := http.Get(cfg.URL + "/healthz")
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("healthz: %v %v", resp, err)
	}
	resp.Body.Close()

	c, _ := face.NewClient(cfg)
	var wg sync.WaitGroup
	errs := make([]error, 4)
	for i := range errs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			t0 := time.Now()
			_, errs[i] = c.Analyze(context.Background(), raw)
			t.Logf("analysis %d: %v after %v", i, errs[i], time.Since(t0))
		}()
	}
	wg.Wait()
	var ok, busy int
	for _, err := range errs {
		switch {
		case err == nil:
			ok++
		case errors.Is(err, face.ErrUnavailable):
			busy++
		default:
			t.Errorf("unexpected %v", err)
		}
	}
	if ok == 0 || busy == 0 {
		t.Fatalf("%d answered, %d refused as busy: the queue bound did not act", ok, busy)
	}
	t.Logf("4 concurrent analyses with no queue: %d answered, %d refused (503)", ok, busy)
}
