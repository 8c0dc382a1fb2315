package face

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"github.com/trustd/trustd/platform/lib/proc"
)

// SidecarConfig tells StartSidecar how to run identity/face/sidecar/server.mjs.
type SidecarConfig struct {
	// Dir is the sidecar folder (server.mjs and its installed
	// node_modules); FindSidecarDir finds it in a source checkout.
	Dir string
	// Node is the node binary (default: "node" on PATH).
	Node string
	// Secret is the shared secret; a random one is generated when empty.
	Secret string
	// Port on 127.0.0.1 (0: any free port).
	Port int
	// StartTimeout bounds the start, model loading included (default 90s).
	StartTimeout time.Duration
	// Logger receives the sidecar's stderr lines (default: discarded).
	Logger *slog.Logger
	// Env adds variables to the sidecar's environment (FACE_SIDECAR_MAX_BODY,
	// FACE_SIDECAR_MAX_QUEUE).
	Env []string
}

// Sidecar is a running face engine process started by this process.
type Sidecar struct {
	cmd    *exec.Cmd
	url    string
	secret string
	exited chan struct{}
	waitMu sync.Mutex
	err    error
}

// FindSidecarDir walks up from the working directory to the checkout's
// identity/face/sidecar folder.
func FindSidecarDir() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		p := filepath.Join(dir, "identity", "face", "sidecar")
		if _, err := os.Stat(filepath.Join(p, "server.mjs")); err == nil {
			return p, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("face: identity/face/sidecar/server.mjs not found above the working directory")
		}
		dir = parent
	}
}

// SidecarInstalled reports why the sidecar in dir cannot run, or nil:
// node must be on PATH and the pinned packages installed (identity/face/sidecar/setup.sh).
func SidecarInstalled(dir string) error {
	if _, err := exec.LookPath("node"); err != nil {
		return errors.New("node is not installed")
	}
	for _, p := range []string{"@vladmandic/human/models/faceres.bin", "@tensorflow/tfjs-backend-wasm/dist/tfjs-backend-wasm.wasm", "jpeg-js", "pngjs"} {
		if _, err := os.Stat(filepath.Join(dir, "node_modules", p)); err != nil {
			return fmt.Errorf("%s/node_modules/%s is missing: run identity/face/sidecar/setup.sh", dir, p)
		}
	}
	return nil
}

// StartSidecar starts the sidecar and returns once its models are loaded
// and it answers /healthz. The process is killed if this process dies
// (Linux) and by Stop.
func StartSidecar(ctx context.Context, cfg SidecarConfig) (*Sidecar, error) {
	if cfg.Dir == "" {
		return nil, errors.New("face: sidecar dir not set")
	}
	if cfg.Node == "" {
		cfg.Node = "node"
	}
	if cfg.StartTimeout <= 0 {
		cfg.StartTimeout = 90 * time.Second
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Secret == "" {
		b := make([]byte, 32)
		if _, err := rand.Read(b); err != nil {
			return nil, err
		}
		cfg.Secret = hex.EncodeToString(b)
	}
	if len(cfg.Secret) < 16 {
		return nil, errors.New("face: the sidecar secret must be at least 16 bytes")
	}
	script, err := filepath.Abs(filepath.Join(cfg.Dir, "server.mjs"))
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(cfg.Node, script, "--port", strconv.Itoa(cfg.Port))
	cmd.Dir = filepath.Dir(script)
	// The secret goes through the environment, never argv (visible in ps).
	cmd.Env = append(append(os.Environ(), cfg.Env...), "FACE_SIDECAR_SECRET="+cfg.Secret)
	cmd.SysProcAttr = sysProcAttr()
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("face: starting the sidecar: %w", err)
	}
	s := &Sidecar{cmd: cmd, secret: cfg.Secret, exited: make(chan struct{})}
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			cfg.Logger.Warn("face sidecar", "stderr", sc.Text())
		}
	}()
	type line struct {
		Listening string `json:"listening"`
		Ready     bool   `json:"ready"`
		LoadMS    int    `json:"load_ms"`
	}
	lines := make(chan line, 4)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			var l line
			if json.Unmarshal(sc.Bytes(), &l) == nil {
				select {
				case lines <- l:
				default:
				}
			}
		}
		io.Copy(io.Discard, stdout)
	}()
	go func() {
		err := cmd.Wait()
		s.waitMu.Lock()
		s.err = err
		s.waitMu.Unlock()
		close(s.exited)
	}()
	deadline := time.NewTimer(cfg.StartTimeout)
	defer deadline.Stop()
	for {
		select {
		case l := <-lines:
			if l.Listening != "" {
				s.url = "http://" + l.Listening
			}
			if l.Ready {
				if s.url == "" {
					s.Stop()
					return nil, errors.New("face: the sidecar did not say where it listens")
				}
				c, err := NewClient(s.Config())
				if err == nil {
					err = c.Ready(ctx)
				}
				if err != nil {
					s.Stop()
					return nil, fmt.Errorf("face: sidecar health: %w", err)
				}
				cfg.Logger.Info("face sidecar ready", "url", s.url, "load_ms", l.LoadMS)
				return s, nil
			}
		case <-s.exited:
			return nil, fmt.Errorf("face: the sidecar exited while starting: %v", s.exitErr())
		case <-deadline.C:
			s.Stop()
			return nil, fmt.Errorf("face: the sidecar was not ready within %s", cfg.StartTimeout)
		case <-ctx.Done():
			s.Stop()
			return nil, ctx.Err()
		}
	}
}

func (s *Sidecar) exitErr() error {
	s.waitMu.Lock()
	defer s.waitMu.Unlock()
	return s.err
}

// URL is the sidecar's base address.
func (s *Sidecar) URL() string { return s.url }

// Config is a client configuration for this sidecar.
func (s *Sidecar) Config() Config { return Config{URL: s.url, Secret: s.secret} }

// Exited is closed when the process has ended.
func (s *Sidecar) Exited() <-chan struct{} { return s.exited }

// Stop ends the process: SIGTERM, then SIGKILL after 5 seconds.
func (s *Sidecar) Stop() error {
	proc.Stop(s.cmd.Process, s.exited, 5*time.Second)
	return nil
}
