// Package resp speaks the Redis serialization protocol (RESP2) over one
// connection: it encodes commands as arrays of bulk strings and decodes
// replies. It owns the wire format only; it never retries, reconnects or
// pools, and its hot-path reader (ReadInts) allocates nothing.
package resp

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"time"
)

// ErrProtocol is returned for bytes that are not a well-formed RESP reply, or
// a reply of another shape than the caller asked for.
var ErrProtocol = errors.New("resp: protocol error")

// ReplyError is an error reply sent by the server ("-ERR …", "-NOSCRIPT …").
type ReplyError string

func (e ReplyError) Error() string { return "redis: " + string(e) }

// Type is a reply's RESP type byte.
type Type byte

// The RESP2 reply types.
const (
	SimpleString Type = '+'
	Error        Type = '-'
	Integer      Type = ':'
	BulkString   Type = '$'
	Array        Type = '*'
)

// Value is a decoded reply. Null bulk strings and null arrays have Null set.
type Value struct {
	Type  Type
	Str   string
	Int   int64
	Array []Value
	Null  bool
}

// AppendCommand appends args as a RESP array of bulk strings, the form every
// Redis command takes on the wire.
func AppendCommand(dst []byte, args ...string) []byte {
	dst = append(dst, '*')
	dst = strconv.AppendInt(dst, int64(len(args)), 10)
	dst = append(dst, '\r', '\n')
	for _, a := range args {
		dst = append(dst, '$')
		dst = strconv.AppendInt(dst, int64(len(a)), 10)
		dst = append(dst, '\r', '\n')
		dst = append(dst, a...)
		dst = append(dst, '\r', '\n')
	}
	return dst
}

// Reader decodes replies from a buffered stream.
type Reader struct {
	br *bufio.Reader
}

// NewReader returns a Reader on r.
func NewReader(r io.Reader) *Reader { return &Reader{br: bufio.NewReaderSize(r, 4096)} }

// line returns the next CRLF-terminated line without its terminator; the
// slice is valid until the next read.
func (r *Reader) line() ([]byte, error) {
	b, err := r.br.ReadSlice('\n')
	if err != nil {
		if errors.Is(err, bufio.ErrBufferFull) {
			return nil, fmt.Errorf("%w: line too long", ErrProtocol)
		}
		return nil, err
	}
	if len(b) < 3 || b[len(b)-2] != '\r' {
		return nil, fmt.Errorf("%w: malformed line %q", ErrProtocol, b)
	}
	return b[:len(b)-2], nil
}

// parseInt parses a decimal integer without allocating.
func parseInt(b []byte) (int64, error) {
	if len(b) == 0 {
		return 0, fmt.Errorf("%w: empty integer", ErrProtocol)
	}
	neg := b[0] == '-'
	if neg {
		b = b[1:]
		if len(b) == 0 {
			return 0, fmt.Errorf("%w: bad integer", ErrProtocol)
		}
	}
	var n int64
	for _, c := range b {
		if c < '0' || c > '9' || n > (1<<62)/10 {
			return 0, fmt.Errorf("%w: bad integer %q", ErrProtocol, b)
		}
		n = n*10 + int64(c-'0')
	}
	if neg {
		n = -n
	}
	return n, nil
}

// ReadValue reads one reply of any type. An error reply is returned as a
// Value of type Error, not as an error: the stream is still in sync.
func (r *Reader) ReadValue() (Value, error) {
	l, err := r.line()
	if err != nil {
		return Value{}, err
	}
	t, rest := Type(l[0]), l[1:]
	switch t {
	case SimpleString, Error:
		return Value{Type: t, Str: string(rest)}, nil
	case Integer:
		n, err := parseInt(rest)
		return Value{Type: t, Int: n}, err
	case BulkString:
		n, err := parseInt(rest)
		if err != nil {
			return Value{}, err
		}
		if n < 0 {
			return Value{Type: t, Null: true}, nil
		}
		buf := make([]byte, n+2)
		if _, err := io.ReadFull(r.br, buf); err != nil {
			return Value{}, err
		}
		if buf[n] != '\r' || buf[n+1] != '\n' {
			return Value{}, fmt.Errorf("%w: bulk string not terminated", ErrProtocol)
		}
		return Value{Type: t, Str: string(buf[:n])}, nil
	case Array:
		n, err := parseInt(rest)
		if err != nil {
			return Value{}, err
		}
		if n < 0 {
			return Value{Type: t, Null: true}, nil
		}
		v := Value{Type: t, Array: make([]Value, n)}
		for i := range v.Array {
			if v.Array[i], err = r.ReadValue(); err != nil {
				return Value{}, err
			}
		}
		return v, nil
	}
	return Value{}, fmt.Errorf("%w: unknown reply type %q", ErrProtocol, l[0])
}

// ReadInts reads a reply that must be an array of integers into dst[:0] and
// returns it. It is the hot path of a script that answers numbers, and
// allocates nothing unless the server sent an error reply (returned as a
// ReplyError).
func (r *Reader) ReadInts(dst []int64) ([]int64, error) {
	dst = dst[:0]
	l, err := r.line()
	if err != nil {
		return dst, err
	}
	switch Type(l[0]) {
	case Error:
		return dst, ReplyError(l[1:])
	case Array:
	default:
		return dst, fmt.Errorf("%w: want an array, got %q", ErrProtocol, l)
	}
	n, err := parseInt(l[1:])
	if err != nil {
		return dst, err
	}
	for range n {
		l, err := r.line()
		if err != nil {
			return dst, err
		}
		if Type(l[0]) != Integer {
			return dst, fmt.Errorf("%w: want an integer, got %q", ErrProtocol, l)
		}
		v, err := parseInt(l[1:])
		if err != nil {
			return dst, err
		}
		dst = append(dst, v)
	}
	return dst, nil
}

// Conn is one connection to a server, used by one goroutine at a time.
type Conn struct {
	nc      net.Conn
	r       *Reader
	timeout time.Duration
}

// Dial connects to addr; timeout bounds the dial and each round trip.
func Dial(addr string, timeout time.Duration) (*Conn, error) {
	nc, err := net.DialTimeout("tcp", addr, timeout)
	if err != nil {
		return nil, err
	}
	return &Conn{nc: nc, r: NewReader(nc), timeout: timeout}, nil
}

// Send writes an already encoded command (see AppendCommand) in one write.
func (c *Conn) Send(cmd []byte) error {
	if c.timeout > 0 {
		if err := c.nc.SetDeadline(time.Now().Add(c.timeout)); err != nil {
			return err
		}
	}
	_, err := c.nc.Write(cmd)
	return err
}

// Reader returns the connection's reply reader.
func (c *Conn) Reader() *Reader { return c.r }

// Do sends cmd and reads one reply of any shape; a server error reply is
// returned as a ReplyError.
func (c *Conn) Do(args ...string) (Value, error) {
	if err := c.Send(AppendCommand(nil, args...)); err != nil {
		return Value{}, err
	}
	v, err := c.r.ReadValue()
	if err == nil && v.Type == Error {
		return v, ReplyError(v.Str)
	}
	return v, err
}

// Close closes the connection.
func (c *Conn) Close() error { return c.nc.Close() }
