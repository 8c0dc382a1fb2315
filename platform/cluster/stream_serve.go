package cluster

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"sync"
	"time"

	"github.com/valyala/fasthttp"
	"go.opentelemetry.io/otel/trace"

	"github.com/trustd/trustd/platform/actors"
	"github.com/trustd/trustd/platform/proto/clusterpb"
)

// The serving end of a peer stream (stream.go has the sending end). The
// upgrade request has passed authenticPeer (mutual TLS, token, and the
// node-id claim, which a stream must make); the connection is then the
// stream's. One goroutine reads: it takes every whole frame already
// buffered (up to maxFrameAsks), serves the asks that need no replica
// together as an HTTP frame's are (Router.ServeTogether) and writes their
// answers in one write; an owner ask that needs its replica (a round
// trip to another node) runs on a goroutine of its own and answers when
// done, so it never holds up the asks behind it. At most
// maxStreamInflight of those run per stream; past that the reader stops
// reading (back-pressure through TCP). Answers are written by whoever has
// one while no write is in progress, taking everything queued meanwhile
// (no writer goroutine to wake).

// streamServers tracks the streams peers opened to this node: fasthttp's
// Shutdown does not wait for hijacked connections, so closePeer closes
// them and waits for their goroutines.
type streamServers struct {
	mu     sync.Mutex
	conns  map[net.Conn]struct{}
	closed bool
	wg     sync.WaitGroup
}

// add registers conn; false once the listener is closing.
func (ss *streamServers) add(conn net.Conn) bool {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	if ss.closed {
		return false
	}
	if ss.conns == nil {
		ss.conns = map[net.Conn]struct{}{}
	}
	ss.conns[conn] = struct{}{}
	ss.wg.Add(1)
	return true
}

func (ss *streamServers) remove(conn net.Conn) {
	ss.mu.Lock()
	delete(ss.conns, conn)
	ss.mu.Unlock()
	ss.wg.Done()
}

// close closes every served stream and waits for their goroutines.
func (ss *streamServers) close() {
	ss.mu.Lock()
	ss.closed = true
	for c := range ss.conns {
		_ = c.Close()
	}
	ss.mu.Unlock()
	ss.wg.Wait()
}

// serveStream answers an upgrade request (already authenticated).
func (c *Cluster) serveStream(ctx *fasthttp.RequestCtx) {
	peer := string(ctx.Request.Header.Peek(peerNodeHeader))
	if peer == "" && c.cfg.ServerTLS != nil {
		// Every build that opens streams claims its id; without a claim
		// the certificate would speak for a node it need not name.
		ctx.Error("a peer stream requires the node id claim", fasthttp.StatusForbidden)
		return
	}
	v := ctx.Request.Header.Peek(streamHeader)
	if string(v) != strconv.Itoa(StreamVersion) {
		c.streamCounters().versionRefused.Add(1)
		c.log.Warn("peer stream refused: unknown protocol version", "peer", peer, "version", string(v),
			"speaks", StreamVersion)
		ctx.Response.Header.Set(streamHeader, strconv.Itoa(StreamVersion))
		ctx.Error(fmt.Sprintf("peer stream version %q unknown; this node speaks %d", v, StreamVersion),
			fasthttp.StatusBadRequest)
		return
	}
	ctx.HijackSetNoResponse(true)
	ctx.Hijack(func(hj net.Conn) {
		// fasthttp's hijacked connection reads through its buffer but
		// does not close (it closes the connection once this returns):
		// closing, to end the stream from here, is the raw connection's.
		conn := hj
		if u, ok := hj.(interface{ UnsafeConn() net.Conn }); ok {
			conn = u.UnsafeConn()
		}
		if !c.streamSrv.add(conn) {
			return
		}
		defer c.streamSrv.remove(conn)
		_, err := io.WriteString(conn, "HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: "+
			streamUpgrade+"\r\n"+streamHeader+": "+strconv.Itoa(StreamVersion)+"\r\n\r\n")
		if err != nil {
			return
		}
		c.streamCounters().served.Add(1)
		s := &servedStream{c: c, conn: conn, peer: peer, sem: make(chan struct{}, maxStreamInflight)}
		s.serve(&frameReader{br: bufio.NewReaderSize(hj, streamBufSize)})
	})
}

// streamCounters are the transport's (one set per node), or a throwaway
// set for a cluster without one (router tests).
func (c *Cluster) streamCounters() *streamCounters {
	if c.trans != nil {
		return &c.trans.sc
	}
	return new(streamCounters)
}

// servedStream is one stream a peer opened to this node.
type servedStream struct {
	c    *Cluster
	conn net.Conn
	peer string
	sem  chan struct{} // asks served on goroutines of their own
	wg   sync.WaitGroup

	mu    sync.Mutex // guards what follows
	buf   []byte     // answers queued
	spare []byte
	busy  bool // a write is in progress
	err   error
}

// serve reads and serves frames until the connection ends.
func (s *servedStream) serve(r *frameReader) {
	defer s.wg.Wait()
	defer s.conn.Close()
	f := frames.Get().(*frameScratch)
	defer frames.Put(f)
	ids := make([]uint64, 0, maxFrameAsks)
	for {
		fr, err := r.next()
		f.asks, ids = f.asks[:0], ids[:0]
		for err == nil {
			if fr.kind != frameAsk {
				err = fmt.Errorf("%w: kind %d from the sending end", errFrameMalformed, fr.kind)
				break
			}
			f.asks = append(f.asks, askMsg{})
			if !f.asks[len(f.asks)-1].decode(fr.payload) {
				f.asks[len(f.asks)-1].partition = Partitions // refused below
			}
			ids = append(ids, fr.id)
			// Every whole frame already here joins this batch (their bytes
			// stay in place: nothing is read until the batch is served).
			if len(ids) == maxFrameAsks || !r.buffered() {
				break
			}
			fr, err = r.next()
		}
		if len(ids) > 0 {
			s.serveBatch(f, ids)
		}
		if err != nil {
			if errors.Is(err, errFrameVersion) {
				s.c.streamCounters().versionRefused.Add(1)
				s.c.log.Warn("peer stream frame of an unknown protocol version; closing the stream",
					"peer", s.peer, "err", err)
			} else if !errors.Is(err, io.EOF) && !errors.Is(err, net.ErrClosed) {
				s.c.log.Info("peer stream ended", "peer", s.peer, "err", err)
			}
			return
		}
	}
}

// serveBatch serves the asks of f (ids their request ids) and queues
// their answers.
func (s *servedStream) serveBatch(f *frameScratch, ids []uint64) {
	n := f.resetAnswers()
	var answered []bool // made only when some asks leave the batch
	for i := range f.asks {
		a, ans := &f.asks[i], &f.answers[i]
		if a.partition >= Partitions {
			ans.status, ans.err = clusterpb.Status_STATUS_BAD_REQUEST, "undecodable ask"
			continue
		}
		op, ok := s.c.decodeOp(a, ans)
		if !ok {
			continue
		}
		if _, rep := op.(actors.Replicated); rep && !a.replica {
			// Needs its replica: served on its own goroutine, answered
			// when done (the decoded op owns its bytes; the ask's are
			// copied, the frame's are reused by the next read).
			if answered == nil {
				answered = make([]bool, n)
			}
			answered[i] = true
			s.sem <- struct{}{}
			s.wg.Add(1)
			alone := askMsg{epoch: a.epoch, partition: a.partition, replica: a.replica}
			if len(a.trace) > 0 {
				alone.trace = bytes.Clone(a.trace)
			}
			go s.serveAlone(ids[i], alone, op)
			continue
		}
		f.together = append(f.together, FramedAsk{Epoch: a.epoch, Partition: int(a.partition), Op: op, Replica: a.replica})
		f.ops, f.idx = append(f.ops, op), append(f.idx, i)
		if len(a.trace) > 0 && s.c.router.tracer != nil {
			f.spans = append(f.spans, make([]trace.Span, len(f.together)-len(f.spans))...)
			_, f.spans[len(f.together)-1] = s.c.serveSpan(a)
		}
	}
	if len(f.together) > 0 {
		f.epochs = append(f.epochs[:0], make([]uint64, len(f.together))...)
		f.errs = append(f.errs[:0], make([]error, len(f.together))...)
		s.c.router.ServeTogether(f.together, f.epochs, f.errs)
		for j, i := range f.idx {
			s.c.answerOp(f.ops[j], f.epochs[j], f.errs[j], &f.answers[i])
			if j < len(f.spans) {
				endServeSpan(f.spans[j], &f.answers[i])
			}
		}
	}
	clear(f.together)
	clear(f.ops)
	clear(f.errs)
	clear(f.spans)
	f.together, f.ops, f.idx, f.spans = f.together[:0], f.ops[:0], f.idx[:0], f.spans[:0]
	s.mu.Lock()
	for i := range f.answers {
		if answered != nil && answered[i] {
			continue
		}
		s.buf = appendFrameHeader(s.buf, frameAnswer, ids[i], f.answers[i].size())
		s.buf = f.answers[i].appendTo(s.buf)
	}
	s.flushLocked()
}

// serveAlone serves one ask that needs its replica and queues its answer.
func (s *servedStream) serveAlone(id uint64, a askMsg, op actors.WireOp) {
	defer s.wg.Done()
	defer func() { <-s.sem }()
	var ans answer
	s.c.serveOp(&a, op, &ans)
	s.mu.Lock()
	s.buf = appendFrameHeader(s.buf, frameAnswer, id, ans.size())
	s.buf = ans.appendTo(s.buf)
	s.flushLocked()
}

// flushLocked writes the queued answers unless a write is in progress
// (its writer takes them next); s.mu is held and released.
func (s *servedStream) flushLocked() {
	if s.busy || s.err != nil {
		if s.err != nil {
			s.buf = s.buf[:0]
		}
		s.mu.Unlock()
		return
	}
	s.busy = true
	for len(s.buf) > 0 {
		b := s.buf
		s.buf = s.spare[:0]
		s.mu.Unlock()
		_ = s.conn.SetWriteDeadline(time.Now().Add(streamWriteTimeout))
		_, err := s.conn.Write(b)
		s.mu.Lock()
		s.spare = b[:0]
		if err != nil {
			// The sender's asks on this stream fail there when the
			// connection closes; the reader ends on it.
			s.err = err
			s.buf = s.buf[:0]
			_ = s.conn.Close()
		}
	}
	s.busy = false
	s.mu.Unlock()
}
