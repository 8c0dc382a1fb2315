package node

import (
	"net"
	"testing"
)

func TestTheAnnouncedBaseURL(t *testing.T) {
	tcp := func(ip string, port int) net.Addr { return &net.TCPAddr{IP: net.ParseIP(ip), Port: port} }
	tests := []struct {
		name string
		dev  bool
		addr net.Addr
		want string
	}{
		{"a --dev node on loopback announces localhost (WebAuthn refuses an IP as relying party)", true, tcp("127.0.0.1", 8080), "http://localhost:8080"},
		{"a --dev node on IPv6 loopback too", true, tcp("::1", 8081), "http://localhost:8081"},
		{"a --dev node on another address keeps it", true, tcp("10.0.0.5", 8080), "http://10.0.0.5:8080"},
		{"a production node announces its listener", false, tcp("127.0.0.1", 8080), "http://127.0.0.1:8080"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := defaultBaseURL(tc.dev, tc.addr); got != tc.want {
				t.Fatalf("got %s, want %s", got, tc.want)
			}
		})
	}
}
