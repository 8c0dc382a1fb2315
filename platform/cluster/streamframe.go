package cluster

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"

	"google.golang.org/protobuf/encoding/protowire"
)

// The peer stream's frame format (version 1). Both directions of a
// stream are a sequence of frames:
//
//	length   uint32, big endian: the bytes that follow, at most maxStreamFrame
//	version  1 byte: StreamVersion (a frame of another version closes the stream)
//	kind     1 byte: frameAsk (sender → owner) or frameAnswer (owner → sender)
//	flags    1 byte: bit 0 frameHasMeta; the other bits must be 0
//	id       uvarint: the request id, chosen by the sender, echoed by the answer
//	meta     only with frameHasMeta: uvarint length, then that many bytes
//	payload  the rest: an encoded clusterpb.Ask (frameAsk) or clusterpb.Answer (frameAnswer)
//
// The payloads are the very messages of the HTTP frames (/peer/v1/asks),
// so both transports share one encoder and decoder per message.
//
// meta is optional per-frame metadata, a protobuf message of its own whose
// field 1 (string) is reserved for a W3C traceparent and field 2 (string)
// for its tracestate; a receiver skips fields it does not know, and a
// frame without it costs nothing. It travels outside the Ask so that an
// answer can carry it too and so that the ask encoding (appendAsk, also
// sent to nodes of the previous version) need not change for it.

// StreamVersion is the peer stream protocol this build speaks, in the
// upgrade handshake (X-Trustd-Stream), in every frame and gossiped in
// NodeMeta.peer_stream.
const StreamVersion = 1

// Frame kinds.
const (
	frameAsk    byte = 1
	frameAnswer byte = 2
)

// frameHasMeta flags a frame that carries the optional metadata field.
const frameHasMeta byte = 1 << 0

// maxStreamFrame bounds a frame's length (after the length field). An ask
// or answer is a few hundred bytes; a larger length is a broken stream.
const maxStreamFrame = 4 << 20

// frameHeaderMax is the most bytes a frame header takes before meta and
// payload: length, version, kind, flags and a ten-byte uvarint id.
const frameHeaderMax = 4 + 3 + binary.MaxVarintLen64

// Errors of frame decoding. errFrameVersion is a frame of a protocol this
// build does not speak; the others are a corrupt stream.
var (
	errFrameVersion   = errors.New("cluster: peer stream frame of an unknown protocol version")
	errFrameMalformed = errors.New("cluster: malformed peer stream frame")
	errFrameTooLarge  = errors.New("cluster: peer stream frame over the size limit")
)

// streamFrame is one decoded frame; meta and payload are views of the
// bytes it was parsed from.
type streamFrame struct {
	version byte
	kind    byte
	id      uint64
	meta    []byte // nil without frameHasMeta
	payload []byte
}

// appendFrame appends one frame to b.
func appendFrame(b []byte, kind byte, id uint64, meta, payload []byte) []byte {
	n := 3 + protowire.SizeVarint(id) + len(payload)
	var flags byte
	if meta != nil {
		flags |= frameHasMeta
		n += protowire.SizeBytes(len(meta))
	}
	b = binary.BigEndian.AppendUint32(b, uint32(n))
	b = append(b, StreamVersion, kind, flags)
	b = protowire.AppendVarint(b, id)
	if meta != nil {
		b = protowire.AppendBytes(b, meta)
	}
	return append(b, payload...)
}

// appendFrameHeader appends the header of a frame without meta whose
// payload, payloadLen bytes, the caller appends next.
func appendFrameHeader(b []byte, kind byte, id uint64, payloadLen int) []byte {
	b = binary.BigEndian.AppendUint32(b, uint32(3+protowire.SizeVarint(id)+payloadLen))
	b = append(b, StreamVersion, kind, 0)
	return protowire.AppendVarint(b, id)
}

// parseFrame decodes a frame's body (what follows its length field).
func parseFrame(b []byte) (streamFrame, error) {
	var f streamFrame
	if len(b) < 3 {
		return f, fmt.Errorf("%w: %d bytes", errFrameMalformed, len(b))
	}
	f.version, f.kind = b[0], b[1]
	if f.version != StreamVersion {
		return f, fmt.Errorf("%w: %d (this node speaks %d)", errFrameVersion, f.version, StreamVersion)
	}
	flags := b[2]
	if flags&^frameHasMeta != 0 {
		return f, fmt.Errorf("%w: unknown flags %#x", errFrameMalformed, flags)
	}
	if f.kind != frameAsk && f.kind != frameAnswer {
		return f, fmt.Errorf("%w: unknown kind %d", errFrameMalformed, f.kind)
	}
	b = b[3:]
	id, n := protowire.ConsumeVarint(b)
	if n < 0 {
		return f, fmt.Errorf("%w: request id", errFrameMalformed)
	}
	f.id, b = id, b[n:]
	if flags&frameHasMeta != 0 {
		m, n := protowire.ConsumeBytes(b)
		if n < 0 {
			return f, fmt.Errorf("%w: metadata", errFrameMalformed)
		}
		f.meta, b = m, b[n:]
		if f.meta == nil {
			f.meta = []byte{}
		}
	}
	f.payload = b
	return f, nil
}

// frameReader reads frames from a buffered stream. A frame that fits the
// reader's buffer is parsed in place (its views stay valid until the
// next read that has to fill the buffer: see buffered); a larger one is
// read into scratch.
type frameReader struct {
	br      *bufio.Reader
	scratch []byte
}

// next reads one frame, waiting for it.
func (r *frameReader) next() (streamFrame, error) {
	hdr, err := r.br.Peek(4)
	if err != nil {
		return streamFrame{}, err
	}
	n := int(binary.BigEndian.Uint32(hdr))
	if n > maxStreamFrame {
		return streamFrame{}, fmt.Errorf("%w: %d bytes", errFrameTooLarge, n)
	}
	if 4+n <= r.br.Size() {
		b, err := r.br.Peek(4 + n)
		if err != nil {
			return streamFrame{}, unexpectedEOF(err)
		}
		f, err := parseFrame(b[4:])
		_, _ = r.br.Discard(4 + n)
		return f, err
	}
	_, _ = r.br.Discard(4)
	if cap(r.scratch) < n {
		r.scratch = make([]byte, n)
	}
	r.scratch = r.scratch[:n]
	if _, err := io.ReadFull(r.br, r.scratch); err != nil {
		return streamFrame{}, unexpectedEOF(err)
	}
	return parseFrame(r.scratch)
}

// buffered reports whether a whole frame that fits the buffer is already
// buffered: reading it then moves no bytes, so the views of the frames
// read since the last wait stay valid. (A frame larger than the buffer
// is never reported: it is read into scratch, which the next such frame
// reuses.)
func (r *frameReader) buffered() bool {
	if r.br.Buffered() < 4 {
		return false
	}
	hdr, _ := r.br.Peek(4)
	n := int(binary.BigEndian.Uint32(hdr))
	return n <= maxStreamFrame && 4+n <= r.br.Buffered()
}

func unexpectedEOF(err error) error {
	if err == io.EOF {
		return io.ErrUnexpectedEOF
	}
	return err
}
