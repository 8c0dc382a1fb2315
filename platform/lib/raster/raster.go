// Package raster decodes untrusted raster uploads (JPEG, PNG, WebP) for the
// modules that take images (document screening, branding logos): the
// format is named by its magic bytes, animation is refused, and the size
// limits are checked on the header before any pixel is decoded, so a
// decompression bomb costs a header read. Inspect also says what decoding
// will allocate (Info.DecodedBytes, by depth and channels), so a caller can
// budget memory before decoding, and DecodeGray16 decodes a 16-bit PNG
// straight to 8-bit grey. Each module maps a Problem to its own documented
// error code.
package raster

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"image"
	"image/color"
	"image/jpeg"
	"image/png"
	"io"

	"golang.org/x/image/webp"

	"github.com/trustd/trustd/platform/errcode"
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

// Info is what an upload's header says, read before any pixel is decoded.
type Info struct {
	Format        string // "jpeg", "png" or "webp"
	Width, Height int
	// BitDepth is bits per channel (PNG: 1, 2, 4, 8 or 16; JPEG and WebP: 8).
	BitDepth int
	// PNGColor is the PNG colour type (0 grey, 2 RGB, 3 palette, 4 grey and
	// alpha, 6 RGBA); -1 for other formats.
	PNGColor int
	// Interlaced is a PNG with Adam7 interlacing.
	Interlaced bool
	// Model is the colour model the standard decoder will produce.
	Model color.Model
}

// DecodedBytes is what the standard decoder (Decode) allocates for the
// pixels of this upload: width × height × bytes per pixel of the image type
// it returns, which depends on the bit depth and the channels (a 16-bit
// RGBA PNG is 8 bytes a pixel; an 8-bit grey PNG 1). Interlaced PNGs are
// decoded pass by pass and then merged, so they count twice. Rounded up,
// never below the pixel count.
func (i Info) DecodedBytes() int64 {
	px := int64(i.Width) * int64(i.Height)
	var per int64 // eighths of a byte per pixel
	switch i.Format {
	case "png":
		per = 8 * pngBytesPerPixel(i.PNGColor, i.BitDepth)
		if i.Interlaced {
			per *= 2
		}
	case "jpeg":
		switch i.Model {
		case color.GrayModel:
			per = 8
		case color.CMYKModel:
			per = 32
		default: // YCbCr: 4:4:4 at most
			per = 24
		}
	case "webp":
		switch i.Model {
		case color.NRGBAModel: // lossless
			per = 32
		case color.NYCbCrAModel: // lossy with alpha, 4:2:0 plus alpha
			per = 20
		default: // lossy 4:2:0
			per = 12
		}
	default:
		per = 32
	}
	return (px*per + 7) / 8
}

// pngBytesPerPixel is the bytes a pixel of the image.Image type png.Decode
// returns for the colour type and depth: grey and palette 1 (2 at 16
// bits), otherwise NRGBA/RGBA 4 (8 at 16 bits). A tRNS chunk turns 16-bit
// grey into NRGBA64 (8); counting 16-bit grey as 8 covers it.
func pngBytesPerPixel(colorType, depth int) int64 {
	switch {
	case colorType == 3 || colorType == 0 && depth <= 8:
		return 1
	case depth == 16:
		return 8
	default:
		return 4
	}
}

// Inspect checks b against l on its header alone: bytes, format,
// animation, sides and pixel count. Decoding nothing, it costs a header
// read whatever the header claims.
func Inspect(b []byte, l Limits) (Info, error) {
	if len(b) == 0 {
		return Info{}, refuse(Missing, "the image is empty")
	}
	if len(b) > l.MaxBytes {
		return Info{}, refuse(TooLarge, "the image is %d bytes; the limit is %d", len(b), l.MaxBytes)
	}
	format := Sniff(b)
	switch format {
	case "jpeg", "png", "webp":
	case "gif":
		return Info{}, refuse(Format, "GIF is not accepted; send JPEG, PNG or WebP")
	default:
		return Info{}, refuse(Format, "the image is not JPEG, PNG or WebP")
	}
	if format == "png" && pngAnimated(b) {
		return Info{}, refuse(Animated, "animated PNG (acTL chunk)")
	}
	if format == "webp" && webpAnimated(b) {
		return Info{}, refuse(Animated, "animated WebP (ANIM chunk or flag)")
	}
	cfg, err := decoders[format].config(bytes.NewReader(b))
	if err != nil {
		return Info{}, refuse(Malformed, "%s header: %v", format, err)
	}
	if cfg.Width > l.MaxSide || cfg.Height > l.MaxSide || cfg.Width*cfg.Height > l.MaxPixels {
		return Info{}, refuse(TooLarge, "%d×%d pixels; the limits are %d a side and %d pixels", cfg.Width, cfg.Height, l.MaxSide, l.MaxPixels)
	}
	if min(cfg.Width, cfg.Height) < l.MinSide {
		return Info{}, refuse(TooSmall, "%d×%d pixels; the shorter side must be at least %d", cfg.Width, cfg.Height, l.MinSide)
	}
	in := Info{Format: format, Width: cfg.Width, Height: cfg.Height, BitDepth: 8, PNGColor: -1, Model: cfg.ColorModel}
	if format == "png" {
		// png.DecodeConfig has read a valid IHDR: depth, colour type and
		// interlace method are at fixed offsets after the signature.
		in.BitDepth, in.PNGColor, in.Interlaced = int(b[24]), int(b[25]), b[28] == 1
	}
	return in, nil
}

// Decode checks b against l and decodes it. It returns the image, its
// format, or an *Error.
func Decode(b []byte, l Limits) (image.Image, string, error) {
	in, err := Inspect(b, l)
	if err != nil {
		return nil, "", err
	}
	img, err := decoders[in.Format].image(bytes.NewReader(b))
	if err != nil {
		return nil, "", refuse(Malformed, "%s: %v", in.Format, err)
	}
	if r := img.Bounds(); r.Dx() != in.Width || r.Dy() != in.Height {
		return nil, "", refuse(Malformed, "the decoded size differs from the header")
	}
	return img, in.Format, nil
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
