package raster

import (
	"bytes"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"image"
	"image/png"
	"testing"

	"github.com/trustd/trustd/platform/errcode"
)

func pngOf(t *testing.T, w, h int) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := png.Encode(&b, image.NewGray(image.Rect(0, 0, w, h))); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// withChunkAfterIHDR inserts a chunk of type typ after the IHDR chunk.
func withChunkAfterIHDR(p []byte, typ string, data []byte) []byte {
	c := make([]byte, 8, 12+len(data))
	binary.BigEndian.PutUint32(c, uint32(len(data)))
	copy(c[4:], typ)
	c = append(c, data...)
	c = binary.BigEndian.AppendUint32(c, crc32.ChecksumIEEE(c[4:]))
	at := 8 + 25 // signature + IHDR (4 length, 4 type, 13 data, 4 crc)
	return append(append(append([]byte(nil), p[:at]...), c...), p[at:]...)
}

// bomb is a PNG header declaring w×h pixels with no pixel data.
func bomb(w, h uint32) []byte {
	ihdr := make([]byte, 13)
	binary.BigEndian.PutUint32(ihdr, w)
	binary.BigEndian.PutUint32(ihdr[4:], h)
	ihdr[8], ihdr[9] = 8, 0
	c := append(binary.BigEndian.AppendUint32(nil, 13), "IHDR"...)
	c = append(c, ihdr...)
	c = binary.BigEndian.AppendUint32(c, crc32.ChecksumIEEE(c[4:]))
	return append([]byte("\x89PNG\r\n\x1a\n"), c...)
}

func TestDecode(t *testing.T) {
	l := Limits{MaxBytes: 1 << 20, MaxSide: 1000, MaxPixels: 500_000, MinSide: 16}
	cases := []struct {
		name string
		in   []byte
		want Problem // 0: decodes
	}{
		{"a PNG", pngOf(t, 64, 32), 0},
		{"empty", nil, Missing},
		{"over the byte limit", make([]byte, 1<<20+1), TooLarge},
		{"GIF", []byte("GIF89a......"), Format},
		{"SVG", []byte("<svg xmlns='http://www.w3.org/2000/svg'/>"), Format},
		{"APNG", withChunkAfterIHDR(pngOf(t, 64, 32), "acTL", make([]byte, 8)), Animated},
		{"a decompression bomb's header", bomb(100000, 100000), TooLarge},
		{"over the pixel count", bomb(999, 999), TooLarge},
		{"too small", pngOf(t, 64, 8), TooSmall},
		{"truncated", pngOf(t, 64, 32)[:60], Malformed},
	}
	for _, c := range cases {
		img, _, err := Decode(c.in, l)
		var e *Error
		switch {
		case c.want == 0 && (err != nil || img == nil):
			t.Errorf("%s: %v", c.name, err)
		case c.want != 0 && (!errors.As(err, &e) || e.Problem != c.want):
			t.Errorf("%s: %v, want problem %d", c.name, err, c.want)
		}
	}
}

func TestCodesAs(t *testing.T) {
	missing := errcode.New("m", errcode.Invalid, "missing")
	bad := errcode.New("b", errcode.Invalid, "bad")
	codes := Codes{Missing: missing, Malformed: bad}
	if codes.As(nil) != nil {
		t.Fatal("nil became an error")
	}
	if err := codes.As(&Error{Problem: Missing, Detail: "x"}); err != missing {
		t.Fatalf("missing: %v", err)
	}
	// A problem without its own code falls back to Malformed's, with the detail.
	err := codes.As(&Error{Problem: Animated, Detail: "animated PNG"})
	if !errors.Is(err, bad) || err.Error() != "b: animated PNG" {
		t.Fatalf("fallback: %v", err)
	}
}
