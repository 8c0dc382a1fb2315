package faults

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
)

// netEnv is the network the test builds when it runs as root: a hub
// namespace holding a bridge, one namespace per node joined to the bridge
// by a veth pair, and one veth from the test's own namespace to the bridge
// so the clients reach every node. Addresses are 10.77.<net>.0/24: the
// clients are .1, node i is .10+i. Faults are blackhole routes (cuts) and
// iptables statistic DROP rules (random drops) inside the node namespaces;
// the clients' address is cut only by PartitionOne.
type netEnv struct {
	sfx      string
	subnet   int
	hub      string
	hostIf   string
	ns       []string // per node
	ips      []string // per node
	iptables bool     // random drops available

	mu     sync.Mutex
	routes map[int][]string // node → blackholed addresses
	drops  map[int]bool
}

func run(args ...string) error {
	out, err := exec.Command(args[0], args[1:]...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("%s: %v: %s", strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return nil
}

// netnsUsable says why namespaces cannot be used, or "".
func netnsUsable() string {
	if os.Geteuid() != 0 {
		return "not root"
	}
	if _, err := exec.LookPath("ip"); err != nil {
		return "no ip command"
	}
	name := "tfprobe-" + randHex(3)
	if err := run("ip", "netns", "add", name); err != nil {
		return err.Error()
	}
	_ = run("ip", "netns", "del", name)
	return ""
}

func randHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// newNetEnv builds the namespaces for n nodes; t.Cleanup removes them,
// also when the test fails.
func newNetEnv(t *testing.T, n int) (*netEnv, error) {
	e := &netEnv{sfx: randHex(2), routes: map[int][]string{}, drops: map[int]bool{}}
	// A /24 no interface of this namespace uses (several runs may share
	// the machine).
	out, _ := exec.Command("ip", "-4", "-o", "addr").CombinedOutput()
	for tries := 0; ; tries++ {
		b := make([]byte, 1)
		_, _ = rand.Read(b)
		e.subnet = 1 + int(b[0])%250
		if !strings.Contains(string(out), fmt.Sprintf(" 10.77.%d.", e.subnet)) {
			break
		}
		if tries > 50 {
			return nil, fmt.Errorf("no free 10.77.x.0/24")
		}
	}
	e.hub = "tf" + e.sfx + "-hub"
	e.hostIf = "tf" + e.sfx + "h"
	t.Cleanup(e.remove)
	cmds := [][]string{
		{"ip", "netns", "add", e.hub},
		{"ip", "-n", e.hub, "link", "add", "br0", "type", "bridge"},
		{"ip", "-n", e.hub, "link", "set", "br0", "up"},
		{"ip", "link", "add", e.hostIf, "type", "veth", "peer", "name", "tf" + e.sfx + "p"},
		{"ip", "link", "set", "tf" + e.sfx + "p", "netns", e.hub},
		{"ip", "-n", e.hub, "link", "set", "tf" + e.sfx + "p", "master", "br0", "up"},
		{"ip", "addr", "add", e.clientIP() + "/24", "dev", e.hostIf},
		{"ip", "link", "set", e.hostIf, "up"},
	}
	for i := 0; i < n; i++ {
		ns := fmt.Sprintf("tf%s-n%d", e.sfx, i+1)
		ip := fmt.Sprintf("10.77.%d.%d", e.subnet, 11+i)
		e.ns, e.ips = append(e.ns, ns), append(e.ips, ip)
		v := fmt.Sprintf("v%d", i+1)
		cmds = append(cmds,
			[]string{"ip", "netns", "add", ns},
			[]string{"ip", "-n", e.hub, "link", "add", v, "type", "veth", "peer", "name", "eth0", "netns", ns},
			[]string{"ip", "-n", e.hub, "link", "set", v, "master", "br0", "up"},
			[]string{"ip", "-n", ns, "addr", "add", ip + "/24", "dev", "eth0"},
			[]string{"ip", "-n", ns, "link", "set", "eth0", "up"},
			[]string{"ip", "-n", ns, "link", "set", "lo", "up"})
	}
	for _, c := range cmds {
		if err := run(c...); err != nil {
			return nil, err
		}
	}
	if _, err := exec.LookPath("iptables"); err == nil {
		e.iptables = run("ip", "netns", "exec", e.ns[0], "iptables", "-L", "-n") == nil
	}
	return e, nil
}

func (e *netEnv) clientIP() string { return fmt.Sprintf("10.77.%d.1", e.subnet) }

func (e *netEnv) remove() {
	for _, ns := range e.ns {
		_ = run("ip", "netns", "del", ns)
	}
	_ = run("ip", "netns", "del", e.hub)
	_ = run("ip", "link", "del", e.hostIf) // gone with its peer already, normally
}

func (e *netEnv) blackhole(node int, addr string) error {
	if err := run("ip", "-n", e.ns[node], "route", "add", "blackhole", addr+"/32"); err != nil {
		return err
	}
	e.mu.Lock()
	e.routes[node] = append(e.routes[node], addr)
	e.mu.Unlock()
	return nil
}

// cut stops all traffic between nodes a and b, both ways.
func (e *netEnv) cut(a, b int) error {
	if err := e.blackhole(a, e.ips[b]); err != nil {
		return err
	}
	return e.blackhole(b, e.ips[a])
}

// cutClients stops traffic between node a and the clients.
func (e *netEnv) cutClients(a int) error { return e.blackhole(a, e.clientIP()) }

// drop makes node a drop a share p of the packets from and to the other
// nodes (not the clients).
func (e *netEnv) drop(a int, p float64) error {
	if !e.iptables {
		return fmt.Errorf("iptables unavailable")
	}
	prob := fmt.Sprintf("%.3f", p)
	for i, ip := range e.ips {
		if i == a {
			continue
		}
		for _, rule := range [][]string{
			{"INPUT", "-s", ip},
			{"OUTPUT", "-d", ip},
		} {
			args := append([]string{"ip", "netns", "exec", e.ns[a], "iptables", "-A"}, rule...)
			args = append(args, "-m", "statistic", "--mode", "random", "--probability", prob, "-j", "DROP")
			if err := run(args...); err != nil {
				return err
			}
		}
	}
	e.mu.Lock()
	e.drops[a] = true
	e.mu.Unlock()
	return nil
}

// heal removes every cut and drop rule.
func (e *netEnv) heal() error {
	e.mu.Lock()
	routes, drops := e.routes, e.drops
	e.routes, e.drops = map[int][]string{}, map[int]bool{}
	e.mu.Unlock()
	var errs []string
	for n, addrs := range routes {
		for _, a := range addrs {
			if err := run("ip", "-n", e.ns[n], "route", "del", "blackhole", a+"/32"); err != nil {
				errs = append(errs, err.Error())
			}
		}
	}
	for n := range drops {
		for _, chain := range []string{"INPUT", "OUTPUT"} {
			if err := run("ip", "netns", "exec", e.ns[n], "iptables", "-F", chain); err != nil {
				errs = append(errs, err.Error())
			}
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("heal: %s", strings.Join(errs, "; "))
	}
	return nil
}
