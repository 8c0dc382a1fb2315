package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	nethttp "net/http"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/trustd/trustd/node"
	"github.com/trustd/trustd/risk/passwords"
)

// TestPasswordsImportIsServedByTheNode imports per-prefix downloader files
// into a data dir with trustctl, starts a node on that data dir and reads
// the imported breach counts back through the public range.
func TestPasswordsImportIsServedByTheNode(t *testing.T) {
	dataDir := t.TempDir()
	src := t.TempDir()
	counts := map[string]int{"password": 3303003, "letmein": 1000, "trustd-only-here": 7}
	byPrefix := map[string][]string{}
	for pw, c := range counts {
		hx := passwords.SHA1.Hash(pw).Hex(passwords.SHA1)
		byPrefix[hx[:5]] = append(byPrefix[hx[:5]], fmt.Sprintf("%s:%d", hx[5:], c))
	}
	for p, lines := range byPrefix {
		sort.Strings(lines)
		if err := os.WriteFile(filepath.Join(src, p+".txt"), []byte(strings.Join(lines, "\r\n")), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	ctl := func(args ...string) (string, error) {
		var out bytes.Buffer
		err := run(args, &out)
		return out.String(), err
	}
	out, err := ctl("passwords", "import", "--in", src, "--data-dir", dataDir, "--source", "test downloader files")
	if err != nil || !strings.Contains(out, "3 sha1 hashes from 3 files") {
		t.Fatalf("import: %v\n%s", err, out)
	}
	if out, err := ctl("passwords", "verify", "--data-dir", dataDir); err != nil || !strings.Contains(out, "ok, 3 sha1 hashes, counts breach") {
		t.Fatalf("verify: %v\n%s", err, out)
	}
	for _, bad := range [][]string{
		{"passwords", "import", "--data-dir", dataDir},
		{"passwords", "import", "--in", src, "--mode", "md5", "--data-dir", dataDir},
		{"passwords", "import", "--in", src, "--mode", "ntlm", "--data-dir", dataDir},
		{"passwords", "import", "--in", src, "--counts", "invented", "--data-dir", dataDir},
		{"passwords", "verify", "--data-dir", t.TempDir()},
		{"passwords", "export"},
	} {
		if out, err := ctl(bad...); err == nil {
			t.Fatalf("trustctl %v succeeded: %s", bad, out)
		}
	}

	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	n, err := node.Start(ctx, node.Config{DataDir: dataDir, HTTPAddr: "127.0.0.1:0", RaftAddr: "127.0.0.1:0", FastRaft: true})
	if err != nil {
		t.Fatal(err)
	}
	defer n.Close(context.Background())
	admin := []string{"--addr", n.APIURL(), "--admin-token", n.AdminToken(), "--json"}
	out, err = ctl(append(admin, "workspaces", "create", "--name", "pw")...)
	if err != nil {
		t.Fatal(err)
	}
	var ws struct {
		ID string `json:"workspace_id"`
	}
	_ = json.Unmarshal([]byte(out), &ws)
	out, err = ctl(append(admin, "--workspace", ws.ID, "sites", "create", "--name", "shop", "--hostnames", "shop.example")...)
	if err != nil {
		t.Fatal(err)
	}
	var site struct {
		Key string `json:"site_key"`
	}
	_ = json.Unmarshal([]byte(out), &site)
	resp, err := nethttp.Get(n.APIURL() + "/v1/passwords/" + site.Key + "/range/5BAA6")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || string(body) != "1E4C9B93F3F0682250B6CF8331B7EE68FD8:3303003" ||
		resp.Header.Get("X-Service-Password-Counts") != "breach" || resp.Header.Get("X-Service-Password-Corpus") != "imported" {
		t.Fatalf("range after import: %d %q %v", resp.StatusCode, body, resp.Header)
	}
}
