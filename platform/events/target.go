package events

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"strings"
	"syscall"
	"time"

	"github.com/trustd/trustd/platform/lib/ident"
)

// Target policy (SSRF). A webhook URL is chosen by a workspace admin, and
// the node that delivers sits inside the operator's network, so the URL
// must not become a way to reach that network:
//
//   - https only; http only to a loopback host, and only when AllowLoopback
//     (set by --dev and by tests);
//   - no user info, no fragment, at most MaxURLLen bytes;
//   - the address actually dialled (after DNS, on every connection, so a
//     name that later resolves elsewhere gains nothing) must be a public
//     unicast address. Loopback needs AllowLoopback; private, shared
//     (100.64/10), link-local (including 169.254.169.254, the cloud
//     metadata address), documentation, benchmarking, reserved and NAT64
//     or 6to4 ranges need the operator flag AllowPrivate
//     (--webhooks-allow-private-targets); unspecified, multicast and
//     broadcast are never dialled;
//   - environment proxies are not used (the check would see the proxy) and
//     redirects are not followed.

// MaxURLLen bounds an endpoint URL.
const MaxURLLen = 2048

type targetPolicy struct{ allowLoopback, allowPrivate bool }

// special are the ranges that are neither loopback nor public unicast and
// that netip's predicates do not name.
var special = func() []netip.Prefix {
	var out []netip.Prefix
	for _, s := range []string{"0.0.0.0/8", "100.64.0.0/10", "192.0.0.0/24", "192.0.2.0/24", "198.18.0.0/15",
		"198.51.100.0/24", "203.0.113.0/24", "240.0.0.0/4", "64:ff9b::/96", "64:ff9b:1::/48", "100::/64",
		"2001::/23", "2001:db8::/32", "2002::/16"} {
		out = append(out, netip.MustParsePrefix(s))
	}
	return out
}()

// checkIP says whether the policy lets the dispatcher dial ip.
func (p targetPolicy) checkIP(ip netip.Addr) error {
	ip = ip.Unmap()
	switch {
	case !ip.IsValid() || ip.IsUnspecified() || ip.IsMulticast() || ip == netip.AddrFrom4([4]byte{255, 255, 255, 255}):
		return fmt.Errorf("address %s is never a webhook target", ip)
	case ip.IsLoopback():
		if p.allowLoopback || p.allowPrivate {
			return nil
		}
		return fmt.Errorf("address %s is loopback (allowed only in development)", ip)
	}
	private := ip.IsPrivate() || ip.IsLinkLocalUnicast() || ip.IsLinkLocalMulticast() || ip.IsInterfaceLocalMulticast()
	for _, pf := range special {
		private = private || pf.Contains(ip)
	}
	if private && !p.allowPrivate {
		return fmt.Errorf("address %s is private, link-local or reserved (the operator flag --webhooks-allow-private-targets allows it)", ip)
	}
	return nil
}

func isLoopbackHost(h string) bool {
	if strings.EqualFold(h, "localhost") {
		return true
	}
	ip, err := netip.ParseAddr(h)
	return err == nil && ip.Unmap().IsLoopback()
}

// checkURL validates an endpoint URL against the policy; the dial-time
// check still applies to whatever a name resolves to.
func (p targetPolicy) checkURL(raw string) error {
	if raw == "" || len(raw) > MaxURLLen {
		return fmt.Errorf("url must be 1 to %d bytes", MaxURLLen)
	}
	u, err := url.Parse(raw)
	if err != nil || !u.IsAbs() || u.Host == "" || u.Opaque != "" {
		return fmt.Errorf("url must be an absolute http(s) URL")
	}
	if u.User != nil || u.Fragment != "" || strings.Contains(raw, "#") {
		return fmt.Errorf("url must not carry user info or a fragment")
	}
	host := u.Hostname()
	switch u.Scheme {
	case "https":
	case "http":
		if !p.allowLoopback || !isLoopbackHost(host) {
			return fmt.Errorf("url must be https (http only to a loopback host in development)")
		}
	default:
		return fmt.Errorf("url scheme must be https")
	}
	if port := u.Port(); port != "" {
		if n, err := net.LookupPort("tcp", port); err != nil || n <= 0 || n > 65535 {
			return fmt.Errorf("url port is invalid")
		}
	}
	if ip, err := netip.ParseAddr(host); err == nil {
		return p.checkIP(ip)
	}
	if strings.EqualFold(host, "localhost") {
		if p.allowLoopback || p.allowPrivate {
			return nil
		}
		return fmt.Errorf("localhost is allowed only in development")
	}
	if !ident.Hostname(strings.ToLower(strings.TrimSuffix(host, "."))) {
		return fmt.Errorf("url host %q is not a valid DNS name or IP address", host)
	}
	return nil
}

// dialer returns a dial function that checks every address it connects to.
func (p targetPolicy) dialer(connectTimeout time.Duration) func(ctx context.Context, network, addr string) (net.Conn, error) {
	d := &net.Dialer{Timeout: connectTimeout, Control: func(network, address string, _ syscall.RawConn) error {
		ap, err := netip.ParseAddrPort(address)
		if err != nil {
			return fmt.Errorf("webhook target %q: %w", address, err)
		}
		return p.checkIP(ap.Addr())
	}}
	return d.DialContext
}
