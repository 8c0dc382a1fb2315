package branding

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"image"
	"image/png"

	"golang.org/x/image/draw"

	"github.com/trustd/trustd/platform/catalog"
	"github.com/trustd/trustd/platform/errcode"
	"github.com/trustd/trustd/platform/lib/raster"
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
	errEncode        = errcode.ErrInternal.Detail("the logo could not be re-encoded")
)

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
	img, _, err := raster.Decode(b, raster.Limits{MaxBytes: MaxUploadBytes, MaxSide: MaxSide, MaxPixels: MaxPixels, MinSide: MinSide})
	return img, logoCodes.As(err)
}

// logoCodes are this module's codes for a refused upload.
var logoCodes = raster.Codes{raster.Missing: ErrLogoMissing, raster.TooLarge: ErrLogoTooLarge, raster.TooSmall: ErrLogoTooSmall,
	raster.Format: ErrLogoFormat, raster.Animated: ErrLogoAnimated, raster.Malformed: ErrLogoMalformed}

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
