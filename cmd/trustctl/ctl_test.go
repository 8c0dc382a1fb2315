package main

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/trustd/trustd/node"
)

// startCtlNode starts a single node for a trustctl test and returns it with
// ctl (trustctl against it with the admin token, its output and error)
// and must (ctl that fails the test on an error). The node is closed when
// the test ends.
func startCtlNode(t *testing.T) (n *node.Node, ctl func(args ...string) (string, error), must func(args ...string) string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	n, err := node.Start(ctx, node.Config{DataDir: t.TempDir(), HTTPAddr: "127.0.0.1:0", RaftAddr: "127.0.0.1:0", FastRaft: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { n.Close(context.Background()) })
	ctl = func(args ...string) (string, error) {
		var out bytes.Buffer
		err := run(append([]string{"--addr", n.APIURL(), "--admin-token", n.AdminToken()}, args...), &out)
		return out.String(), err
	}
	must = func(args ...string) string {
		t.Helper()
		out, err := ctl(args...)
		if err != nil {
			t.Fatalf("trustctl %v: %v", args, err)
		}
		return out
	}
	return n, ctl, must
}
