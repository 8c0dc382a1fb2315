package cluster

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"testing"
	"time"
)

func TestStreamFramesRoundTrip(t *testing.T) {
	tests := []struct {
		name    string
		kind    byte
		id      uint64
		meta    []byte
		payload []byte
	}{
		{"an ask with a small id and no metadata", frameAsk, 1, nil, []byte("ask")},
		{"an answer with the largest id", frameAnswer, 1<<64 - 1, nil, []byte{0x08, 0x01}},
		{"an answer with an empty payload (an OK answer without result)", frameAnswer, 7, nil, nil},
		{"an ask with trace metadata", frameAsk, 300, []byte("\x0a\x37traceparent-00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"), []byte("op")},
		{"an ask with empty metadata keeps the flag", frameAsk, 2, []byte{}, []byte("op")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := appendFrame([]byte("prefix"), tt.kind, tt.id, tt.meta, tt.payload)
			if !bytes.HasPrefix(b, []byte("prefix")) {
				t.Fatal("appendFrame overwrote what b held")
			}
			b = b[len("prefix"):]
			if n := int(binary.BigEndian.Uint32(b)); n != len(b)-4 {
				t.Fatalf("length field %d, want %d", n, len(b)-4)
			}
			f, err := parseFrame(b[4:])
			if err != nil {
				t.Fatal(err)
			}
			if f.version != StreamVersion || f.kind != tt.kind || f.id != tt.id || !bytes.Equal(f.payload, tt.payload) {
				t.Fatalf("got %+v", f)
			}
			if (f.meta == nil) != (tt.meta == nil) || !bytes.Equal(f.meta, tt.meta) {
				t.Fatalf("meta %q, want %q", f.meta, tt.meta)
			}
			if tt.meta == nil {
				h := appendFrameHeader(nil, tt.kind, tt.id, len(tt.payload))
				if !bytes.Equal(append(h, tt.payload...), b) {
					t.Fatalf("appendFrameHeader+payload = %x, appendFrame %x", append(h, tt.payload...), b)
				}
			}
		})
	}
}

func TestMalformedStreamFramesAreRefused(t *testing.T) {
	tests := []struct {
		name string
		body []byte
		want error
	}{
		{"a body shorter than the fixed header", []byte{StreamVersion, frameAsk}, errFrameMalformed},
		{"a frame of a later protocol version", []byte{StreamVersion + 1, frameAsk, 0, 1}, errFrameVersion},
		{"a frame of version 0", []byte{0, frameAsk, 0, 1}, errFrameVersion},
		{"an unknown kind", []byte{StreamVersion, 9, 0, 1}, errFrameMalformed},
		{"an unknown flag", []byte{StreamVersion, frameAsk, 0x80, 1}, errFrameMalformed},
		{"a truncated request id", []byte{StreamVersion, frameAsk, 0, 0x80}, errFrameMalformed},
		{"metadata longer than the frame", []byte{StreamVersion, frameAsk, frameHasMeta, 1, 5, 'a'}, errFrameMalformed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := parseFrame(tt.body); !errors.Is(err, tt.want) {
				t.Fatalf("err = %v, want %v", err, tt.want)
			}
		})
	}
}

func TestFrameReaderReadsFramesOfEverySize(t *testing.T) {
	var stream []byte
	sizes := []int{0, 1, 100, 4000, 5000, 70000} // the buffer below holds 4096
	for i, n := range sizes {
		stream = appendFrame(stream, frameAnswer, uint64(i+1), nil, bytes.Repeat([]byte{byte(i)}, n))
	}
	r := &frameReader{br: bufio.NewReaderSize(bytes.NewReader(stream), 4096)}
	for i, n := range sizes {
		f, err := r.next()
		if err != nil {
			t.Fatalf("frame %d: %v", i, err)
		}
		if f.id != uint64(i+1) || len(f.payload) != n || (n > 0 && f.payload[n-1] != byte(i)) {
			t.Fatalf("frame %d: id %d, %d bytes, want id %d, %d bytes", i, f.id, len(f.payload), i+1, n)
		}
	}
	if _, err := r.next(); err != io.EOF {
		t.Fatalf("after the last frame: %v, want EOF", err)
	}
	// a stream cut inside a frame is an unexpected EOF, not a clean end
	r = &frameReader{br: bufio.NewReaderSize(bytes.NewReader(stream[:len(stream)-1]), 4096)}
	for range len(sizes) - 1 {
		if _, err := r.next(); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := r.next(); err != io.ErrUnexpectedEOF {
		t.Fatalf("a cut frame: %v, want unexpected EOF", err)
	}
	// a length over the limit is refused before anything is allocated
	huge := binary.BigEndian.AppendUint32(nil, maxStreamFrame+1)
	r = &frameReader{br: bufio.NewReader(bytes.NewReader(huge))}
	if _, err := r.next(); !errors.Is(err, errFrameTooLarge) {
		t.Fatalf("an oversized length: %v, want errFrameTooLarge", err)
	}
}

// FuzzParseFrame: no input panics the decoder, and whatever it accepts
// encodes back to the same bytes.
func FuzzParseFrame(f *testing.F) {
	f.Add(appendFrame(nil, frameAsk, 1, nil, []byte("x"))[4:])
	f.Add(appendFrame(nil, frameAnswer, 1<<40, []byte("meta"), nil)[4:])
	f.Add([]byte{StreamVersion, frameAsk, 3, 0x80})
	f.Fuzz(func(t *testing.T, body []byte) {
		fr, err := parseFrame(body)
		if err != nil {
			return
		}
		again := appendFrame(nil, fr.kind, fr.id, fr.meta, fr.payload)[4:]
		// a request id may be encoded non-minimally on the wire; the
		// re-encoding is minimal, so compare decoded values.
		back, err := parseFrame(again)
		if err != nil || back.id != fr.id || back.kind != fr.kind || !bytes.Equal(back.payload, fr.payload) ||
			!bytes.Equal(back.meta, fr.meta) || (back.meta == nil) != (fr.meta == nil) {
			t.Fatalf("%x decoded to %+v, which re-encodes to %+v (%v)", body, fr, back, err)
		}
	})
}

// A wake-up that finds nothing queued (an earlier write took its frames)
// must not swap the writer's buffers: the next write would then send the
// very buffer callers append to, and a frame queued during that write
// overwrote the one being written (an ask lost, its caller timing out).
func TestAWriterWakeUpWithNothingQueuedLosesNoFrame(t *testing.T) {
	tr := NewTransport("k", nil)
	t.Cleanup(tr.Close)
	sender, owner := net.Pipe()
	t.Cleanup(func() { sender.Close(); owner.Close() })
	s := &stream{sp: &streamPeer{t: tr, addr: "peer"}, conn: sender, slots: make(chan struct{}, maxStreamInflight),
		pending: map[uint64]pendingRef{}, wake: make(chan struct{}, 1), done: make(chan struct{})}
	tr.streamWG.Add(1)
	go s.write()
	t.Cleanup(func() { s.fail(errors.New("test over"), false) })
	queue := func(id uint64) {
		s.mu.Lock()
		first := len(s.wbuf) == 0
		s.wbuf = appendFrame(s.wbuf, frameAsk, id, nil, []byte("the same length"))
		s.wasks++
		s.mu.Unlock()
		if first {
			s.wake <- struct{}{}
		}
	}
	r := &frameReader{br: bufio.NewReader(owner)}
	read := func(want uint64) {
		t.Helper()
		f, err := r.next()
		if err != nil || f.id != want {
			t.Fatalf("frame %d read as %d (%v)", want, f.id, err)
		}
	}
	settled := func() {
		for len(s.wake) > 0 {
			time.Sleep(time.Millisecond)
		}
		time.Sleep(20 * time.Millisecond) // the writer takes the (empty) queue
	}
	queue(1)
	read(1)
	s.wake <- struct{}{} // a late wake-up: its frame left with the write above
	settled()
	queue(2) // written, the pipe blocking the write until the owner reads...
	settled()
	queue(3) // ...while this one is queued
	read(2)
	read(3)
}
