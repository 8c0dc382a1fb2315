package main

import (
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/trustd/trustd/platform/cluster/mtls"
)

const tlsUsage = `usage:
  trustctl tls ca create [--out-dir D] [--name trustd] [--days 3650]
      writes D/cluster-ca.pem and D/cluster-ca-key.pem (0600)
  trustctl tls cert create --node <id> [--ip A[,B]] [--dns N[,M]] [--out-dir D] [--ca D/cluster-ca.pem] [--ca-key D/cluster-ca-key.pem] [--days 730]
      writes D/<id>.pem and D/<id>-key.pem (0600), for trustd --tls-ca --tls-cert --tls-key;
      the certificate names node <id>: only the node started as <id> (--node-id, or none) presents it,
      and the Raft leader lets a node vote only after its ports presented a certificate naming it`

// tlsCmd makes the cluster's CA and node certificates, locally: no node
// is contacted and no key leaves this machine.
func (o *options) tlsCmd(rest []string, out io.Writer, now time.Time) error {
	if len(rest) != 2 || rest[1] != "create" || (rest[0] != "ca" && rest[0] != "cert") {
		return errors.New(tlsUsage)
	}
	dir := o.fields["out_dir"]
	if dir == "" {
		dir = "."
	}
	days, err := o.days()
	if err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	if rest[0] == "ca" {
		name := o.fields["name"]
		if name == "" {
			name = "trustd"
		}
		ca, err := mtls.CreateCA(name, days, now)
		if err != nil {
			return err
		}
		cert, key := filepath.Join(dir, "cluster-ca.pem"), filepath.Join(dir, "cluster-ca-key.pem")
		if err := writeNew(cert, ca.Cert, 0o644); err != nil {
			return err
		}
		if err := writeNew(key, ca.Key, 0o600); err != nil {
			return err
		}
		fmt.Fprintf(out, "wrote %s and %s; keep the key offline, give every node the certificate\n", cert, key)
		return nil
	}
	id := o.fields["node"]
	if id == "" || strings.ContainsAny(id, "/\\ ") {
		return fmt.Errorf("--node <id> is required (letters, digits, dashes)\n%s", tlsUsage)
	}
	req := mtls.NodeRequest{NodeID: id, Validity: days}
	for _, s := range splitList(o.fields["ip"]) {
		ip := net.ParseIP(s)
		if ip == nil {
			return fmt.Errorf("--ip %q is not an IP address", s)
		}
		req.IPs = append(req.IPs, ip)
	}
	req.DNSNames = splitList(o.fields["dns"])
	caCert, caKey := o.fields["ca"], o.fields["ca_key"]
	if caCert == "" {
		caCert = filepath.Join(dir, "cluster-ca.pem")
	}
	if caKey == "" {
		caKey = filepath.Join(dir, "cluster-ca-key.pem")
	}
	var ca mtls.PEM
	if ca.Cert, err = os.ReadFile(caCert); err != nil {
		return fmt.Errorf("CA certificate: %w (make one with trustctl tls ca create)", err)
	}
	if ca.Key, err = os.ReadFile(caKey); err != nil {
		return fmt.Errorf("CA key: %w", err)
	}
	node, err := mtls.CreateNodeCert(ca, req, now)
	if err != nil {
		return err
	}
	cert, key := filepath.Join(dir, id+".pem"), filepath.Join(dir, id+"-key.pem")
	if err := writeNew(cert, node.Cert, 0o644); err != nil {
		return err
	}
	if err := writeNew(key, node.Key, 0o600); err != nil {
		return err
	}
	fmt.Fprintf(out, "wrote %s and %s\nstart the node with --node-id %s --tls-ca %s --tls-cert %s --tls-key %s\n", cert, key, id, caCert, cert, key)
	return nil
}

func (o *options) days() (time.Duration, error) {
	v := o.fields["days"]
	if v == "" {
		return 0, nil
	}
	var d int
	if _, err := fmt.Sscanf(v, "%d", &d); err != nil || d < 1 || d > 36500 {
		return 0, fmt.Errorf("--days must be a whole number of days from 1 to 36500")
	}
	return time.Duration(d) * 24 * time.Hour, nil
}

// writeNew writes a file that must not exist yet: overwriting a CA key by
// accident would orphan every certificate issued from it.
func writeNew(path string, b []byte, mode os.FileMode) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, mode)
	if err != nil {
		return err
	}
	if _, err := f.Write(b); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

func splitList(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}
