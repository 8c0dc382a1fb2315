package branding

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"image"
	"image/jpeg"
	"image/png"

	"golang.org/x/image/draw"
	"golang.org/x/image/webp"

	"github.com/trustd/trustd/catalog"
	"github.com/trustd/trustd/errcode"
)

// Limits of an uploaded logo, checked before its pixels are decoded (so a
// decompression bomb costs a header read).
const (
	MaxUploadBytes = 2 << 20 // the uploaded file
	MaxSide        = 4096    // pixels, either side
	MaxPixels      = 8 << 20 // width × height
	MinSide        = 16      // pixels, the shorter side
)

// Sizes are the renditions stored and served: the longer side in pixels,
// the other scaled to keep the aspect ratio.
var Sizes = []int{64, 256}

// DefaultSize is the rendition served without ?size=.
const DefaultSize = 256

// Formats are the accepted upload encodings.
var Formats = []string{"png", "jpeg", "webp"}

// Errors of a logo upload.
var (
	ErrLogoMissing   = errcode.New("branding-logo-missing", errcode.Invalid, "the logo image is empty")
	ErrLogoFormat    = errcode.New("branding-logo-format", errcode.Unsupported, "the logo is not a PNG, JPEG or WebP raster image (SVG, GIF and other formats are refused)")
	ErrLogoAnimated  = errcode.New("branding-logo-animated", errcode.Unsupported, "animated PNG or WebP logos are refused")
	ErrLogoMalformed = errcode.New("branding-logo-malformed", errcode.Invalid, "the logo could not be decoded")
	ErrLogoTooLarge  = errcode.New("branding-logo-too-large", errcode.TooLarge, "the logo is over 2 MiB, 4096 pixels a side or 8 Mpx, or its normalised PNGs exceed the stored limit")
	ErrLogoTooSmall  = errcode.New("branding-logo-too-small", errcode.Invalid, "the logo's shorter side is under 16 pixels")
	errEncode        = errcode.New("internal-error", errcode.Internal, "the logo could not be re-encoded")
)

// sniff names the format from the magic bytes: "" when unknown.
func sniff(b []byte) string {
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

// NormalizeLogo decodes an uploaded logo and returns its PNG renditions
// (one per Sizes entry) and their version (a strong validator). Only the
// decoded pixels reach the output: every chunk, EXIF block, ICC profile
// and comment of the upload is dropped by the re-encoding.
func NormalizeLogo(b []byte) ([]catalog.BrandingLogo, string, error) {
	img, err := decode(b)
	if err != nil {
		return nil, "", err
	}
	var out []catalog.BrandingLogo
	sum := sha256.New()
	total := 0
	for _, size := range Sizes {
		p, err := render(img, size)
		if err != nil {
			return nil, "", err
		}
		total += len(p)
		out = append(out, catalog.BrandingLogo{Size: size, PNG: p})
		var n [8]byte
		binary.BigEndian.PutUint64(n[:], uint64(len(p)))
		sum.Write(n[:])
		sum.Write(p)
	}
	if total > catalog.MaxBrandingLogoBytes {
		return nil, "", ErrLogoTooLarge.With("the normalised logo is %d bytes; the limit is %d (a simpler image compresses better)", total, catalog.MaxBrandingLogoBytes)
	}
	return out, hex.EncodeToString(sum.Sum(nil)[:16]), nil
}

func decode(b []byte) (image.Image, error) {
	if len(b) == 0 {
		return nil, ErrLogoMissing
	}
	if len(b) > MaxUploadBytes {
		return nil, ErrLogoTooLarge.With("the logo is %d bytes; the limit is %d", len(b), MaxUploadBytes)
	}
	format := sniff(b)
	switch format {
	case "jpeg", "png", "webp":
	case "gif":
		return nil, ErrLogoFormat.With("GIF is refused; send PNG, JPEG or WebP")
	default:
		return nil, ErrLogoFormat
	}
	if format == "png" && pngAnimated(b) {
		return nil, ErrLogoAnimated.With("animated PNG (acTL chunk)")
	}
	if format == "webp" && webpAnimated(b) {
		return nil, ErrLogoAnimated.With("animated WebP")
	}
	var cfg image.Config
	var err error
	switch format {
	case "jpeg":
		cfg, err = jpeg.DecodeConfig(bytes.NewReader(b))
	case "png":
		cfg, err = png.DecodeConfig(bytes.NewReader(b))
	case "webp":
		cfg, err = webp.DecodeConfig(bytes.NewReader(b))
	}
	if err != nil {
		return nil, ErrLogoMalformed.With("%s header: %v", format, err)
	}
	if cfg.Width > MaxSide || cfg.Height > MaxSide || cfg.Width*cfg.Height > MaxPixels {
		return nil, ErrLogoTooLarge.With("%d×%d pixels; the limits are %d a side and %d pixels", cfg.Width, cfg.Height, MaxSide, MaxPixels)
	}
	if min(cfg.Width, cfg.Height) < MinSide {
		return nil, ErrLogoTooSmall.With("%d×%d pixels; the shorter side must be at least %d", cfg.Width, cfg.Height, MinSide)
	}
	var img image.Image
	switch format {
	case "jpeg":
		img, err = jpeg.Decode(bytes.NewReader(b))
	case "png":
		img, err = png.Decode(bytes.NewReader(b))
	case "webp":
		img, err = webp.Decode(bytes.NewReader(b))
	}
	if err != nil {
		return nil, ErrLogoMalformed.With("%s: %v", format, err)
	}
	if r := img.Bounds(); r.Dx() != cfg.Width || r.Dy() != cfg.Height {
		return nil, ErrLogoMalformed.With("the decoded size differs from the header")
	}
	return img, nil
}

// render scales img so its longer side is size (keeping the aspect
// ratio) and encodes it as a non-interlaced 8-bit RGBA PNG with no
// ancillary chunks.
func render(img image.Image, size int) ([]byte, error) {
	b := img.Bounds()
	w, h := size, size
	if b.Dx() >= b.Dy() {
		h = max(1, (b.Dy()*size+b.Dx()/2)/b.Dx())
	} else {
		w = max(1, (b.Dx()*size+b.Dy()/2)/b.Dy())
	}
	dst := image.NewNRGBA(image.Rect(0, 0, w, h))
	draw.CatmullRom.Scale(dst, dst.Rect, img, b, draw.Src, nil)
	var buf bytes.Buffer
	enc := png.Encoder{CompressionLevel: png.BestCompression}
	if err := enc.Encode(&buf, dst); err != nil {
		return nil, errEncode.With("png: %v", err)
	}
	return buf.Bytes(), nil
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
