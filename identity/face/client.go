package face

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"image"
	"io"
	"math"
	"net"
	"net/http"
	"net/url"
	"time"

	"github.com/trustd/trustd/platform/errcode"
)

// ErrImage is an image the engine could not decode (not JPEG or PNG,
// corrupt, or over the sidecar's size limits).
var ErrImage = errcode.New("face-image-unreadable", errcode.Invalid,
	"the image is not a readable JPEG or PNG within the face engine's size limits")

// DefaultMatchThreshold is the cosine similarity at or above which two
// descriptors are taken as the same person. UNCALIBRATED: it was set from
// the one sample face available here (see DESIGN.md), not from a measured
// false-match / false-non-match rate; deployments must treat it as a
// starting point and review borderline results.
const DefaultMatchThreshold = 0.70

// DescriptorLen is the length of the faceres descriptor.
const DescriptorLen = 1024

// SecretHeader carries the shared secret on every call to the sidecar.
const SecretHeader = "X-Face-Secret"

// Config configures the client of the face engine sidecar.
type Config struct {
	// URL is the sidecar's base address; only http on a loopback address
	// is accepted (the secret travels in clear; run the sidecar on the
	// same host or in the same network namespace).
	URL string
	// Secret is the shared secret the sidecar requires (16 bytes or more).
	Secret string
	// Timeout bounds one analysis, queueing included (default 15s).
	Timeout time.Duration
	// MatchThreshold is the cosine similarity for Compare (default
	// DefaultMatchThreshold); uncalibrated, see DESIGN.md.
	MatchThreshold float64
	// MaxImageBytes is the largest image sent (default 8 MiB, the
	// sidecar's own default limit).
	MaxImageBytes int
}

// Client is the face engine reached over loopback HTTP. It implements
// Engine and is safe for concurrent use.
type Client struct {
	base      string
	secret    string
	timeout   time.Duration
	maxBytes  int
	threshold float64
	hc        *http.Client
}

var _ Engine = (*Client)(nil)

// NewClient validates cfg and returns a client. It does not contact the
// sidecar (use Ready).
func NewClient(cfg Config) (*Client, error) {
	u, err := url.Parse(cfg.URL)
	if err != nil || u.Scheme != "http" || u.Host == "" || (u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.User != nil {
		return nil, fmt.Errorf("face: engine URL must be http://<loopback address>:<port>, got %q", cfg.URL)
	}
	ip := net.ParseIP(u.Hostname())
	if u.Hostname() != "localhost" && (ip == nil || !ip.IsLoopback()) {
		return nil, fmt.Errorf("face: engine URL must be on a loopback address (the secret travels in clear), got %q", u.Hostname())
	}
	if len(cfg.Secret) < 16 {
		return nil, errors.New("face: the engine secret must be at least 16 bytes")
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = 15 * time.Second
	}
	if cfg.MaxImageBytes <= 0 {
		cfg.MaxImageBytes = 8 << 20
	}
	if cfg.MatchThreshold == 0 {
		cfg.MatchThreshold = DefaultMatchThreshold
	}
	if cfg.MatchThreshold < -1 || cfg.MatchThreshold > 1 || math.IsNaN(cfg.MatchThreshold) {
		return nil, errors.New("face: the match threshold is a cosine similarity in [-1, 1]")
	}
	tr := &http.Transport{
		Proxy:               nil, // loopback only: never through a proxy
		DialContext:         (&net.Dialer{Timeout: 2 * time.Second}).DialContext,
		MaxIdleConnsPerHost: 8,
		IdleConnTimeout:     60 * time.Second,
	}
	return &Client{base: "http://" + u.Host, secret: cfg.Secret, timeout: cfg.Timeout, maxBytes: cfg.MaxImageBytes,
		threshold: cfg.MatchThreshold, hc: &http.Client{Transport: tr}}, nil
}

// MatchThreshold is the configured comparison threshold.
func (c *Client) MatchThreshold() float64 { return c.threshold }

// Compare compares two descriptors with the client's configured threshold.
func (c *Client) Compare(a, b []float32) (float64, bool) { return Compare(a, b, c.threshold) }

// Ready reports whether the sidecar answers and has loaded its models.
func (c *Client) Ready(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.base+"/healthz", nil)
	if err != nil {
		return ErrUnavailable.With("%v", err)
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		return ErrUnavailable.With("sidecar not answering")
	}
	defer resp.Body.Close()
	io.Copy(io.Discard, io.LimitReader(resp.Body, 4096))
	if resp.StatusCode != http.StatusOK {
		return ErrUnavailable.With("sidecar not ready (%d)", resp.StatusCode)
	}
	return nil
}

type wireFace struct {
	Box        []float64 `json:"box"`
	Score      float64   `json:"score"`
	Yaw        float64   `json:"yaw"`
	Pitch      float64   `json:"pitch"`
	EyesOpen   float64   `json:"eyes_open"`
	Descriptor string    `json:"descriptor"`
}

type wireAnalysis struct {
	Width  int        `json:"width"`
	Height int        `json:"height"`
	Faces  []wireFace `json:"faces"`
}

// Analyze sends img (JPEG or PNG) to the sidecar. Every failure to get an
// answer (not configured, not running, secret refused, busy, timeout,
// malformed answer) is ErrUnavailable; an image the sidecar cannot decode
// is ErrImage.
func (c *Client) Analyze(ctx context.Context, img []byte) (Analysis, error) {
	if c == nil {
		return Analysis{}, ErrUnavailable
	}
	if len(img) == 0 {
		return Analysis{}, ErrImage.With("empty image")
	}
	if len(img) > c.maxBytes {
		return Analysis{}, ErrImage.With("image over %d bytes", c.maxBytes)
	}
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.base+"/v1/analyze", bytes.NewReader(img))
	if err != nil {
		return Analysis{}, ErrUnavailable.With("%v", err)
	}
	req.Header.Set(SecretHeader, c.secret)
	req.Header.Set("Content-Type", "application/octet-stream")
	resp, err := c.hc.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return Analysis{}, ErrUnavailable.With("no answer within %s", c.timeout)
		}
		return Analysis{}, ErrUnavailable.With("sidecar not answering")
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return Analysis{}, ErrUnavailable.With("reading the answer: %v", err)
	}
	switch resp.StatusCode {
	case http.StatusOK:
	case http.StatusUnprocessableEntity, http.StatusRequestEntityTooLarge, http.StatusBadRequest:
		return Analysis{}, ErrImage
	case http.StatusUnauthorized:
		return Analysis{}, ErrUnavailable.With("the sidecar refused the shared secret")
	default:
		return Analysis{}, ErrUnavailable.With("sidecar answered %d", resp.StatusCode)
	}
	return decodeAnalysis(body)
}

func decodeAnalysis(body []byte) (Analysis, error) {
	var w wireAnalysis
	if err := json.Unmarshal(body, &w); err != nil {
		return Analysis{}, ErrUnavailable.With("malformed answer")
	}
	if w.Width <= 0 || w.Height <= 0 || len(w.Faces) > 64 {
		return Analysis{}, ErrUnavailable.With("malformed answer")
	}
	a := Analysis{Width: w.Width, Height: w.Height, Faces: make([]Face, 0, len(w.Faces))}
	for _, f := range w.Faces {
		if len(f.Box) != 4 || !finite(f.Score, f.Yaw, f.Pitch, f.EyesOpen) {
			return Analysis{}, ErrUnavailable.With("malformed face")
		}
		d, err := decodeDescriptor(f.Descriptor)
		if err != nil {
			return Analysis{}, ErrUnavailable.With("malformed descriptor")
		}
		x, y, bw, bh := int(f.Box[0]), int(f.Box[1]), int(f.Box[2]), int(f.Box[3])
		a.Faces = append(a.Faces, Face{
			Box:   image.Rect(x, y, x+bw, y+bh),
			Score: f.Score, Yaw: f.Yaw, Pitch: f.Pitch, EyesOpen: f.EyesOpen,
			Descriptor: d,
		})
	}
	return a, nil
}

func finite(vs ...float64) bool {
	for _, v := range vs {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return false
		}
	}
	return true
}

// decodeDescriptor reads base64 little-endian float32s; an empty string is
// a face without a descriptor (nil).
func decodeDescriptor(s string) ([]float32, error) {
	if s == "" {
		return nil, nil
	}
	b, err := base64.StdEncoding.DecodeString(s)
	if err != nil || len(b)%4 != 0 || len(b)/4 > 4*DescriptorLen {
		return nil, errors.New("bad descriptor")
	}
	out := make([]float32, len(b)/4)
	for i := range out {
		v := math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
		if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
			return nil, errors.New("bad descriptor")
		}
		out[i] = v
	}
	return out, nil
}

// Compare returns the cosine similarity of two descriptors and whether it
// reaches threshold. Descriptors of different lengths, empty or all-zero
// descriptors never match (similarity 0). The raw cosine is used, not
// human's match.similarity, which clamps and maps it.
func Compare(a, b []float32, threshold float64) (similarity float64, match bool) {
	if len(a) == 0 || len(a) != len(b) {
		return 0, false
	}
	var dot, na, nb float64
	for i := range a {
		x, y := float64(a[i]), float64(b[i])
		dot += x * y
		na += x * x
		nb += y * y
	}
	if na == 0 || nb == 0 || math.IsNaN(dot) || math.IsInf(dot, 0) {
		return 0, false
	}
	s := dot / (math.Sqrt(na) * math.Sqrt(nb))
	s = max(-1, min(1, s))
	return s, s >= threshold
}

// Unavailable is the engine of a node without a face engine configured:
// every analysis fails closed with ErrUnavailable.
type Unavailable struct{}

// Analyze always returns ErrUnavailable.
func (Unavailable) Analyze(context.Context, []byte) (Analysis, error) {
	return Analysis{}, ErrUnavailable
}

// Errors lists the domain errors of the face engine, for the contract
// (platform/http/errors.go contractErrors) once routes answer them.
var Errors = []*errcode.Code{ErrUnavailable, ErrImage}
