package main

import (
	"bytes"
	"fmt"
	"io"
	nethttp "net/http"
	"os"
	"path/filepath"
	"sort"
	"text/tabwriter"
	"time"

	"github.com/go-json-experiment/json"

	"github.com/trustd/trustd/platform/persistence/backup"
)

// trustctl snapshot save|inspect|restore: backups of the replicated state,
// as `consul snapshot` does. The node hands out the archive in clear over
// the admin API; trustctl seals it (AES-256-GCM, key from a passphrase
// through scrypt or a raw 32-byte key file) before it touches the disk,
// and opens it again only on this side, so the key never reaches a node.
const snapshotUsage = `usage: trustctl snapshot save|inspect|restore <file> (--passphrase-file F | --key-file F)

  save     take a consistent backup through the leader and write it encrypted to <file>
  inspect  check and decrypt <file>; print index, term, records per table, size, checksums
  restore  replace the cluster's replicated state with <file> (sent to the Raft leader:
           a fresh cluster or single node; see docs/operations.md)

The key: --passphrase-file F (at least 12 characters, stretched with scrypt),
or TRUSTD_SNAPSHOT_PASSPHRASE, or --key-file F (32 bytes, raw or 64 hex
characters: openssl rand -hex 32 > F). The file holds signing keys and
secret hashes: keep the key apart from it.`

func (o *options) snapshot(args []string, out io.Writer) error {
	if len(args) != 2 {
		return fmt.Errorf("%s", snapshotUsage)
	}
	verb, file := args[0], args[1]
	secret, err := o.snapshotSecret()
	if err != nil {
		return err
	}
	switch verb {
	case "save":
		return o.snapshotSave(file, secret, out)
	case "inspect":
		b, err := os.ReadFile(file)
		if err != nil {
			return err
		}
		a, info, err := openSnapshot(b, secret)
		if err != nil {
			return fmt.Errorf("%s: %w", file, err)
		}
		return printSnapshot(out, file, a, info, o.asJSON)
	case "restore":
		return o.snapshotRestore(file, secret, out)
	}
	return fmt.Errorf("%s", snapshotUsage)
}

// snapshotSecret reads the key the operator supplies.
func (o *options) snapshotSecret() (backup.Secret, error) {
	pf, kf := o.fields["passphrase_file"], o.fields["key_file"]
	switch {
	case pf != "" && kf != "":
		return backup.Secret{}, fmt.Errorf("give --passphrase-file or --key-file, not both")
	case kf != "":
		b, err := os.ReadFile(kf)
		if err != nil {
			return backup.Secret{}, err
		}
		return backup.RawKey(b)
	case pf != "":
		b, err := os.ReadFile(pf)
		if err != nil {
			return backup.Secret{}, err
		}
		return backup.Passphrase(string(b))
	case os.Getenv("TRUSTD_SNAPSHOT_PASSPHRASE") != "":
		return backup.Passphrase(os.Getenv("TRUSTD_SNAPSHOT_PASSPHRASE"))
	}
	return backup.Secret{}, fmt.Errorf("a snapshot is encrypted: give --passphrase-file F, --key-file F or TRUSTD_SNAPSHOT_PASSPHRASE")
}

func openSnapshot(file []byte, s backup.Secret) (*backup.Archive, backup.FileInfo, error) {
	plain, info, err := backup.Open(file, s)
	if err != nil {
		return nil, info, err
	}
	a, err := backup.Decode(plain)
	return a, info, err
}

func (o *options) snapshotSave(file string, s backup.Secret, out io.Writer) error {
	plain, err := o.raw("GET", "/admin/v1/snapshot", nil)
	if err != nil {
		return err
	}
	a, err := backup.Decode(plain)
	if err != nil {
		return fmt.Errorf("the node answered something that is not a backup: %w", err)
	}
	sealed, err := backup.Seal(plain, s)
	if err != nil {
		return err
	}
	// Written beside its final name and renamed, so a crash never leaves
	// a half file under the name; readable by its owner only.
	tmp, err := os.CreateTemp(filepath.Dir(file), ".trustd-snapshot-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(sealed); err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Chmod(tmp.Name(), 0o600)
	}
	if err == nil {
		err = os.Rename(tmp.Name(), file)
	}
	if err != nil {
		return fmt.Errorf("write %s: %w", file, err)
	}
	info, err := backup.Check(sealed)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "saved %s: index %d, term %d, %d bytes, sha256 %s\n", file, a.Meta.Index, a.Meta.Term, info.Size, info.SHA256)
	return nil
}

func (o *options) snapshotRestore(file string, s backup.Secret, out io.Writer) error {
	b, err := os.ReadFile(file)
	if err != nil {
		return err
	}
	plain, _, err := backup.Open(b, s)
	if err != nil {
		return fmt.Errorf("%s: %w", file, err)
	}
	a, err := backup.Decode(plain)
	if err != nil {
		return fmt.Errorf("%s: %w", file, err)
	}
	if _, err := o.raw("POST", "/admin/v1/snapshot/restore", plain); err != nil {
		return err
	}
	fmt.Fprintf(out, "restored %s: index %d of %s, taken on %s\n", file, a.Meta.Index, a.Meta.TakenAt, a.Meta.TakenOn)
	return nil
}

func printSnapshot(out io.Writer, file string, a *backup.Archive, info backup.FileInfo, asJSON bool) error {
	if asJSON {
		b, err := json.Marshal(map[string]any{"file": file, "size": info.Size, "sha256": info.SHA256, "cipher": info.Cipher,
			"kdf": info.KDF, "format": a.Format, "meta": a.Meta, "catalog_bytes": len(a.Catalog)})
		if err != nil {
			return err
		}
		_, err = fmt.Fprintf(out, "%s\n", b)
		return err
	}
	w := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintf(w, "file\t%s\n", file)
	fmt.Fprintf(w, "size\t%d bytes (catalog %d bytes)\n", info.Size, len(a.Catalog))
	fmt.Fprintf(w, "sha256\t%s\n", info.SHA256)
	fmt.Fprintf(w, "encryption\t%s, key from %s (authenticated)\n", info.Cipher, info.KDF)
	fmt.Fprintf(w, "format\t%s\n", a.Format)
	fmt.Fprintf(w, "index\t%d\n", a.Meta.Index)
	fmt.Fprintf(w, "term\t%d\n", a.Meta.Term)
	fmt.Fprintf(w, "taken\t%s on %s\n", a.Meta.TakenAt, a.Meta.TakenOn)
	fmt.Fprintf(w, "catalog sha256\t%s\n", a.Meta.CatalogSHA256)
	names := make([]string, 0, len(a.Meta.Counts))
	for k := range a.Meta.Counts {
		names = append(names, k)
	}
	sort.Strings(names)
	fmt.Fprintln(w, "\nTABLE\tRECORDS")
	for _, k := range names {
		fmt.Fprintf(w, "%s\t%d\n", k, a.Meta.Counts[k])
	}
	return w.Flush()
}

// raw sends body as is (nil: none) with the admin token and returns the
// answer's bytes; a status of 300 or more is an error with the answer.
func (o *options) raw(method, path string, body []byte) ([]byte, error) {
	if o.token == "" {
		return nil, fmt.Errorf("no admin token: pass --admin-token, set TRUSTD_ADMIN_TOKEN or --data-dir")
	}
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := nethttp.NewRequest(method, o.addr+path, rd)
	if err != nil {
		return nil, err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/octet-stream")
	}
	req.Header.Set("Authorization", "Bearer "+o.token)
	resp, err := (&nethttp.Client{Timeout: 2 * time.Minute}).Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode >= 300 {
		return nil, fmt.Errorf("%s %s: %d %s", method, path, resp.StatusCode, bytes.TrimSpace(b))
	}
	return b, nil
}
