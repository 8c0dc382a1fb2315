package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/trustd/trustd/platform/cluster/mtls"
)

func TestTLSCommandsMakeACAAndNodeCertificatesANodeLoads(t *testing.T) {
	dir := t.TempDir()
	var out bytes.Buffer
	if err := run([]string{"tls", "ca", "create", "--out-dir", dir}, &out); err != nil {
		t.Fatal(err)
	}
	if err := run([]string{"tls", "cert", "create", "--node", "n1", "--ip", "10.0.0.5", "--dns", "n1.internal", "--out-dir", dir}, &out); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"cluster-ca-key.pem", "n1-key.pem"} {
		st, err := os.Stat(filepath.Join(dir, f))
		if err != nil || st.Mode().Perm() != 0o600 {
			t.Fatalf("%s: %v, mode %v; want 0600", f, err, st.Mode().Perm())
		}
	}
	loaded, err := mtls.Load(mtls.Files{CA: filepath.Join(dir, "cluster-ca.pem"), Cert: filepath.Join(dir, "n1.pem"), Key: filepath.Join(dir, "n1-key.pem")})
	if err != nil {
		t.Fatalf("the issued certificate does not load: %v", err)
	}
	if loaded.NodeID() != "n1" || !strings.Contains(out.String(), "--node-id n1") {
		t.Fatalf("the certificate names %q (want n1); output %q", loaded.NodeID(), out.String())
	}
	if err := run([]string{"tls", "ca", "create", "--out-dir", dir}, &out); err == nil {
		t.Fatal("a second CA overwrote the first")
	}
	for _, bad := range [][]string{
		{"tls", "cert", "create", "--out-dir", dir},
		{"tls", "cert", "create", "--node", "n2", "--ip", "not-an-ip", "--out-dir", dir},
		{"tls", "cert", "create", "--node", "n3", "--days", "0", "--out-dir", dir},
		{"tls", "frobnicate"},
	} {
		if err := run(bad, &out); err == nil || strings.Contains(err.Error(), "panic") {
			t.Errorf("trustctl %v = %v, want a usage error", bad, err)
		}
	}
}
