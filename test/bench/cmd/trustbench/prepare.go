package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/trustd/trustd/test/bench/baseline/server"
	"github.com/trustd/trustd/test/bench/challenge"
	"github.com/trustd/trustd/test/bench/keys"
	"github.com/trustd/trustd/test/bench/load"
	"github.com/trustd/trustd/test/bench/provision"
	"github.com/trustd/trustd/test/bench/redislua"
	"github.com/trustd/trustd/test/bench/resp"
	"github.com/trustd/trustd/test/bench/scenario"
	"github.com/trustd/trustd/traffic/client"
)

// prepared is a scenario ready to be driven: its workers, what it talks to,
// and what must be undone afterwards.
type prepared struct {
	name      string
	targets   []string
	ops       []string
	newWorker func(i int) (load.Worker, error)
	// serverPids are the processes whose CPU is charged to the server
	// (several: the nodes of a cluster); serverCPU is each one's CPU over
	// the measured phase, set by drive.
	serverPids []int
	serverCPU  []time.Duration
	notes      []string
	cleanups   []func() error
	// tokens is set for scenarios that consume pre-minted tokens.
	tokens *scenario.Tokens
}

// cleanup undoes everything in reverse order and joins the errors.
func (p *prepared) cleanup() error {
	var errs []error
	for i := len(p.cleanups) - 1; i >= 0; i-- {
		errs = append(errs, p.cleanups[i]())
	}
	p.cleanups = nil
	return errors.Join(errs...)
}

// prepare provisions what the scenario needs. On error, whatever was created
// has already been removed.
func prepare(ctx context.Context, o *options, name string, log io.Writer) (p *prepared, err error) {
	p = &prepared{name: name}
	defer func() {
		if err != nil {
			err = errors.Join(err, p.cleanup())
			p = nil
		}
	}()
	switch name {
	case scBaseline:
		return p, prepareBaseline(o, p, log)
	case scRedisLua:
		return p, prepareRedis(ctx, o, p, log)
	}
	return p, prepareTrustd(ctx, o, p, log)
}

func (p *prepared) chooser(o *options, i int) (*keys.Chooser, error) {
	return keys.New(o.keys, o.seed+uint64(i)*0x9e3779b9)
}

func prepareBaseline(o *options, p *prepared, log io.Writer) error {
	var targets []string
	switch {
	case o.scenario == scBaseline && len(o.targets) > 0:
		// --scenario baseline --target: a baseline running on its own; its
		// --server-pid is the baseline's.
		targets, p.serverPids = o.targets, o.serverPids()
	case o.baselineTarget != "":
		targets = []string{o.baselineTarget}
	default:
		url, stop, err := server.Listen()
		if err != nil {
			return err
		}
		p.cleanups = append(p.cleanups, func() error { stop(); return nil })
		targets = []string{url}
		p.notes = append(p.notes, "in-process baseline server: client CPU includes the server's")
		fmt.Fprintf(log, "baseline: serving in-process on %s\n", url)
	}
	tg, err := scenario.NewTargets(targets, o.connections, o.timeout)
	if err != nil {
		return err
	}
	p.cleanups = append(p.cleanups, func() error { tg.CloseIdle(); return nil })
	p.targets, p.ops = targets, []string{scBaseline}
	bodies := scenario.CheckBodies(o.keys.N)
	p.newWorker = func(i int) (load.Worker, error) {
		ch, err := p.chooser(o, i)
		if err != nil {
			return nil, err
		}
		return scenario.NewRateLimit(0, tg, "", bodies, ch), nil
	}
	return probeAll(tg, "", bodies, log)
}

// prepareRouted makes the run's workers share one reference client
// (traffic/client) that knows the first target and learns the ring; the
// warm-up teaches it the keys' partitions. Its counters go to the log at
// the end, so a run that did not route shows it.
func prepareRouted(o *options, p *prepared, secret string, bodies *keys.Payloads, log io.Writer) error {
	c, err := client.New(client.Config{Nodes: o.targets[:1], Secret: secret, Timeout: o.timeout,
		MaxConnsPerNode: o.connections, CacheSize: max(1<<16, 2*o.keys.N)})
	if err != nil {
		return err
	}
	p.cleanups = append(p.cleanups, func() error {
		st := c.Stats()
		fmt.Fprintf(log, "  client routing: %d checks, %d sent to the owner (%.1f %%), %d retried, %d ring fetches, ring epoch %d\n",
			st.Checks, st.Routed, 100*float64(st.Routed)/float64(max(1, st.Checks)), st.Retried, st.RingFetches, c.Epoch())
		c.Close()
		return nil
	})
	p.newWorker = func(i int) (load.Worker, error) {
		ch, err := p.chooser(o, i)
		if err != nil {
			return nil, err
		}
		return scenario.NewRoutedRateLimit(0, c, bodies, ch), nil
	}
	return nil
}

// probeAll checks that every node answers a rate-limit check before any
// measuring starts, so a wrong secret or a node still starting fails fast.
func probeAll(tg *scenario.Targets, secret string, bodies *keys.Payloads, log io.Writer) error {
	for i := range tg.Len() {
		ch, _ := keys.New(keys.Spec{N: 1}, 1)
		o := scenario.Probe(scenario.NewRateLimit(0, tg.Only(i), secret, bodies, ch), 15*time.Second)
		if o.Kind != load.OK {
			return fmt.Errorf("%s does not answer rate-limit checks (%s)", tg.Base(i), describe(o))
		}
	}
	fmt.Fprintf(log, "probe: %d node(s) answer\n", tg.Len())
	return nil
}

func describe(o load.Outcome) string {
	switch o.Kind {
	case load.Transport:
		return "transport error"
	case load.Status:
		return fmt.Sprintf("HTTP %d", o.Status)
	case load.Decode:
		return "undecodable answer"
	}
	return "ok"
}

func prepareRedis(ctx context.Context, o *options, p *prepared, log io.Writer) error {
	srv, err := redislua.Start(ctx)
	if err != nil {
		return err
	}
	p.cleanups = append(p.cleanups, func() error { srv.Stop(); return nil })
	fmt.Fprintf(log, "redis-lua: redis-server pid %d on %s\n", srv.Pid(), srv.Addr())
	c, err := resp.Dial(srv.Addr(), o.timeout)
	if err != nil {
		return err
	}
	sha, err := redislua.Load(c)
	c.Close()
	if err != nil {
		return err
	}
	b := redislua.Bucket{Capacity: o.capacity, RefillAmount: o.capacity, RefillInterval: time.Second, Cost: 1}
	cmds := redislua.Commands(o.keys.N, sha, b)
	p.targets, p.ops, p.serverPids = []string{"redis://" + srv.Addr()}, []string{scRedisLua}, []int{srv.Pid()}
	p.newWorker = func(i int) (load.Worker, error) {
		ch, err := p.chooser(o, i)
		if err != nil {
			return nil, err
		}
		return redislua.NewWorker(srv.Addr(), cmds, ch, o.timeout)
	}
	return nil
}

func prepareTrustd(ctx context.Context, o *options, p *prepared, log io.Writer) error {
	admin, err := provision.NewAdmin(o.targets[0], o.adminToken)
	if err != nil {
		return err
	}
	var policies []provision.PolicySpec
	switch o.scenario {
	case scRateLimit, scMixed:
		policies = []provision.PolicySpec{provision.BenchPolicy("subject", o.capacity)}
	case scRateLimitMulti:
		for _, scope := range []string{"subject", "device", "workspace"} {
			policies = append(policies, provision.BenchPolicy(scope, o.capacity))
		}
	}
	env, err := admin.Setup(ctx, policies)
	if err != nil {
		return err
	}
	fmt.Fprintf(log, "provisioned workspace %s (%s) with site %s and %d policies\n", env.Workspace.ID, env.Workspace.Name, env.Site.SiteKey, len(env.Policies))
	p.cleanups = append(p.cleanups, func() error {
		err := admin.Teardown(env)
		if err == nil {
			fmt.Fprintf(log, "deleted workspace %s\n", env.Workspace.ID)
		}
		return err
	})
	tg, err := scenario.NewTargets(o.targets, o.connections, o.timeout)
	if err != nil {
		return err
	}
	p.cleanups = append(p.cleanups, func() error { tg.CloseIdle(); return nil })
	p.targets, p.serverPids = o.targets, o.serverPids()
	bodies := scenario.CheckBodies(o.keys.N)
	secret := env.Site.Secret
	if o.scenario != scSiteverify {
		if err := probeAll(tg, secret, bodies, log); err != nil {
			return err
		}
	}
	if o.scenario == scSiteverify || o.scenario == scMixed {
		if p.tokens, err = mint(ctx, o, env, p, log); err != nil {
			return err
		}
	}
	switch o.scenario {
	case scRateLimit, scRateLimitMulti:
		p.ops = []string{o.scenario}
		if o.clientRouting {
			return prepareRouted(o, p, secret, bodies, log)
		}
		p.newWorker = func(i int) (load.Worker, error) {
			ch, err := p.chooser(o, i)
			if err != nil {
				return nil, err
			}
			return scenario.NewRateLimit(0, tg, secret, bodies, ch), nil
		}
	case scSiteverify:
		p.ops = []string{scSiteverify}
		p.newWorker = func(int) (load.Worker, error) { return scenario.NewSiteverify(0, tg, p.tokens), nil }
	case scMixed:
		for _, w := range o.mix {
			p.ops = append(p.ops, w.Name)
		}
		p.newWorker = func(i int) (load.Worker, error) {
			ch, err := p.chooser(o, i)
			if err != nil {
				return nil, err
			}
			var ws []load.Worker
			for op, w := range o.mix {
				if w.Name == scRateLimit {
					ws = append(ws, scenario.NewRateLimit(uint8(op), tg, secret, bodies, ch))
				} else {
					ws = append(ws, scenario.NewSiteverify(uint8(op), tg, p.tokens))
				}
			}
			return scenario.NewMix(o.mix, ws, ch.Rand()), nil
		}
	}
	return nil
}

// tokenLifetime is how long a minted token stays valid (the bench site's
// token_ttl_seconds, the redeem answer's expires_in); a run that starts
// later than this verifies expired tokens.
const tokenLifetime = provision.BenchTokenTTLSeconds * time.Second

func mint(ctx context.Context, o *options, env *provision.Env, p *prepared, log io.Writer) (*scenario.Tokens, error) {
	want := o.tokens
	if o.rate > 0 {
		need := int(o.rate*(o.duration+o.warmup).Seconds()) + 1
		if o.scenario == scMixed {
			need = need * siteverifyShare(o.mix) / 100
		}
		if need < want {
			want = need
		} else if need > want {
			p.notes = append(p.notes, fmt.Sprintf("--tokens %d is less than the %d the schedule needs: the run will stop early", want, need))
		}
	}
	fmt.Fprintf(log, "minting %d siteverify tokens with %d workers (challenge, proof of work, redeem)\n", want, o.mintWorkers)
	m := challenge.NewMinter(o.targets[0], "http://"+provision.BenchHost, env.Site.SiteKey, o.mintWorkers)
	start := time.Now()
	toks, err := challenge.MintMany(ctx, m, want, o.mintWorkers, func(done, want int) {
		fmt.Fprintf(log, "  minted %d/%d (%.0f/s)\n", done, want, float64(done)/time.Since(start).Seconds())
	})
	if err != nil {
		return nil, err
	}
	took := time.Since(start)
	fmt.Fprintf(log, "minted %d tokens in %s\n", len(toks), took.Round(time.Millisecond))
	if took+o.warmup+o.duration > tokenLifetime {
		p.notes = append(p.notes, fmt.Sprintf("minting took %s: the first tokens may expire before the run ends (lifetime %s)", took.Round(time.Second), tokenLifetime))
	}
	return scenario.NewTokens(env.Site.Secret, toks), nil
}

// siteverifyShare is the siteverify percentage of the mix, rounded up.
func siteverifyShare(mix []scenario.Weight) int {
	total, sv := 0, 0
	for _, w := range mix {
		total += w.Weight
		if w.Name == scSiteverify {
			sv += w.Weight
		}
	}
	return (sv*100 + total - 1) / total
}
