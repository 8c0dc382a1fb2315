// Command trustbench drives a running trustd node or cluster (or the
// baseline, or Redis with a Lua token bucket) over the network and reports
// throughput, latency percentiles, errors and decisions. It provisions its
// own workspace through the admin API and deletes it at the end, also on
// Ctrl-C. See test/bench/DESIGN.md and test/bench/RESULTS.md.
//
//	go run ./test/bench/cmd/trustbench --target http://127.0.0.1:8080 --credentials data/dev-credentials.json \
//	    --scenario ratelimit --duration 10s --warmup 2s --connections 64 --compare-baseline
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/trustd/trustd/test/bench/report"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Getenv, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// run is main without the process: it returns the exit code.
func run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) int {
	o, err := parseOptions(args, getenv, stderr)
	if errors.Is(err, errUsage) {
		return 2
	}
	if err != nil {
		fmt.Fprintln(stderr, "trustbench:", err)
		return 2
	}
	switch {
	case o.serveBaseline != "":
		return serveBaseline(ctx, o.serveBaseline, stderr)
	case o.suite:
		return runSuite(ctx, o, stdout, stderr)
	case o.cluster > 0:
		return runCluster(ctx, o, stdout, stderr)
	}
	s, err := runScenarios(ctx, o, stderr)
	if s == nil {
		fmt.Fprintln(stderr, "trustbench:", err)
		return 1
	}
	if o.json {
		err = errors.Join(err, report.WriteJSON(stdout, s))
	} else {
		err = errors.Join(err, report.WriteTable(stdout, s))
	}
	if o.jsonFile != "" {
		err = errors.Join(err, writeFile(o.jsonFile, func(w io.Writer) error { return report.WriteJSON(w, s) }))
	}
	if o.plot != "" {
		err = errors.Join(err, writeFile(o.plot, func(w io.Writer) error { return report.WritePlot(w, s) }))
		if err == nil {
			fmt.Fprintf(stderr, "plot written to %s\n", o.plot)
		}
	}
	if err != nil {
		fmt.Fprintln(stderr, "trustbench:", err)
		return 1
	}
	return 0
}

// runScenarios runs the baseline first if asked, then the scenario; each
// one's resources are released before the next starts. A summary comes back
// even when clean-up failed, with the error.
func runScenarios(ctx context.Context, o *options, log io.Writer) (*report.Summary, error) {
	var base *report.Summary
	if o.compareBaseline {
		var err error
		if base, err = runOne(ctx, o, scBaseline, log); err != nil {
			return nil, fmt.Errorf("baseline: %w", err)
		}
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
	}
	s, err := runOne(ctx, o, o.scenario, log)
	if s != nil && base != nil {
		s.CompareTo(base)
	}
	return s, err
}

func runOne(ctx context.Context, o *options, name string, log io.Writer) (s *report.Summary, err error) {
	p, err := prepare(ctx, o, name, log)
	if err != nil {
		return nil, err
	}
	defer func() {
		if cerr := p.cleanup(); cerr != nil {
			err = errors.Join(err, fmt.Errorf("clean-up: %w", cerr))
		}
	}()
	return drive(ctx, o, p, log)
}

func writeFile(path string, write func(io.Writer) error) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := write(f); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
