package node

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/trustd/trustd/identity/face"
)

// Without a face engine the node's engine fails closed.
func TestFaceEngineUnconfiguredFailsClosed(t *testing.T) {
	n := mustStart(t, Config{DataDir: t.TempDir(), HTTPAddr: "127.0.0.1:0", RaftAddr: "127.0.0.1:0", FastRaft: true})
	if _, err := n.FaceEngine().Analyze(context.Background(), []byte("x")); !errors.Is(err, face.ErrUnavailable) {
		t.Fatalf("unconfigured engine: %v", err)
	}
	ch := n.Liveness().Issue(time.Now())
	if ch.Nonce == "" || len(ch.Actions) < 2 {
		t.Fatalf("challenge %+v", ch)
	}
	if n.FaceMatchThreshold() != face.DefaultMatchThreshold {
		t.Fatal(n.FaceMatchThreshold())
	}
}

// A face engine configuration that cannot work is refused at start.
func TestFaceEngineConfigRefused(t *testing.T) {
	for name, cfg := range map[string]Config{
		"remote URL":      {Face: face.Config{URL: "http://192.0.2.1:7310", Secret: strings.Repeat("s", 20)}},
		"no secret":       {Face: face.Config{URL: "http://127.0.0.1:7310"}},
		"URL and sidecar": {Face: face.Config{URL: "http://127.0.0.1:7310", Secret: strings.Repeat("s", 20)}, FaceSidecarDir: t.TempDir()},
		"sidecar missing": {FaceSidecarDir: t.TempDir()},
	} {
		cfg.DataDir, cfg.HTTPAddr, cfg.RaftAddr, cfg.FastRaft = t.TempDir(), "127.0.0.1:0", "127.0.0.1:0", true
		if n, err := Start(context.Background(), cfg); err == nil {
			n.Close(context.Background())
			t.Errorf("%s: node started", name)
		}
	}
}

// --face-engine-sidecar: the node starts the sidecar, analyses work, and
// the process ends with the node.
func TestFaceEngineSidecarStartedByTheNode(t *testing.T) {
	dir, err := filepath.Abs("../identity/face/sidecar")
	if err != nil {
		t.Fatal(err)
	}
	if err := face.SidecarInstalled(dir); err != nil {
		t.Skipf("face sidecar not installed (%v); run identity/face/sidecar/setup.sh", err)
	}
	out, err := exec.Command("go", "env", "GOMODCACHE").Output()
	if err != nil {
		t.Skip(err)
	}
	img, err := os.ReadFile(filepath.Join(string(bytes.TrimSpace(out)), "github.com/esimov/pigo@v1.4.6/testdata/sample.jpg"))
	if err != nil {
		t.Skip("pigo module not in the cache")
	}
	n := mustStart(t, Config{DataDir: t.TempDir(), HTTPAddr: "127.0.0.1:0", RaftAddr: "127.0.0.1:0", FastRaft: true, FaceSidecarDir: dir})
	deadline := time.Now().Add(3 * time.Minute)
	var a face.Analysis
	for {
		a, err = n.FaceEngine().Analyze(context.Background(), img)
		if err == nil || time.Now().After(deadline) {
			break
		}
		if !errors.Is(err, face.ErrUnavailable) {
			t.Fatal(err)
		}
		time.Sleep(200 * time.Millisecond)
	}
	if err != nil {
		t.Fatalf("the sidecar did not come up: %v", err)
	}
	if len(a.Faces) != 1 || len(a.Faces[0].Descriptor) != face.DescriptorLen {
		t.Fatalf("%d faces", len(a.Faces))
	}
	if err := n.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, err := n.FaceEngine().Analyze(context.Background(), img); !errors.Is(err, face.ErrUnavailable) {
		t.Fatalf("after close: %v", err)
	}
}
