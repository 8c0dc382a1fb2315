package face

import (
	"context"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestCompare(t *testing.T) {
	a := []float32{1, 2, 3, 0}
	tests := []struct {
		name  string
		b     []float32
		sim   float64
		match bool
	}{
		{"identical", []float32{1, 2, 3, 0}, 1, true},
		{"scaled", []float32{2, 4, 6, 0}, 1, true},
		{"orthogonal", []float32{0, 0, 0, 5}, 0, false},
		{"opposite", []float32{-1, -2, -3, 0}, -1, false},
		{"length differs", []float32{1, 2, 3}, 0, false},
		{"zero vector", []float32{0, 0, 0, 0}, 0, false},
		{"empty", nil, 0, false},
	}
	for _, tc := range tests {
		sim, ok := Compare(a, tc.b, 0.7)
		if math.Abs(sim-tc.sim) > 1e-9 || ok != tc.match {
			t.Errorf("%s: %v %v, want %v %v", tc.name, sim, ok, tc.sim, tc.match)
		}
	}
	if _, ok := Compare(nil, nil, -1); ok {
		t.Fatal("two empty descriptors matched")
	}
	// The threshold is inclusive.
	if sim, ok := Compare([]float32{3, 0}, []float32{1, 0}, 1); !ok {
		t.Fatalf("%v at threshold did not match", sim)
	}
}

func TestNewClientValidates(t *testing.T) {
	good := "0123456789abcdef"
	for _, tc := range []struct {
		url, secret string
		ok          bool
	}{
		{"http://127.0.0.1:7310", good, true},
		{"http://[::1]:7310/", good, true},
		{"http://localhost:7310", good, true},
		{"https://127.0.0.1:7310", good, false},
		{"http://10.0.0.5:7310", good, false},
		{"http://example.com:7310", good, false},
		{"http://127.0.0.1:7310/path", good, false},
		{"http://user:pw@127.0.0.1:7310", good, false},
		{"", good, false},
		{"http://127.0.0.1:7310", "short", false},
	} {
		_, err := NewClient(Config{URL: tc.url, Secret: tc.secret})
		if (err == nil) != tc.ok {
			t.Errorf("%q %q: %v", tc.url, tc.secret, err)
		}
	}
	if _, err := NewClient(Config{URL: "http://127.0.0.1:1", Secret: good, MatchThreshold: 2}); err == nil {
		t.Error("threshold 2 accepted")
	}
	c, _ := NewClient(Config{URL: "http://127.0.0.1:1", Secret: good})
	if c.MatchThreshold() != DefaultMatchThreshold {
		t.Error("default threshold not applied")
	}
}

func descB64(v ...float32) string {
	b := make([]byte, 4*len(v))
	for i, f := range v {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(f))
	}
	return base64.StdEncoding.EncodeToString(b)
}

// The client against a scripted sidecar: the secret is sent, answers are
// decoded, and every failure maps to ErrImage or ErrUnavailable.
func TestClientAgainstScriptedSidecar(t *testing.T) {
	const secret = "0123456789abcdef-secret"
	var mu sync.Mutex
	var status int
	var body string
	var delay time.Duration
	set := func(s int, b string, d time.Duration) {
		mu.Lock()
		status, body, delay = s, b, d
		mu.Unlock()
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get(SecretHeader) != secret || r.URL.Path != "/v1/analyze" || r.Method != http.MethodPost {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		mu.Lock()
		s, b, d := status, body, delay
		mu.Unlock()
		time.Sleep(d)
		w.WriteHeader(s)
		fmt.Fprint(w, b)
	}))
	defer srv.Close()
	c, err := NewClient(Config{URL: srv.URL, Secret: secret, Timeout: 300 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	okBody := fmt.Sprintf(`{"width":640,"height":480,"ms":5,"faces":[{"box":[10,20,100,120],"score":0.98,"yaw":-12.5,"pitch":3,"roll":1,"eyes_open":0.9,"ear":[0.3,0.3],"descriptor":%q}]}`, descB64(1, 0, -2.5))
	set(200, okBody, 0)
	a, err := c.Analyze(context.Background(), []byte("img"))
	if err != nil {
		t.Fatal(err)
	}
	f := a.Faces[0]
	if a.Width != 640 || f.Box.Min.X != 10 || f.Box.Max.Y != 140 || f.Yaw != -12.5 || f.EyesOpen != 0.9 || len(f.Descriptor) != 3 || f.Descriptor[2] != -2.5 {
		t.Fatalf("%+v", a)
	}
	for _, tc := range []struct {
		name   string
		status int
		body   string
		delay  time.Duration
		want   error
	}{
		{"undecodable", 422, `{"error":"x"}`, 0, ErrImage},
		{"too large", 413, ``, 0, ErrImage},
		{"busy", 503, `{"error":"busy"}`, 0, ErrUnavailable},
		{"crashed", 500, ``, 0, ErrUnavailable},
		{"not JSON", 200, `<html>`, 0, ErrUnavailable},
		{"no size", 200, `{"faces":[]}`, 0, ErrUnavailable},
		{"bad box", 200, `{"width":1,"height":1,"faces":[{"box":[1,2],"descriptor":""}]}`, 0, ErrUnavailable},
		{"bad descriptor", 200, `{"width":1,"height":1,"faces":[{"box":[1,2,3,4],"descriptor":"!!"}]}`, 0, ErrUnavailable},
		{"NaN in descriptor", 200, fmt.Sprintf(`{"width":1,"height":1,"faces":[{"box":[1,2,3,4],"descriptor":%q}]}`, descB64(float32(math.NaN()))), 0, ErrUnavailable},
		{"too slow", 200, okBody, time.Second, ErrUnavailable},
	} {
		set(tc.status, tc.body, tc.delay)
		if _, err := c.Analyze(context.Background(), []byte("img")); !errors.Is(err, tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, err, tc.want)
		}
	}
	set(200, okBody, 0)
	wrong, _ := NewClient(Config{URL: srv.URL, Secret: strings.Repeat("x", 20)})
	if _, err := wrong.Analyze(context.Background(), []byte("img")); !errors.Is(err, ErrUnavailable) {
		t.Errorf("wrong secret: %v", err)
	}
	if _, err := c.Analyze(context.Background(), nil); !errors.Is(err, ErrImage) {
		t.Errorf("empty image: %v", err)
	}
	big, _ := NewClient(Config{URL: srv.URL, Secret: secret, MaxImageBytes: 4})
	if _, err := big.Analyze(context.Background(), []byte("12345")); !errors.Is(err, ErrImage) {
		t.Errorf("oversized image: %v", err)
	}
	// Nobody listening.
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	addr := ln.Addr().String()
	ln.Close()
	dead, _ := NewClient(Config{URL: "http://" + addr, Secret: secret})
	if _, err := dead.Analyze(context.Background(), []byte("img")); !errors.Is(err, ErrUnavailable) {
		t.Errorf("dead sidecar: %v", err)
	}
	if err := dead.Ready(context.Background()); !errors.Is(err, ErrUnavailable) {
		t.Errorf("dead sidecar ready: %v", err)
	}
	if _, err := (Unavailable{}).Analyze(context.Background(), []byte("x")); !errors.Is(err, ErrUnavailable) {
		t.Error(err)
	}
	var nilClient *Client
	if _, err := nilClient.Analyze(context.Background(), []byte("x")); !errors.Is(err, ErrUnavailable) {
		t.Error(err)
	}
}
