package main

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path/filepath"
	"time"

	"github.com/trustd/trustd/risk/passwords"
)

const passwordsUsage = `usage:
  trustctl passwords import --in PATH [--mode sha1|ntlm] [--out DIR] [--source TEXT] [--counts breach|rank|presence]
      builds DIR/<mode>.pwd (default DIR: <data-dir>/passwords, where trustd --passwords-dir looks)
      from the Pwned Passwords downloader's output: a directory of per-prefix files
      (ABCDE or ABCDE.txt, lines SUFFIX:COUNT or HASH:COUNT) or one file of HASH:COUNT
      lines grouped by ascending prefix. Streams (bounded memory); replaces the old
      file atomically. A running node serves it within 10 seconds.
  trustctl passwords verify [--out DIR] [--mode sha1|ntlm]
      checks every record of the corpus files (checksums, order, ranges)`

// passwordsCmd builds or checks a node's breached-password corpus, locally:
// the corpus is per node, in its data dir, so no API is called.
func (o *options) passwordsCmd(rest []string, out io.Writer) error {
	if len(rest) != 1 || (rest[0] != "import" && rest[0] != "verify") {
		return errors.New(passwordsUsage)
	}
	dir := o.fields["out"]
	if dir == "" {
		dir = filepath.Join(o.dataDir, "passwords")
	}
	modes := passwords.Modes
	if m := o.fields["mode"]; m != "" || rest[0] == "import" {
		mode, ok := passwords.ParseMode(m)
		if !ok {
			return fmt.Errorf("--mode must be sha1 or ntlm\n%s", passwordsUsage)
		}
		modes = []passwords.Mode{mode}
	}
	if rest[0] == "verify" {
		found := false
		for _, mode := range modes {
			path := filepath.Join(dir, mode.FileName())
			s, err := passwords.OpenFile(path)
			if errors.Is(err, fs.ErrNotExist) {
				continue
			}
			if err != nil {
				return err
			}
			found = true
			err = s.Verify()
			c := s.Corpus()
			_ = s.Close()
			if err != nil {
				return fmt.Errorf("%s: %w", path, err)
			}
			fmt.Fprintf(out, "%s: ok, %d %s hashes, counts %s, source %q\n", path, c.Hashes, mode, c.CountSemantics, c.Source)
		}
		if !found {
			return fmt.Errorf("no corpus file in %s (the node answers from its embedded default)", dir)
		}
		return nil
	}
	in := o.fields["in"]
	if in == "" {
		return fmt.Errorf("--in is required\n%s", passwordsUsage)
	}
	start := time.Now()
	st, err := passwords.Import(in, dir, passwords.ImportOptions{Mode: modes[0], Source: o.fields["source"],
		CountSemantics: o.fields["counts"]})
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "wrote %s: %d %s hashes from %d files (%d lines, %d count-0 lines skipped) in %s; a running node serves it within 10 s\n",
		filepath.Join(dir, modes[0].FileName()), st.Hashes, modes[0], st.Files, st.Lines, st.ZeroSkipped, time.Since(start).Round(time.Millisecond))
	return nil
}
