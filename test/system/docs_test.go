package systemtest

import (
	"bytes"
	"context"
	"io"
	nethttp "net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/go-json-experiment/json"

	"github.com/trustd/trustd/node"
)

// repoRoot is the repository, seen from this package's folder.
const repoRoot = "../.."

// TestTheGuideNamesOnlyWhatTheContractHas checks the user guide (docs/)
// and the README against the contract a real node serves: every API path
// they mention (/v1/…, /admin/v1/…) is an operation of /v1/openapi.json
// ({name} matches a parameter; a path ending in … or / is a prefix of
// one), every error code in an error table (a table whose first column is
// "error") is a code the contract documents, and every page of the guide
// is served at /v1/docs/{page} and linked from its first page.
func TestTheGuideNamesOnlyWhatTheContractHas(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	n, err := node.Start(ctx, node.Config{DataDir: t.TempDir(), HTTPAddr: "127.0.0.1:0", RaftAddr: "127.0.0.1:0",
		PeerAddr: "127.0.0.1:0", GossipAddr: freeAddr(t), FastRaft: true, Dev: true}) // --dev: the demo's operations too
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = n.Close(ctx)
	})
	get := func(path string) []byte {
		t.Helper()
		resp, err := nethttp.Get(n.APIURL() + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != 200 {
			t.Fatalf("GET %s: %d %s", path, resp.StatusCode, b)
		}
		return b
	}
	contract := get("/v1/openapi.json")
	// Codes are checked in the text of the contract's descriptions, where
	// each starts a line ("\ncode: meaning").
	text := bytes.ReplaceAll(contract, []byte(`\n`), []byte(" "))
	var doc struct {
		Paths map[string]map[string]any `json:"paths"`
	}
	if err := json.Unmarshal(contract, &doc, json.RejectUnknownMembers(false)); err != nil {
		t.Fatal(err)
	}
	var paths [][]string
	for p := range doc.Paths {
		paths = append(paths, strings.Split(strings.Trim(p, "/"), "/"))
	}

	pages, err := filepath.Glob(filepath.Join(repoRoot, "docs", "*.md"))
	if err != nil || len(pages) < 5 {
		t.Fatalf("the guide's pages: %v %v", pages, err)
	}
	index, _ := os.ReadFile(filepath.Join(repoRoot, "docs", "README.md"))
	files := append([]string{filepath.Join(repoRoot, "README.md")}, pages...)
	pathRE := regexp.MustCompile(`(?:/admin)?/v1(?:/[A-Za-z0-9_.{}\-…*]*)*`)
	checked, codes := 0, 0
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		name := filepath.Base(f)
		if filepath.Base(filepath.Dir(f)) == "docs" {
			if name != "README.md" && !bytes.Contains(index, []byte("("+name+")")) {
				t.Errorf("docs/%s is not linked from docs/README.md", name)
			}
			if served := get("/v1/docs/" + name); !bytes.Equal(served, b) {
				t.Errorf("GET /v1/docs/%s does not serve docs/%s", name, name)
			}
		}
		for _, m := range pathRE.FindAllIndex(b, -1) {
			p := string(b[m[0]:m[1]])
			p = strings.TrimRight(p, ".")
			checked++
			if !inContract(paths, p) {
				t.Errorf("%s names %s, which is no operation of the contract", f, p)
			}
		}
		for _, code := range errorTableCodes(string(b)) {
			codes++
			if !regexp.MustCompile(`(^|[^a-z0-9_-])` + regexp.QuoteMeta(code) + `([^a-z0-9_-]|$)`).Match(text) {
				t.Errorf("%s lists the error %q, which the contract does not document", f, code)
			}
		}
	}
	if checked < 50 || codes < 50 {
		t.Fatalf("only %d paths and %d error codes found: the extraction is broken", checked, codes)
	}
	t.Logf("%d path mentions and %d error codes checked against the contract", checked, codes)
}

// inContract reports whether p (a path as the docs write it) is an
// operation's path, or with a trailing … / * / "/" the prefix of one.
func inContract(paths [][]string, p string) bool {
	prefix := p == "/admin/v1" // the admin base, named as such
	for _, suf := range []string{"…", "*", "/"} {
		if strings.HasSuffix(p, suf) {
			p, prefix = strings.TrimSuffix(p, suf), true
		}
	}
	segs := strings.Split(strings.Trim(p, "/"), "/")
	for _, c := range paths {
		if len(c) < len(segs) || (!prefix && len(c) != len(segs)) {
			continue
		}
		ok := true
		for i, s := range segs {
			if s != c[i] && !strings.HasPrefix(c[i], "{") {
				ok = false
				break
			}
		}
		if ok {
			return true
		}
	}
	return false
}

// errorTableCodes returns the first-column codes of every Markdown table
// whose header's first cell is "error".
func errorTableCodes(md string) []string {
	var out []string
	in := false
	for _, line := range strings.Split(md, "\n") {
		line = strings.TrimSpace(line)
		if !strings.HasPrefix(line, "|") {
			in = false
			continue
		}
		cells := strings.Split(strings.Trim(line, "|"), "|")
		first := strings.TrimSpace(cells[0])
		switch {
		case first == "error":
			in = true
		case in && strings.HasPrefix(first, "---"):
		case in:
			out = append(out, strings.Trim(first, "`"))
		}
	}
	return out
}

// TestTheRepositoryStandsOnItsOwn: no file of the repository points
// outside it (the design notes the project was written from are not part
// of it), and every relative link of its Markdown resolves to a file
// inside it.
func TestTheRepositoryStandsOnItsOwn(t *testing.T) {
	root, err := filepath.Abs(repoRoot)
	if err != nil {
		t.Fatal(err)
	}
	outside := []byte("../" + "shared")
	linkRE := regexp.MustCompile(`\]\(([^)\s]+)\)`)
	n := 0
	err = filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			switch d.Name() {
			case ".git", "node_modules", "artifacts", "data", "cluster-data":
				return filepath.SkipDir
			}
			return nil
		}
		ext := filepath.Ext(path)
		if !strings.Contains(".md .go .sh .yaml .yml .json .mjs .js .html .toml .service", ext) || ext == "" {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		n++
		if bytes.Contains(b, outside) {
			t.Errorf("%s points outside the repository (%s)", path, outside)
		}
		if ext != ".md" {
			return nil
		}
		for _, m := range linkRE.FindAllSubmatch(b, -1) {
			target := string(m[1])
			if strings.Contains(target, "://") || strings.HasPrefix(target, "#") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			target, _, _ = strings.Cut(target, "#")
			abs := filepath.Join(filepath.Dir(path), target)
			if rel, err := filepath.Rel(root, abs); err != nil || strings.HasPrefix(rel, "..") {
				t.Errorf("%s links %s, outside the repository", path, m[1])
				continue
			}
			if _, err := os.Stat(abs); err != nil {
				t.Errorf("%s links %s, which does not exist", path, m[1])
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if n < 100 {
		t.Fatalf("only %d files read", n)
	}
}
