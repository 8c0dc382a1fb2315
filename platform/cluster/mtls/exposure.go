package mtls

import (
	"fmt"
	"net"
	"sort"
	"strings"
)

// CheckExposure enforces the rule of node-to-node trust: an internal
// listener (Raft, peer forwarding, gossip) may bind a non-loopback address
// only when mutual TLS and the cluster key are both configured. listeners
// maps a listener's name to its bind address. The error names what is
// exposed and what is missing, for the operator.
func CheckExposure(listeners map[string]string, haveTLS, haveKey bool) error {
	if haveTLS && haveKey {
		return nil
	}
	var exposed []string
	for name, addr := range listeners {
		if !IsLoopback(addr) {
			exposed = append(exposed, fmt.Sprintf("%s on %s", name, addr))
		}
	}
	if len(exposed) == 0 {
		return nil
	}
	sort.Strings(exposed)
	var missing []string
	if !haveTLS {
		missing = append(missing, "mutual TLS (--tls-ca, --tls-cert, --tls-key; make them with `trustctl tls ca create` and `trustctl tls cert create`)")
	}
	if !haveKey {
		missing = append(missing, "a cluster key (TRUSTD_CLUSTER_KEY)")
	}
	return fmt.Errorf("internal listeners bind non-loopback addresses (%s) without %s: anyone who reaches them could forge cluster traffic; configure them or bind 127.0.0.1",
		strings.Join(exposed, ", "), strings.Join(missing, " and "))
}

// IsLoopback reports whether a host:port binds only the loopback
// interface. An empty host or an unspecified address binds every
// interface, so it is not loopback; a name other than localhost may
// resolve anywhere, so it is not either.
func IsLoopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		host = addr
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
