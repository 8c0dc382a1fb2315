// Command attack measures how trustd's human-verification scores separate
// scripts from people: a scripted solver over HTTP (no browser, claiming
// every human signal, from spread source addresses), headless Chromium
// driven by a script, and a headed Chromium driven with human-like input
// (mouse curves, pauses, a key press), under a virtual display (xvfb-run,
// Debian's xvfb) when installed, else on $DISPLAY; with neither, the
// headed run is skipped and says so. Each run's tokens
// are verified at /siteverify and the score distribution is printed.
//
//	go run ./cmd/trustd --dev &
//	go run ./test/bench/cmd/attack --credentials data/dev-credentials.json --script 500 --headless 100 --human 20
//
// It provisions its own workspace and score-mode site and deletes them at
// the end. A human-like script is still a script: the "human" run shows
// what the service scores a browser a person drives, not what a person is.
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/trustd/trustd/test/bench/challenge"
	"github.com/trustd/trustd/test/bench/provision"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "attack:", err)
		os.Exit(1)
	}
}

func run() error {
	creds := flag.String("credentials", "data/dev-credentials.json", "dev credentials (admin_token, api_base)")
	nScript := flag.Int("script", 500, "challenges the HTTP script solves")
	nHeadless := flag.Int("headless", 100, "challenges headless Chromium solves, scripted")
	nHuman := flag.Int("human", 20, "challenges a headed Chromium solves with human-like input (paced under 10 a minute)")
	browserDir := flag.String("browser-dir", "test/system/browser", "folder with attack.mjs and its node_modules")
	flag.Parse()
	c, err := provision.ReadCredentials(*creds)
	if err != nil {
		return err
	}
	admin, err := provision.NewAdmin(c.APIBase, c.AdminToken)
	if err != nil {
		return err
	}
	ctx := context.Background()
	ws, err := admin.CreateWorkspace(ctx, "attack-bench")
	if err != nil {
		return err
	}
	defer admin.DeleteWorkspace(ctx, ws.ID)
	site, err := admin.CreateSite(ctx, ws.ID, provision.SiteSpec{Name: "shop", Hostnames: []string{"127.0.0.1", "localhost"},
		Environment: "production", ChallengeMode: "score_based", ChallengeDifficulty: 4})
	if err != nil {
		return err
	}
	fmt.Printf("node %s, site %s (score_based)\n\n", c.APIBase, site.ID)
	fmt.Printf("| run | tokens | median | p10 | p90 | min | max |\n|---|---|---|---|---|---|---|\n")

	if *nScript > 0 {
		m := challenge.NewMinter(c.APIBase, "http://127.0.0.1", site.SiteKey, 8)
		var toks []string
		for i := 0; i < *nScript; i++ {
			tok, err := m.Mint(ctx)
			if err != nil {
				return fmt.Errorf("script: %w", err)
			}
			toks = append(toks, tok)
		}
		report("scripted HTTP solver (spread source addresses, claims human signals)", scores(c.APIBase, site.Secret, toks))
	}
	browser := func(mode string, n int, wrap ...string) error {
		if n <= 0 {
			return nil
		}
		args := append(wrap, "node", filepath.Join(*browserDir, "attack.mjs"))
		cmd := exec.Command(args[0], args[1:]...)
		cmd.Env = append(os.Environ(), "API="+c.APIBase, "SITEKEY="+site.SiteKey, "MODE="+mode, fmt.Sprint("N=", n))
		cmd.Stderr = os.Stderr
		out, err := cmd.StdoutPipe()
		if err != nil {
			return err
		}
		if err := cmd.Start(); err != nil {
			return err
		}
		var toks []string
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if t := strings.TrimSpace(sc.Text()); t != "" {
				toks = append(toks, t)
			}
		}
		if err := cmd.Wait(); err != nil {
			return fmt.Errorf("%s browser run: %w", mode, err)
		}
		report(map[string]string{"scripted": "headless Chromium, scripted", "human": "headed Chromium, human-like input"}[mode], scores(c.APIBase, site.Secret, toks))
		return nil
	}
	if err := browser("scripted", *nHeadless); err != nil {
		return err
	}
	wrap, ok := display()
	if !ok && *nHuman > 0 {
		fmt.Printf("\nheaded Chromium, human-like input: skipped: it needs a display, and there is neither $DISPLAY nor xvfb-run (Debian: apt-get install xvfb; or pass --human 0)\n")
		return nil
	}
	return browser("human", *nHuman, wrap...)
}

// display says how the headed run gets a display: a virtual one under
// xvfb-run when installed (the same on a desktop and a server), else the
// desktop's $DISPLAY; ok is false when there is neither.
func display() (wrap []string, ok bool) {
	if _, err := exec.LookPath("xvfb-run"); err == nil {
		return []string{"xvfb-run", "-a"}, true
	}
	return nil, os.Getenv("DISPLAY") != "" || os.Getenv("WAYLAND_DISPLAY") != ""
}

// scores verifies every token and returns the scores.
func scores(api, secret string, toks []string) []float64 {
	var out []float64
	hc := &http.Client{Timeout: 10 * time.Second}
	for _, t := range toks {
		resp, err := hc.PostForm(api+"/v1/siteverify", url.Values{"secret": {secret}, "response": {t}})
		if err != nil {
			continue
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		var v struct {
			Success bool    `json:"success"`
			Score   float64 `json:"score"`
		}
		if json.Unmarshal(b, &v) == nil && v.Success {
			out = append(out, v.Score)
		}
	}
	return out
}

func report(name string, s []float64) {
	if len(s) == 0 {
		fmt.Printf("| %s | 0 | | | | | |\n", name)
		return
	}
	slices.Sort(s)
	q := func(p float64) float64 { return s[min(len(s)-1, int(p*float64(len(s))))] }
	fmt.Printf("| %s | %d | %.3f | %.3f | %.3f | %.3f | %.3f |\n", name, len(s), q(0.5), q(0.1), q(0.9), s[0], s[len(s)-1])
}
