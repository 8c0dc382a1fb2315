package systemtest

import (
	"bytes"
	"context"
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/go-json-experiment/json"

	"github.com/trustd/trustd/identity/documents/fixture"
	"github.com/trustd/trustd/identity/face"
	"github.com/trustd/trustd/identity/liveness"
	"github.com/trustd/trustd/node"
)

// The hosted capture page in headless Chromium with a fake camera (a Y4M
// file of a low-resolution document page, generated here): the capability
// leaves the address bar at once, a camera capture of the low-resolution
// page is answered with a user-safe recapture reason, the file-upload
// fallback with a full page verifies, the page returns to return_url, and
// a standard session runs the liveness sequence on camera frames. The face
// engine and presence check are test fakes (every image has one face, the
// same for all): this proves the page and the session flow, not face
// recognition.

type anyFace struct{}

func (anyFace) Analyze(_ context.Context, img []byte) (face.Analysis, error) {
	if len(img) < 100 {
		return face.Analysis{}, nil
	}
	return face.Analysis{Width: 1, Height: 1, Faces: []face.Face{{Score: 0.9, Descriptor: []float32{1, 0}}}}, nil
}

type frameCounter struct{}

func (frameCounter) Issue(now time.Time) liveness.Challenge {
	return liveness.Challenge{Nonce: "hosted-" + now.Format("150405.000000000"), Actions: []liveness.Action{liveness.TurnLeft, liveness.Blink},
		IssuedAt: now, Deadline: now.Add(2 * time.Minute)}
}

func (frameCounter) Check(_ context.Context, c liveness.Challenge, frames []liveness.Frame, _ time.Time) (liveness.Result, error) {
	if len(frames) < 4 {
		return liveness.Result{Frames: len(frames), Reasons: []string{"too_few_frames"}}, nil
	}
	return liveness.Result{Passed: true, Frames: len(frames), Observed: c.Actions, Reference: []float32{1, 0}}, nil
}

// writeY4M writes frames of a gray image as a 4:2:0 YUV4MPEG2 file.
func writeY4M(t *testing.T, path string, pix []byte, w, h int) {
	t.Helper()
	var b bytes.Buffer
	b.WriteString("YUV4MPEG2 W" + strconv.Itoa(w) + " H" + strconv.Itoa(h) + " F10:1 Ip A1:1 C420jpeg\n")
	chroma := bytes.Repeat([]byte{128}, (w/2)*(h/2))
	for i := 0; i < 10; i++ {
		b.WriteString("FRAME\n")
		b.Write(pix)
		b.Write(chroma)
		b.Write(chroma)
	}
	if err := os.WriteFile(path, b.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
}

func TestHostedCaptureInBrowser(t *testing.T) {
	nodeBin := needBrowser(t)
	if _, err := exec.LookPath("tesseract"); err != nil {
		t.Skip("skipping: tesseract is not installed (document screening)")
	}
	f, err := fixture.LoadOCRB()
	if err != nil {
		t.Skip(err)
	}
	dir := t.TempDir()
	r := rand.New(rand.NewSource(1)) // seed 1 screens as verify (see http/identity_node_test.go)
	h := fixture.RandomHolder(r)
	page := fixture.RenderTD3(f, h.TD3("UTO"), r)
	pagePNG := filepath.Join(dir, "passport.png")
	if err := os.WriteFile(pagePNG, fixture.PNG(page), 0o600); err != nil {
		t.Fatal(err)
	}
	small := fixture.Scale(page, 640)
	w, hh := small.Rect.Dx(), small.Rect.Dy()&^1
	y := make([]byte, 0, w*hh)
	for row := 0; row < hh; row++ {
		y = append(y, small.Pix[row*small.Stride:row*small.Stride+w]...)
	}
	video := filepath.Join(dir, "camera.y4m")
	writeY4M(t, video, y, w, hh)

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	n, err := node.Start(ctx, node.Config{DataDir: t.TempDir(), HTTPAddr: "127.0.0.1:0", RaftAddr: "127.0.0.1:0",
		GossipAddr: "127.0.0.1:0", PeerAddr: "127.0.0.1:0", FastRaft: true, Dev: true,
		FaceEngine: anyFace{}, Presence: frameCounter{}, FaceMatch: func(a, b []float32) (float64, bool) { return 1, true }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = n.Close(context.Background()) })
	waitFor(t, 20*time.Second, "the dev workspace is seeded", func() bool { return n.Dev() != nil })
	dev := n.Dev()
	body, _ := json.Marshal(map[string]any{"name": "hosted", "scopes": []string{"identity.verify"}})
	code, out, err := do("POST", n.APIURL()+"/admin/v1/workspaces/"+dev.WorkspaceID+"/credentials", n.AdminToken(), body)
	if err != nil || code != 201 {
		t.Fatalf("credential: %d %s %v", code, out, err)
	}
	var cred struct {
		Credential string `json:"credential"`
	}
	if err := json.Unmarshal(out, &cred); err != nil {
		t.Fatal(err)
	}
	runNodeTest(t, nodeBin, "hosted.test.mjs", "TRUSTD_API="+n.APIURL()+"/v1", "TRUSTD_CREDENTIAL="+cred.Credential,
		"TRUSTD_PASSPORT_PNG="+pagePNG, "TRUSTD_FAKE_VIDEO="+video)
}
