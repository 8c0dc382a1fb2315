// Package mtls is node-to-node trust: the cluster's own certificate
// authority, node certificates issued by it, and the TLS configurations
// that Raft and the peer transport use so that only holders of a
// certificate from that CA can talk to a node's internal listeners. It
// never decides what a peer may do once authenticated; every member of the
// cluster is equally trusted.
package mtls

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"os"
	"time"
)

// Validity of what CreateCA and CreateNodeCert issue unless told otherwise.
const (
	DefaultCAValidity   = 10 * 365 * 24 * time.Hour
	DefaultNodeValidity = 2 * 365 * 24 * time.Hour
)

// Files are the paths of a node's CA certificate, certificate and key.
type Files struct {
	CA, Cert, Key string
}

// Set reports whether any of the three is given.
func (f Files) Set() bool { return f.CA != "" || f.Cert != "" || f.Key != "" }

// Missing names the files that are not given, for an operator's message.
func (f Files) Missing() []string {
	var m []string
	if f.CA == "" {
		m = append(m, "--tls-ca (TRUSTD_TLS_CA)")
	}
	if f.Cert == "" {
		m = append(m, "--tls-cert (TRUSTD_TLS_CERT)")
	}
	if f.Key == "" {
		m = append(m, "--tls-key (TRUSTD_TLS_KEY)")
	}
	return m
}

// PEM is a certificate and its private key, PEM-encoded.
type PEM struct {
	Cert, Key []byte
}

// CreateCA makes a new self-signed cluster CA (ECDSA P-256).
func CreateCA(name string, validity time.Duration, now time.Time) (PEM, error) {
	if validity <= 0 {
		validity = DefaultCAValidity
	}
	key, serial, err := newKey()
	if err != nil {
		return PEM{}, err
	}
	tmpl := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               pkix.Name{CommonName: name + " cluster CA", Organization: []string{"trustd"}},
		NotBefore:             now.Add(-time.Minute),
		NotAfter:              now.Add(validity),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
		MaxPathLenZero:        true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return PEM{}, err
	}
	return encode(der, key)
}

// newKey makes a certificate's key pair (ECDSA P-256) and serial number.
func newKey() (*ecdsa.PrivateKey, *big.Int, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, err
	}
	serial, err := serialNumber()
	return key, serial, err
}

// NodeRequest names what a node certificate is issued for.
type NodeRequest struct {
	NodeID   string
	IPs      []net.IP
	DNSNames []string
	Validity time.Duration
}

// CreateNodeCert issues a node certificate signed by ca, valid for both
// sides of a connection (server and client authentication): every node
// both accepts and dials.
func CreateNodeCert(ca PEM, req NodeRequest, now time.Time) (PEM, error) {
	if req.NodeID == "" {
		return PEM{}, errors.New("mtls: node id required")
	}
	caCert, caKey, err := parseCA(ca)
	if err != nil {
		return PEM{}, err
	}
	if req.Validity <= 0 {
		req.Validity = DefaultNodeValidity
	}
	key, serial, err := newKey()
	if err != nil {
		return PEM{}, err
	}
	notAfter := now.Add(req.Validity)
	if notAfter.After(caCert.NotAfter) {
		notAfter = caCert.NotAfter
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{CommonName: req.NodeID, Organization: []string{"trustd"}},
		NotBefore:    now.Add(-time.Minute),
		NotAfter:     notAfter,
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
		IPAddresses:  append([]net.IP{net.IPv4(127, 0, 0, 1)}, req.IPs...),
		DNSNames:     append([]string{"localhost"}, req.DNSNames...),
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, caCert, &key.PublicKey, caKey)
	if err != nil {
		return PEM{}, err
	}
	return encode(der, key)
}

// Config holds a node's loaded identity and the CA it trusts.
type Config struct {
	cert tls.Certificate
	pool *x509.CertPool
}

// Load reads and checks the three files.
func Load(f Files) (*Config, error) {
	if m := f.Missing(); len(m) > 0 {
		return nil, fmt.Errorf("mtls: missing %v", m)
	}
	caPEM, err := os.ReadFile(f.CA)
	if err != nil {
		return nil, fmt.Errorf("mtls: CA certificate: %w", err)
	}
	certPEM, err := os.ReadFile(f.Cert)
	if err != nil {
		return nil, fmt.Errorf("mtls: node certificate: %w", err)
	}
	keyPEM, err := os.ReadFile(f.Key)
	if err != nil {
		return nil, fmt.Errorf("mtls: node key: %w", err)
	}
	return New(caPEM, PEM{Cert: certPEM, Key: keyPEM})
}

// New builds a Config from PEM bytes: the CA certificate to trust and the
// node's certificate and key, which must chain to it.
func New(caCert []byte, node PEM) (*Config, error) {
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(caCert) {
		return nil, errors.New("mtls: the CA file holds no PEM certificate")
	}
	cert, err := tls.X509KeyPair(node.Cert, node.Key)
	if err != nil {
		return nil, fmt.Errorf("mtls: node certificate and key: %w", err)
	}
	leaf, err := x509.ParseCertificate(cert.Certificate[0])
	if err != nil {
		return nil, fmt.Errorf("mtls: node certificate: %w", err)
	}
	if _, err := leaf.Verify(x509.VerifyOptions{Roots: pool, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}); err != nil {
		return nil, fmt.Errorf("mtls: the node certificate is not issued by the cluster CA: %w", err)
	}
	cert.Leaf = leaf
	return &Config{cert: cert, pool: pool}, nil
}

// Server is the configuration of an internal listener: TLS 1.3 only, and
// the client must present a certificate issued by the cluster CA.
func (c *Config) Server() *tls.Config {
	return &tls.Config{
		MinVersion:   tls.VersionTLS13,
		Certificates: []tls.Certificate{c.cert},
		ClientAuth:   tls.RequireAndVerifyClientCert,
		ClientCAs:    c.pool,
	}
}

// Client is the configuration for dialing another node. Nodes are dialed
// by the addresses they gossip, which need not be in their certificates
// (containers, NAT), so the server is authenticated by its chain to the
// cluster CA, not by name: every member is equally trusted.
func (c *Config) Client() *tls.Config {
	pool := c.pool
	return &tls.Config{
		MinVersion:         tls.VersionTLS13,
		Certificates:       []tls.Certificate{c.cert},
		InsecureSkipVerify: true, // replaced by VerifyConnection below: chain to the cluster CA
		VerifyConnection: func(cs tls.ConnectionState) error {
			return verifyChain(cs.PeerCertificates, pool, x509.ExtKeyUsageServerAuth)
		},
	}
}

func verifyChain(certs []*x509.Certificate, pool *x509.CertPool, usage x509.ExtKeyUsage) error {
	if len(certs) == 0 {
		return errors.New("mtls: the peer presented no certificate")
	}
	inter := x509.NewCertPool()
	for _, c := range certs[1:] {
		inter.AddCert(c)
	}
	_, err := certs[0].Verify(x509.VerifyOptions{Roots: pool, Intermediates: inter, KeyUsages: []x509.ExtKeyUsage{usage}})
	if err != nil {
		return fmt.Errorf("mtls: peer certificate not issued by the cluster CA: %w", err)
	}
	return nil
}

func parseCA(ca PEM) (*x509.Certificate, any, error) {
	cb, _ := pem.Decode(ca.Cert)
	if cb == nil || cb.Type != "CERTIFICATE" {
		return nil, nil, errors.New("mtls: the CA certificate is not PEM")
	}
	cert, err := x509.ParseCertificate(cb.Bytes)
	if err != nil {
		return nil, nil, fmt.Errorf("mtls: CA certificate: %w", err)
	}
	if !cert.IsCA {
		return nil, nil, errors.New("mtls: the CA certificate is not a CA")
	}
	kb, _ := pem.Decode(ca.Key)
	if kb == nil {
		return nil, nil, errors.New("mtls: the CA key is not PEM")
	}
	key, err := x509.ParsePKCS8PrivateKey(kb.Bytes)
	if err != nil {
		return nil, nil, fmt.Errorf("mtls: CA key: %w", err)
	}
	return cert, key, nil
}

func encode(der []byte, key *ecdsa.PrivateKey) (PEM, error) {
	kb, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return PEM{}, err
	}
	return PEM{
		Cert: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		Key:  pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: kb}),
	}, nil
}

func serialNumber() (*big.Int, error) {
	return rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 128))
}
