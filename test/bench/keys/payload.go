package keys

import "strconv"

// prebuiltLimit caps how many payloads are built ahead: beyond it a payload is
// assembled per request into the worker's own buffer, which is as cheap and
// keeps memory bounded for very large key spaces.
const prebuiltLimit = 1 << 16

// Builder appends the payload of key k to dst.
type Builder func(dst []byte, k int) []byte

// Template is a Builder for parts[0] + k + parts[1] + k + … + parts[len-1].
func Template(parts ...string) Builder {
	return func(dst []byte, k int) []byte {
		for i, part := range parts {
			if i > 0 {
				dst = strconv.AppendInt(dst, int64(k), 10)
			}
			dst = append(dst, part...)
		}
		return dst
	}
}

// Payloads yields the request payload of each key. For small key spaces every
// payload is built once up front; otherwise Get assembles it into a buffer
// the caller reuses, so neither path allocates per request.
type Payloads struct {
	build    Builder
	prebuilt [][]byte
}

// NewPayloads prepares the payloads of n keys.
func NewPayloads(n int, build Builder) *Payloads {
	p := &Payloads{build: build}
	if n <= prebuiltLimit {
		p.prebuilt = make([][]byte, n)
		for k := range n {
			p.prebuilt[k] = build(nil, k)
		}
	}
	return p
}

// Get returns the payload of key k; buf is scratch space owned by the caller
// and used only when the payload was not pre-built. The result must not be
// modified, and is valid until buf is next reused.
func (p *Payloads) Get(buf *[]byte, k int) []byte {
	if k < len(p.prebuilt) {
		return p.prebuilt[k]
	}
	*buf = p.build((*buf)[:0], k)
	return *buf
}
