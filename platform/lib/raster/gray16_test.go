package raster

import (
	"bytes"
	"compress/zlib"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"image"
	"image/draw"
	"image/png"
	"math/rand"
	"testing"
)

// png16 encodes random 16-bit pixels of colour type ct by hand, with a
// random filter on every row, Adam7 interlacing when interlaced, and a
// tRNS key (the first pixel's colour) when key.
func png16(r *rand.Rand, w, h, ct int, interlaced, key bool) []byte {
	ch := map[int]int{0: 1, 2: 3, 4: 2, 6: 4}[ct]
	bpp := 2 * ch
	pix := make([]byte, w*h*bpp)
	r.Read(pix)
	for i := 0; i < len(pix); i += bpp * 3 { // some alpha extremes and repeats
		if ct == 4 || ct == 6 {
			pix[i+bpp-2], pix[i+bpp-1] = 0xff, 0xff
		}
		if key && i+2*bpp <= len(pix) {
			copy(pix[i:i+bpp], pix[:bpp])
		}
	}
	var out bytes.Buffer
	out.WriteString("\x89PNG\r\n\x1a\n")
	chunk := func(typ string, data []byte) {
		c := binary.BigEndian.AppendUint32(nil, uint32(len(data)))
		c = append(append(c, typ...), data...)
		out.Write(binary.BigEndian.AppendUint32(c, crc32.ChecksumIEEE(c[4:])))
	}
	ihdr := binary.BigEndian.AppendUint32(binary.BigEndian.AppendUint32(nil, uint32(w)), uint32(h))
	il := byte(0)
	if interlaced {
		il = 1
	}
	chunk("IHDR", append(ihdr, 16, byte(ct), 0, 0, il))
	if key {
		chunk("tRNS", append([]byte(nil), pix[:bpp]...))
	}
	var z bytes.Buffer
	zw := zlib.NewWriter(&z)
	passes := []adam7{{0, 0, 1, 1}}
	if interlaced {
		passes = adam7Passes[:]
	}
	for _, ps := range passes {
		pw := (w - ps.x + ps.dx - 1) / ps.dx
		ph := (h - ps.y + ps.dy - 1) / ps.dy
		if pw <= 0 || ph <= 0 {
			continue
		}
		prev := make([]byte, pw*bpp)
		for row := 0; row < ph; row++ {
			cur := make([]byte, pw*bpp)
			y := ps.y + row*ps.dy
			for x := 0; x < pw; x++ {
				o := (y*w + ps.x + x*ps.dx) * bpp
				copy(cur[x*bpp:], pix[o:o+bpp])
			}
			f := byte(r.Intn(5))
			enc := make([]byte, len(cur))
			for i := range cur {
				var a, c int
				if i >= bpp {
					a, c = int(cur[i-bpp]), int(prev[i-bpp])
				}
				b := int(prev[i])
				switch f {
				case 0:
					enc[i] = cur[i]
				case 1:
					enc[i] = cur[i] - byte(a)
				case 2:
					enc[i] = cur[i] - byte(b)
				case 3:
					enc[i] = cur[i] - byte((a+b)/2)
				case 4:
					enc[i] = cur[i] - paeth(a, b, c)
				}
			}
			zw.Write(append([]byte{f}, enc...))
			prev = cur
		}
	}
	zw.Close()
	zb := z.Bytes()
	chunk("IDAT", zb[:len(zb)/2]) // two IDAT chunks
	chunk("IDAT", zb[len(zb)/2:])
	chunk("IEND", nil)
	return out.Bytes()
}

// TestDecodeGray16MatchesTheStandardDecoder: for every 16-bit colour
// type, with and without a transparency key and interlacing, the streamed
// grey equals drawing png.Decode's image into an *image.Gray.
func TestDecodeGray16MatchesTheStandardDecoder(t *testing.T) {
	r := rand.New(rand.NewSource(24))
	l := Limits{MaxBytes: 1 << 20, MaxSide: 1000, MaxPixels: 1 << 20, MinSide: 1}
	for _, ct := range []int{0, 2, 4, 6} {
		for _, interlaced := range []bool{false, true} {
			for _, key := range []bool{false, true} {
				if key && (ct == 4 || ct == 6) {
					continue // tRNS is not allowed with an alpha channel
				}
				for _, sz := range [][2]int{{1, 1}, {3, 5}, {9, 17}, {37, 23}} {
					b := png16(r, sz[0], sz[1], ct, interlaced, key)
					in, err := Inspect(b, l)
					if err != nil {
						t.Fatal(err)
					}
					got, err := DecodeGray16(b, in)
					if err != nil {
						t.Fatalf("type %d interlaced %v key %v %v: %v", ct, interlaced, key, sz, err)
					}
					std, err := png.Decode(bytes.NewReader(b))
					if err != nil {
						t.Fatalf("png.Decode of the test file: %v", err)
					}
					want := image.NewGray(std.Bounds())
					draw.Draw(want, want.Rect, std, image.Point{}, draw.Src)
					if !bytes.Equal(got.Pix, want.Pix) {
						t.Fatalf("type %d interlaced %v key %v %v: grey differs from the standard decoder's", ct, interlaced, key, sz)
					}
				}
			}
		}
	}
}

func TestDecodeGray16Refusals(t *testing.T) {
	r := rand.New(rand.NewSource(1))
	l := Limits{MaxBytes: 1 << 20, MaxSide: 1000, MaxPixels: 1 << 20, MinSide: 1}
	good := png16(r, 20, 10, 6, false, false)
	in, _ := Inspect(good, l)
	badCRC := append([]byte(nil), good...)
	badCRC[len(badCRC)-20] ^= 1 // inside the last IDAT
	for _, tc := range []struct {
		name string
		b    []byte
		in   Info
	}{
		{"an 8-bit PNG", pngOf(t, 20, 10), Info{Format: "png", BitDepth: 8, PNGColor: 0, Width: 20, Height: 10}},
		{"truncated pixel data", good[:len(good)-30], in},
		{"a corrupted chunk", badCRC, in},
		{"no IDAT", good[:33], in},
	} {
		_, err := DecodeGray16(tc.b, tc.in)
		var e *Error
		if !errors.As(err, &e) || e.Problem != Malformed {
			t.Errorf("%s: %v, want Malformed", tc.name, err)
		}
	}
}

// TestDecodedBytes: the decoder's bytes per pixel follow depth and
// channels, read from the header.
func TestDecodedBytes(t *testing.T) {
	l := Limits{MaxBytes: 1 << 20, MaxSide: 1000, MaxPixels: 1 << 20, MinSide: 1}
	r := rand.New(rand.NewSource(2))
	for _, tc := range []struct {
		name string
		b    []byte
		want int64
	}{
		{"8-bit grey PNG", pngOf(t, 40, 10), 400},
		{"16-bit RGBA PNG", png16(r, 40, 10, 6, false, false), 3200},
		{"16-bit grey PNG (NRGBA64 with a key)", png16(r, 40, 10, 0, false, true), 3200},
		{"16-bit interlaced RGB PNG (passes, then merged)", png16(r, 40, 10, 2, true, false), 6400},
	} {
		in, err := Inspect(tc.b, l)
		if err != nil {
			t.Fatal(err)
		}
		if got := in.DecodedBytes(); got != tc.want {
			t.Errorf("%s: %d decoded bytes, want %d", tc.name, got, tc.want)
		}
	}
}

// FuzzDecodeGray16: no input panics; what decodes has the header's size.
func FuzzDecodeGray16(f *testing.F) {
	r := rand.New(rand.NewSource(3))
	for _, ct := range []int{0, 2, 4, 6} {
		f.Add(png16(r, 7, 5, ct, false, ct < 4))
		f.Add(png16(r, 9, 3, ct, true, false))
	}
	l := Limits{MaxBytes: 1 << 20, MaxSide: 512, MaxPixels: 1 << 16, MinSide: 1}
	f.Fuzz(func(t *testing.T, b []byte) {
		in, err := Inspect(b, l)
		if err != nil || in.Format != "png" || in.BitDepth != 16 {
			return
		}
		g, err := DecodeGray16(b, in)
		if err == nil && (g.Rect.Dx() != in.Width || g.Rect.Dy() != in.Height) {
			t.Fatalf("decoded %v for a %d×%d header", g.Rect, in.Width, in.Height)
		}
	})
}
