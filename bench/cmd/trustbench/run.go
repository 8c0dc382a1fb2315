package main

import (
	"context"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/trustd/trustd/bench/load"
	"github.com/trustd/trustd/bench/procstat"
	"github.com/trustd/trustd/bench/report"
)

// cpuMeter samples this process's and the server's CPU time at the start of
// the measured phase (called from the load runner's timer goroutine) and at
// its end.
type cpuMeter struct {
	pid int

	mu                  sync.Mutex
	started             bool
	selfStart, srvStart time.Duration
	srvStartErr         error
}

func (m *cpuMeter) start() {
	self := procstat.Self()
	var srv time.Duration
	var err error
	if m.pid > 0 {
		srv, err = procstat.CPU(m.pid)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.started, m.selfStart, m.srvStart, m.srvStartErr = true, self, srv, err
}

// stop returns the CPU used since start by this process and (if a pid was
// given and could be read both times) by the server.
func (m *cpuMeter) stop() (self time.Duration, server *time.Duration, err error) {
	selfEnd := procstat.Self()
	m.mu.Lock()
	defer m.mu.Unlock()
	if !m.started {
		return 0, nil, nil
	}
	self = selfEnd - m.selfStart
	if m.pid <= 0 {
		return self, nil, nil
	}
	if m.srvStartErr != nil {
		return self, nil, m.srvStartErr
	}
	end, err := procstat.CPU(m.pid)
	if err != nil {
		return self, nil, err
	}
	d := end - m.srvStart
	return self, &d, nil
}

// drive runs a prepared scenario and summarizes it.
func drive(ctx context.Context, o *options, p *prepared, log io.Writer) (*report.Summary, error) {
	meter := &cpuMeter{pid: p.serverPid}
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
	self, server, cpuErr := meter.stop()
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
