package redislua

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strconv"
	"syscall"
	"time"

	"github.com/trustd/trustd/platform/lib/proc"
	"github.com/trustd/trustd/test/bench/resp"
)

// ErrNoServer is returned when no redis-server binary can be found.
var ErrNoServer = errors.New("redislua: redis-server not found on PATH")

// Server is a redis-server child process bound to 127.0.0.1.
type Server struct {
	cmd  *exec.Cmd
	addr string
	dir  string
	done chan struct{}
}

// Binary returns the path of redis-server, or ErrNoServer.
func Binary() (string, error) {
	p, err := exec.LookPath("redis-server")
	if err != nil {
		return "", ErrNoServer
	}
	return p, nil
}

// Start launches redis-server without persistence on a free loopback port
// and waits (bounded by ctx and a 10 s limit) until it answers PING. The
// child is killed if this process dies, so it never outlives a crashed run.
func Start(ctx context.Context) (*Server, error) {
	bin, err := Binary()
	if err != nil {
		return nil, err
	}
	var lastErr error
	for range 3 { // a free port can be taken between probe and bind
		s, err := start(ctx, bin)
		if err == nil {
			return s, nil
		}
		lastErr = err
		if ctx.Err() != nil {
			break
		}
	}
	return nil, lastErr
}

func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

func start(ctx context.Context, bin string) (*Server, error) {
	port, err := freePort()
	if err != nil {
		return nil, fmt.Errorf("redislua: free port: %w", err)
	}
	dir, err := os.MkdirTemp("", "trustbench-redis-")
	if err != nil {
		return nil, fmt.Errorf("redislua: temp dir: %w", err)
	}
	cmd := exec.Command(bin,
		"--port", strconv.Itoa(port), "--bind", "127.0.0.1",
		"--save", "", "--appendonly", "no", "--daemonize", "no",
		"--dir", dir, "--loglevel", "warning")
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("redislua: start %s: %w", bin, err)
	}
	s := &Server{cmd: cmd, addr: net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), dir: dir, done: make(chan struct{})}
	go func() {
		_ = cmd.Wait()
		close(s.done)
	}()
	if err := s.waitReady(ctx, 10*time.Second); err != nil {
		s.Stop()
		return nil, err
	}
	return s, nil
}

func (s *Server) waitReady(ctx context.Context, limit time.Duration) error {
	deadline := time.Now().Add(limit)
	for {
		c, err := resp.Dial(s.addr, time.Second)
		if err == nil {
			v, perr := c.Do("PING")
			c.Close()
			if perr == nil && v.Str == "PONG" {
				return nil
			}
			err = perr
		}
		select {
		case <-s.done:
			return fmt.Errorf("redislua: redis-server exited before answering on %s", s.addr)
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("redislua: redis-server not ready on %s: %w", s.addr, err)
		}
	}
}

// Addr is the server's host:port.
func (s *Server) Addr() string { return s.addr }

// Pid is the server's process id, for CPU accounting.
func (s *Server) Pid() int { return s.cmd.Process.Pid }

// Stop terminates the server (SIGTERM, then SIGKILL after 5 s) and removes
// its directory. It is safe to call more than once.
func (s *Server) Stop() {
	proc.Stop(s.cmd.Process, s.done, 5*time.Second)
	os.RemoveAll(s.dir)
}
