package events

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	mrand "math/rand/v2"
	nethttp "net/http"
	"slices"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/trustd/trustd/platform/catalog"
)

// Delivery. Every node runs Run; only the Raft leader delivers. Each tick
// (or wake-up after an emit) the leader reads the catalog, picks the
// pending deliveries that are due and not already in flight here, oldest
// first within Concurrency, PerWorkspace and PerEndpoint, sends each, and replicates the
// result (RecordWebhookAttempts). A result is recorded only after the
// attempt, so a leader that dies between sending and recording leaves the
// delivery due, and the next leader sends it again: at least once, with
// the same event id (webhook-id) for the receiver to deduplicate.
//
// The in-flight set is this node's alone and is guarded by disp.mu; it
// only stops a tick from starting a delivery that an earlier tick of the
// same leader is still sending.

// pruneEvery is how often the leader replicates a retention sweep.
const pruneEvery = time.Hour

// maxErrorLen bounds the error text kept in the log and delivery state.
const maxErrorLen = 200

// Run delivers while this node leads, until ctx ends; it returns after
// the attempts it started have finished.
func (o *Outbox) Run(ctx context.Context) {
	client := o.client()
	defer client.CloseIdleConnections()
	t := time.NewTicker(o.cfg.Tick)
	defer t.Stop()
	var lastPrune time.Time
	for {
		select {
		case <-ctx.Done():
			o.disp.wg.Wait()
			return
		case <-t.C:
		case <-o.wake:
		}
		if ctx.Err() != nil || !o.store.IsLeader() {
			continue
		}
		o.dispatch(ctx, client)
		if now := o.now(); now.Sub(lastPrune) >= pruneEvery {
			lastPrune = now
			if _, err := o.apply(ctx, &catalog.PruneWebhookOutboxes{At: now}); err != nil && ctx.Err() == nil {
				o.log.Warn("webhook outbox retention sweep failed", "err", err)
			}
		}
	}
}

// client is the delivery HTTP client: bounded timeouts, no environment
// proxy, every dialled address checked, redirects returned, not followed.
func (o *Outbox) client() *nethttp.Client {
	return &nethttp.Client{
		Timeout: o.cfg.Timeout,
		Transport: &nethttp.Transport{
			Proxy:                  nil,
			DialContext:            o.policy.dialer(o.cfg.ConnectTimeout),
			TLSHandshakeTimeout:    o.cfg.ConnectTimeout,
			ResponseHeaderTimeout:  o.cfg.Timeout,
			MaxResponseHeaderBytes: 64 << 10,
			MaxIdleConnsPerHost:    o.cfg.PerEndpoint,
			IdleConnTimeout:        90 * time.Second,
			ForceAttemptHTTP2:      true,
		},
		CheckRedirect: func(*nethttp.Request, []*nethttp.Request) error { return nethttp.ErrUseLastResponse },
	}
}

type due struct {
	ev *catalog.WebhookEvent
	ep *catalog.WebhookEndpoint
	d  catalog.WebhookDelivery
}

// dispatch starts the due deliveries that fit in the concurrency bounds.
func (o *Outbox) dispatch(ctx context.Context, client *nethttp.Client) {
	cat := o.store.Catalog()
	now := o.now()
	var list []due
	o.disp.mu.Lock()
	free := o.cfg.Concurrency - o.disp.total
	o.disp.mu.Unlock()
	if free <= 0 {
		return
	}
	for _, ob := range cat.WebhookOutboxes {
		for _, ev := range ob.Events {
			for _, d := range ev.Deliveries {
				if d.Status != catalog.DeliveryPending || d.NextAt.After(now) {
					continue
				}
				ep := cat.WebhookEndpoints[d.EndpointID]
				if ep == nil || ep.Status != catalog.WebhookEnabled {
					continue
				}
				list = append(list, due{ev: ev, ep: ep, d: d})
			}
		}
	}
	slices.SortFunc(list, func(a, b due) int { return a.d.NextAt.Compare(b.d.NextAt) })
	o.disp.mu.Lock()
	defer o.disp.mu.Unlock()
	for _, x := range list {
		key := x.ev.ID + "/" + x.ep.ID
		if o.disp.total >= o.cfg.Concurrency {
			break
		}
		ws := x.ev.WorkspaceID
		if o.disp.inflight[key] || o.disp.perEP[x.ep.ID] >= o.cfg.PerEndpoint || o.disp.perWS[ws] >= o.cfg.PerWorkspace {
			continue
		}
		o.disp.inflight[key] = true
		o.disp.perEP[x.ep.ID]++
		o.disp.perWS[ws]++
		o.disp.total++
		o.disp.wg.Add(1)
		go func() {
			defer o.disp.wg.Done()
			o.deliver(ctx, client, x)
			o.disp.mu.Lock()
			delete(o.disp.inflight, key)
			o.disp.perEP[x.ep.ID]--
			if o.disp.perEP[x.ep.ID] == 0 {
				delete(o.disp.perEP, x.ep.ID)
			}
			if o.disp.perWS[ws]--; o.disp.perWS[ws] == 0 {
				delete(o.disp.perWS, ws)
			}
			o.disp.total--
			o.disp.mu.Unlock()
		}()
	}
}

// deliver makes one attempt and records its result.
func (o *Outbox) deliver(ctx context.Context, client *nethttp.Client, x due) {
	attempt := x.d.Attempts + 1
	start := o.now()
	status, err := o.send(ctx, client, x.ep, x.ev, attempt, start)
	if ctx.Err() != nil {
		return // shutting down: the delivery stays due for the next leader
	}
	r := catalog.WebhookResult{WorkspaceID: x.ev.WorkspaceID, EventID: x.ev.ID, EndpointID: x.ep.ID, Attempt: attempt,
		At: start, DurationMS: o.now().Sub(start).Milliseconds(), HTTPStatus: status}
	switch {
	case err == nil && status >= 200 && status < 300:
		r.Delivered = true
	case err != nil:
		r.Error = clip(err.Error())
	case status >= 300 && status < 400:
		r.Error = "redirect not followed (HTTP " + strconv.Itoa(status) + ")"
	default:
		r.Error = "HTTP " + strconv.Itoa(status)
	}
	if !r.Delivered {
		r.NextAt = o.nextAttempt(x.d, attempt, start)
	}
	actx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	v, aerr := o.apply(actx, &catalog.RecordWebhookAttempts{Results: []catalog.WebhookResult{r},
		DisableAfterFailures: o.cfg.DisableAfterFailures, DisableAfterMS: o.cfg.DisableAfter.Milliseconds()})
	if aerr != nil {
		o.log.Warn("webhook attempt not recorded; the delivery stays due", "event_id", r.EventID, "endpoint_id", r.EndpointID, "err", aerr)
		return
	}
	switch {
	case r.Delivered:
		o.m.attempts.WithLabelValues("delivered").Inc()
	case r.NextAt.IsZero():
		o.m.attempts.WithLabelValues("failed").Inc()
	default:
		o.m.attempts.WithLabelValues("retrying").Inc()
	}
	for _, e := range v.(*catalog.RecordResult).Disabled {
		o.m.disabled.Inc()
		o.log.Warn("webhook endpoint disabled after sustained failure", "alert", "webhook_endpoint_disabled",
			"workspace_id", e.WorkspaceID, "endpoint_id", e.ID, "url", e.URL, "reason", e.DisabledReason)
	}
}

// nextAttempt schedules the attempt after a failed one, or returns zero
// when the current schedule is exhausted.
func (o *Outbox) nextAttempt(d catalog.WebhookDelivery, attempt int, at time.Time) time.Time {
	k := attempt - d.ScheduleFrom // attempts made in this schedule, this one included
	if k < 1 || k > len(o.cfg.Schedule) {
		return time.Time{}
	}
	wait := o.cfg.Schedule[k-1]
	j := o.cfg.Jitter * (2*mrand.Float64() - 1)
	return at.Add(wait + time.Duration(float64(wait)*j))
}

// send posts the event's body, signed with the endpoint's valid secrets.
func (o *Outbox) send(ctx context.Context, client *nethttp.Client, ep *catalog.WebhookEndpoint, ev *catalog.WebhookEvent, attempt int, at time.Time) (int, error) {
	secrets := o.sealer.secrets(ep, at)
	if len(secrets) == 0 {
		return 0, errors.New("no valid signing secret could be opened (is the cluster key the one the secret was sealed under?)")
	}
	// Re-check the URL against the policy of this node: a URL stored
	// under a laxer operator setting is not dialled under a stricter one.
	if err := o.policy.checkURL(ep.URL); err != nil {
		return 0, fmt.Errorf("target refused: %w", err)
	}
	sig := Sign(secrets, ev.ID, at.Unix(), ev.Body)
	req, err := nethttp.NewRequestWithContext(ctx, "POST", ep.URL, bytes.NewReader(ev.Body))
	if err != nil {
		return 0, err
	}
	h := req.Header
	h.Set("Content-Type", "application/json")
	h.Set("User-Agent", "trustd-webhooks/1")
	h.Set(SignatureHeader, sig.Signature)
	h.Set(StdIDHeader, sig.StdID)
	h.Set(StdTimestampHeader, sig.StdTimestamp)
	h.Set(StdSignatureHeader, sig.StdSignature)
	h.Set(AttemptHeader, strconv.Itoa(attempt))
	h.Set(EventTypeHeader, ev.Type)
	resp, err := client.Do(req)
	if err != nil {
		return 0, err
	}
	// Read a bounded amount so the connection can be reused; never more.
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	resp.Body.Close()
	return resp.StatusCode, nil
}

func clip(s string) string {
	if len(s) <= maxErrorLen {
		return s
	}
	s = s[:maxErrorLen]
	for !utf8.ValidString(s) {
		s = s[:len(s)-1]
	}
	return s
}
