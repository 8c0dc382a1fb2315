package raster

import (
	"compress/zlib"
	"encoding/binary"
	"hash/crc32"
	"image"
	"io"
)

// A 16-bit PNG is the cheapest way to make a decoder allocate: png.Decode
// returns it as RGBA64/NRGBA64, 8 bytes a pixel, so 195 KB of mostly
// uniform 8000×3145 RGBA becomes 201 MB, and drawing that into grey walks
// every pixel through the generic path (seconds of CPU). DecodeGray16
// streams the rows instead: it inflates the IDAT data one row at a time,
// unfilters it against the previous row and writes each pixel's grey value
// straight into the result, so it holds the grey image plus two rows,
// whatever the depth. The grey value is exactly the one
// draw.Draw(*image.Gray, png.Decode(b), …, draw.Src) gives (a test compares
// them across colour types, transparency keys and interlacing).

// DecodeGray16 decodes a 16-bit PNG described by in (from Inspect) into
// 8-bit grey. Other PNGs, and other formats, are refused as Malformed:
// callers use Decode for them.
func DecodeGray16(b []byte, in Info) (*image.Gray, error) {
	if in.Format != "png" || in.BitDepth != 16 {
		return nil, refuse(Malformed, "DecodeGray16 takes 16-bit PNG only")
	}
	var channels int
	switch in.PNGColor {
	case 0:
		channels = 1
	case 2:
		channels = 3
	case 4:
		channels = 2
	case 6:
		channels = 4
	default:
		return nil, refuse(Malformed, "png: colour type %d at 16 bits", in.PNGColor)
	}
	idat := &idatReader{b: b, p: 8}
	// tRNS (a transparent colour key for grey and RGB) precedes IDAT.
	key, hasKey, err := idat.seek()
	if err != nil {
		return nil, err
	}
	if hasKey && len(key) < 2*channels {
		return nil, refuse(Malformed, "png: short tRNS chunk")
	}
	zr, err := zlib.NewReader(idat)
	if err != nil {
		return nil, refuse(Malformed, "png: %v", err)
	}
	defer zr.Close()
	bpp := 2 * channels
	out := image.NewGray(image.Rect(0, 0, in.Width, in.Height))
	rowMax := in.Width*bpp + 1
	cr, pr := make([]byte, rowMax), make([]byte, rowMax)
	passes := []adam7{{0, 0, 1, 1}}
	if in.Interlaced {
		passes = adam7Passes[:]
	}
	for _, ps := range passes {
		pw := (in.Width - ps.x + ps.dx - 1) / ps.dx
		ph := (in.Height - ps.y + ps.dy - 1) / ps.dy
		if pw <= 0 || ph <= 0 {
			continue
		}
		n := pw*bpp + 1
		clear(pr[:n])
		for row := 0; row < ph; row++ {
			if _, err := io.ReadFull(zr, cr[:n]); err != nil {
				return nil, refuse(Malformed, "png: pixel data: %v", err)
			}
			if !unfilter(cr[:n], pr[:n], bpp) {
				return nil, refuse(Malformed, "png: bad filter type %d", cr[0])
			}
			y := ps.y + row*ps.dy
			off := out.PixOffset(ps.x, y)
			px := cr[1:n]
			for x := 0; x < pw; x++ {
				out.Pix[off+x*ps.dx] = gray16(px[x*bpp:x*bpp+bpp], channels, key, hasKey)
			}
			pr, cr = cr, pr
		}
	}
	return out, nil
}

// gray16 is the 8-bit grey of one 16-bit pixel of c channels: its colour
// premultiplied by alpha (alpha 0 where it equals the tRNS key), then
// image/color's luma (the coefficients of color.GrayModel).
func gray16(p []byte, c int, key []byte, hasKey bool) uint8 {
	var r, g, b, a uint32
	switch c {
	case 1:
		r = uint32(p[0])<<8 | uint32(p[1])
		g, b, a = r, r, 0xffff
		if hasKey && p[0] == key[0] && p[1] == key[1] {
			a = 0
		}
	case 2:
		r = uint32(p[0])<<8 | uint32(p[1])
		g, b = r, r
		a = uint32(p[2])<<8 | uint32(p[3])
	case 3:
		r = uint32(p[0])<<8 | uint32(p[1])
		g = uint32(p[2])<<8 | uint32(p[3])
		b = uint32(p[4])<<8 | uint32(p[5])
		a = 0xffff
		if hasKey && string(p[:6]) == string(key[:6]) {
			a = 0
		}
	default:
		r = uint32(p[0])<<8 | uint32(p[1])
		g = uint32(p[2])<<8 | uint32(p[3])
		b = uint32(p[4])<<8 | uint32(p[5])
		a = uint32(p[6])<<8 | uint32(p[7])
	}
	if a != 0xffff {
		r, g, b = r*a/0xffff, g*a/0xffff, b*a/0xffff
	}
	return uint8((19595*r + 38470*g + 7471*b + 1<<15) >> 24)
}

// unfilter reverses the row's PNG filter in place (cr[0] is the filter
// type; pr is the previous row, zero for the first row of a pass).
func unfilter(cr, pr []byte, bpp int) bool {
	cdat, pdat := cr[1:], pr[1:]
	switch cr[0] {
	case 0:
	case 1:
		for i := bpp; i < len(cdat); i++ {
			cdat[i] += cdat[i-bpp]
		}
	case 2:
		for i, p := range pdat {
			cdat[i] += p
		}
	case 3:
		for i := 0; i < bpp; i++ {
			cdat[i] += pdat[i] / 2
		}
		for i := bpp; i < len(cdat); i++ {
			cdat[i] += uint8((int(cdat[i-bpp]) + int(pdat[i])) / 2)
		}
	case 4:
		for i := 0; i < len(cdat); i++ {
			var a, c int
			if i >= bpp {
				a, c = int(cdat[i-bpp]), int(pdat[i-bpp])
			}
			cdat[i] += paeth(a, int(pdat[i]), c)
		}
	default:
		return false
	}
	return true
}

func paeth(a, b, c int) uint8 {
	p := a + b - c
	pa, pb, pc := abs(p-a), abs(p-b), abs(p-c)
	switch {
	case pa <= pb && pa <= pc:
		return uint8(a)
	case pb <= pc:
		return uint8(b)
	}
	return uint8(c)
}

func abs(x int) int {
	if x < 0 {
		return -x
	}
	return x
}

// adam7 is one interlacing pass: its first pixel and its steps.
type adam7 struct{ x, y, dx, dy int }

var adam7Passes = [7]adam7{{0, 0, 8, 8}, {4, 0, 8, 8}, {0, 4, 4, 8}, {2, 0, 4, 4}, {0, 2, 2, 4}, {1, 0, 2, 2}, {0, 1, 1, 2}}

// idatReader reads the concatenated data of a PNG's IDAT chunks, checking
// each chunk's CRC, without copying them.
type idatReader struct {
	b    []byte
	p    int    // offset of the next chunk
	cur  []byte // unread data of the current IDAT chunk
	done bool
}

// seek walks the chunks up to the first IDAT and returns the tRNS data
// met on the way.
func (r *idatReader) seek() (trns []byte, ok bool, err error) {
	for {
		typ, data, err := r.chunk()
		if err != nil {
			return nil, false, err
		}
		switch typ {
		case "tRNS":
			trns, ok = data, true
		case "IDAT":
			r.cur = data
			return trns, ok, nil
		case "IEND":
			return nil, false, refuse(Malformed, "png: no pixel data")
		}
	}
}

func (r *idatReader) chunk() (string, []byte, error) {
	if r.p+12 > len(r.b) {
		return "", nil, refuse(Malformed, "png: truncated chunk")
	}
	n := binary.BigEndian.Uint32(r.b[r.p:])
	if uint64(n) > uint64(len(r.b)-r.p-12) {
		return "", nil, refuse(Malformed, "png: truncated chunk")
	}
	end := r.p + 8 + int(n)
	if crc32.ChecksumIEEE(r.b[r.p+4:end]) != binary.BigEndian.Uint32(r.b[end:]) {
		return "", nil, refuse(Malformed, "png: invalid checksum")
	}
	typ, data := string(r.b[r.p+4:r.p+8]), r.b[r.p+8:end]
	r.p = end + 4
	return typ, data, nil
}

func (r *idatReader) Read(p []byte) (int, error) {
	for len(r.cur) == 0 {
		if r.done {
			return 0, io.EOF
		}
		typ, data, err := r.chunk()
		if err != nil {
			return 0, err
		}
		if typ != "IDAT" {
			r.done = true
			return 0, io.EOF
		}
		r.cur = data
	}
	n := copy(p, r.cur)
	r.cur = r.cur[n:]
	return n, nil
}
