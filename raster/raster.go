// Package raster decodes untrusted raster uploads (JPEG, PNG, WebP) for the
// modules that take images (document screening, branding logos): the
// format is named by its magic bytes, animation is refused, and the size
// limits are checked on the header before any pixel is decoded, so a
// decompression bomb costs a header read. Each module maps a Problem to
// its own documented error code.
package raster

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"image"
	"image/jpeg"
	"image/png"
	"io"

	"golang.org/x/image/webp"

	"github.com/trustd/trustd/errcode"
)

// Limits bound one upload.
type Limits struct {
	MaxBytes  int // the encoded file
	MaxSide   int // pixels, either side
	MaxPixels int // width × height
	MinSide   int // pixels, the shorter side
}

// Problem is why an upload was refused.
type Problem uint8

// The problems Decode reports.
const (
	Missing   Problem = iota + 1 // no bytes
	TooLarge                     // over MaxBytes, MaxSide or MaxPixels
	TooSmall                     // shorter side under MinSide
	Format                       // not JPEG, PNG or WebP (GIF included)
	Animated                     // APNG or animated WebP
	Malformed                    // the header or the pixels do not decode
)

// Error is a refused upload: the problem and a message for the caller
// (never image bytes).
type Error struct {
	Problem Problem
	Detail  string
}

func (e *Error) Error() string { return e.Detail }

func refuse(p Problem, format string, args ...any) *Error {
	return &Error{Problem: p, Detail: fmt.Sprintf(format, args...)}
}

// Codes names a module's error code for each problem; Malformed is also
// the code of any problem the module leaves out.
type Codes map[Problem]*errcode.Code

// As returns err (from Decode) as the module's domain error, with Decode's
// message attached; nil stays nil.
func (c Codes) As(err error) error {
	if err == nil {
		return nil
	}
	var e *Error
	if !errors.As(err, &e) {
		return c[Malformed]
	}
	code := c[e.Problem]
	if code == nil {
		code = c[Malformed]
	}
	if e.Problem == Missing {
		return code
	}
	return code.With("%s", e.Detail)
}

// Sniff names the format from the magic bytes: "jpeg", "png", "webp",
// "gif", or "" when unknown.
func Sniff(b []byte) string {
	switch {
	case len(b) >= 3 && b[0] == 0xFF && b[1] == 0xD8 && b[2] == 0xFF:
		return "jpeg"
	case len(b) >= 8 && string(b[:8]) == "\x89PNG\r\n\x1a\n":
		return "png"
	case len(b) >= 12 && string(b[:4]) == "RIFF" && string(b[8:12]) == "WEBP":
		return "webp"
	case len(b) >= 6 && (string(b[:6]) == "GIF87a" || string(b[:6]) == "GIF89a"):
		return "gif"
	}
	return ""
}

// Decode checks b against l and decodes it. It returns the image, its
// format, or an *Error.
func Decode(b []byte, l Limits) (image.Image, string, error) {
	if len(b) == 0 {
		return nil, "", refuse(Missing, "the image is empty")
	}
	if len(b) > l.MaxBytes {
		return nil, "", refuse(TooLarge, "the image is %d bytes; the limit is %d", len(b), l.MaxBytes)
	}
	format := Sniff(b)
	switch format {
	case "jpeg", "png", "webp":
	case "gif":
		return nil, "", refuse(Format, "GIF is not accepted; send JPEG, PNG or WebP")
	default:
		return nil, "", refuse(Format, "the image is not JPEG, PNG or WebP")
	}
	if format == "png" && pngAnimated(b) {
		return nil, "", refuse(Animated, "animated PNG (acTL chunk)")
	}
	if format == "webp" && webpAnimated(b) {
		return nil, "", refuse(Animated, "animated WebP (ANIM chunk or flag)")
	}
	dec := decoders[format]
	cfg, err := dec.config(bytes.NewReader(b))
	if err != nil {
		return nil, "", refuse(Malformed, "%s header: %v", format, err)
	}
	if cfg.Width > l.MaxSide || cfg.Height > l.MaxSide || cfg.Width*cfg.Height > l.MaxPixels {
		return nil, "", refuse(TooLarge, "%d×%d pixels; the limits are %d a side and %d pixels", cfg.Width, cfg.Height, l.MaxSide, l.MaxPixels)
	}
	if min(cfg.Width, cfg.Height) < l.MinSide {
		return nil, "", refuse(TooSmall, "%d×%d pixels; the shorter side must be at least %d", cfg.Width, cfg.Height, l.MinSide)
	}
	img, err := dec.image(bytes.NewReader(b))
	if err != nil {
		return nil, "", refuse(Malformed, "%s: %v", format, err)
	}
	if r := img.Bounds(); r.Dx() != cfg.Width || r.Dy() != cfg.Height {
		return nil, "", refuse(Malformed, "the decoded size differs from the header")
	}
	return img, format, nil
}

var decoders = map[string]struct {
	config func(io.Reader) (image.Config, error)
	image  func(io.Reader) (image.Image, error)
}{
	"jpeg": {jpeg.DecodeConfig, jpeg.Decode},
	"png":  {png.DecodeConfig, png.Decode},
	"webp": {webp.DecodeConfig, webp.Decode},
}

// pngAnimated reports an acTL chunk before the first IDAT (APNG).
func pngAnimated(b []byte) bool {
	p := 8
	for p+8 <= len(b) {
		n := int(binary.BigEndian.Uint32(b[p:]))
		typ := string(b[p+4 : p+8])
		if typ == "acTL" {
			return true
		}
		if typ == "IDAT" || n < 0 || n > len(b) {
			return false
		}
		p += 12 + n
	}
	return false
}

// webpAnimated reports a VP8X header with the animation flag or an ANIM chunk.
func webpAnimated(b []byte) bool {
	if len(b) >= 21 && string(b[12:16]) == "VP8X" && b[20]&0x02 != 0 {
		return true
	}
	return bytes.Contains(b[12:min(len(b), 4096)], []byte("ANIM"))
}
