package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/trustd/trustd/test/bench/load"
	"github.com/trustd/trustd/test/bench/procstat"
	"github.com/trustd/trustd/test/bench/report"
)

// cpuMeter samples this process's and the servers' CPU time at the start of
// the measured phase (called from the load runner's timer goroutine) and at
// its end. Several pids (the nodes of a cluster) are summed; each one's
// share is kept too.
type cpuMeter struct {
	pids []int

	mu          sync.Mutex
	started     bool
	selfStart   time.Duration
	srvStart    []time.Duration
	srvStartErr error
}

func (m *cpuMeter) start() {
	self := procstat.Self()
	srv := make([]time.Duration, len(m.pids))
	var err error
	for i, pid := range m.pids {
		var e error
		srv[i], e = procstat.CPU(pid)
		err = errors.Join(err, e)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.started, m.selfStart, m.srvStart, m.srvStartErr = true, self, srv, err
}

// stop returns the CPU used since start by this process and (if pids were
// given and could be read both times) by the servers, summed and each.
func (m *cpuMeter) stop() (self time.Duration, server *time.Duration, each []time.Duration, err error) {
	selfEnd := procstat.Self()
	m.mu.Lock()
	defer m.mu.Unlock()
	if !m.started {
		return 0, nil, nil, nil
	}
	self = selfEnd - m.selfStart
	if len(m.pids) == 0 {
		return self, nil, nil, nil
	}
	if m.srvStartErr != nil {
		return self, nil, nil, m.srvStartErr
	}
	var sum time.Duration
	for i, pid := range m.pids {
		end, err := procstat.CPU(pid)
		if err != nil {
			return self, nil, nil, err
		}
		each = append(each, end-m.srvStart[i])
		sum += end - m.srvStart[i]
	}
	return self, &sum, each, nil
}

// drive runs a prepared scenario and summarizes it.
func drive(ctx context.Context, o *options, p *prepared, log io.Writer) (*report.Summary, error) {
	meter := &cpuMeter{pids: p.serverPids}
	cfg := load.Config{
		Duration: o.duration, Warmup: o.warmup, Connections: o.connections, Rate: o.rate,
		Ops: p.ops, AtMeasureStart: meter.start,
	}
	loop := "closed loop"
	if o.rate > 0 {
		loop = fmt.Sprintf("open loop at %g req/s", o.rate)
	}
	fmt.Fprintf(log, "%s: %s, %d connections, %s warm-up + %s measured\n", p.name, loop, o.connections, o.warmup, o.duration)
	res, err := load.Run(ctx, cfg, p.newWorker)
	if err != nil {
		return nil, err
	}
	self, server, each, cpuErr := meter.stop()
	p.serverCPU = each
	notes := append([]string(nil), p.notes...)
	if cpuErr != nil {
		notes = append(notes, "server CPU not measured: "+cpuErr.Error())
	}
	if p.tokens != nil {
		notes = append(notes, fmt.Sprintf("tokens: %d of %d used", p.tokens.Used(), p.tokens.Len()))
	}
	meta := report.Meta{
		Scenario: p.name, Command: o.command, Targets: p.targets, ServerCPU: server, ClientCPU: self, Notes: notes,
	}
	if p.name != "siteverify" {
		meta.Keys, meta.Distribution = o.keys.N, string(o.keys.Distribution)
		if meta.Distribution == "" {
			meta.Distribution = "uniform"
		}
	}
	return report.Summarize(res, meta), nil
}
