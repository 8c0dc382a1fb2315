package documents

import (
	"bytes"
	"encoding/binary"
	"image"
	"image/draw"
	"image/gif"
	"image/jpeg"
	"image/png"

	"golang.org/x/image/webp"
)

// Image limits, checked on the header before any pixel is decoded so a
// decompression bomb costs a header read.
const (
	MaxImageBytes  = 5 << 20  // decoded base64 bytes per image
	MaxImageSide   = 8000     // pixels, either side
	MaxImagePixels = 24 << 20 // width × height
	MinImageSide   = 320      // pixels, the short side
)

// Formats are the accepted encodings.
var Formats = []string{"jpeg", "png", "webp"}

// sniff names the format from the magic bytes; "" when unknown.
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

// DecodeImage checks the limits on the header, refuses animation, decodes
// and applies the JPEG EXIF orientation. The result is grey-scale, the only
// form the checks use.
func DecodeImage(b []byte) (*image.Gray, error) {
	if len(b) == 0 {
		return nil, ErrImageMissing
	}
	if len(b) > MaxImageBytes {
		return nil, ErrImageTooLarge.With("image is %d bytes; the limit is %d", len(b), MaxImageBytes)
	}
	format := sniff(b)
	switch format {
	case "jpeg", "png", "webp":
	case "gif":
		return nil, ErrImageFormat.With("GIF is not accepted; send JPEG, PNG or WebP")
	default:
		return nil, ErrImageFormat
	}
	if format == "png" && pngAnimated(b) {
		return nil, ErrImageAnimated.With("animated PNG (acTL chunk)")
	}
	if format == "webp" && webpAnimated(b) {
		return nil, ErrImageAnimated.With("animated WebP (ANIM chunk)")
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
		return nil, ErrImageMalformed.With("%s header: %v", format, err)
	}
	if cfg.Width > MaxImageSide || cfg.Height > MaxImageSide || cfg.Width*cfg.Height > MaxImagePixels {
		return nil, ErrImageTooLarge.With("%d×%d pixels; limits are %d per side and %d pixels", cfg.Width, cfg.Height, MaxImageSide, MaxImagePixels)
	}
	if min(cfg.Width, cfg.Height) < MinImageSide {
		return nil, ErrImageTooSmall.With("%d×%d pixels; the short side must be at least %d", cfg.Width, cfg.Height, MinImageSide)
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
		return nil, ErrImageMalformed.With("%s: %v", format, err)
	}
	g := toGray(img)
	if format == "jpeg" {
		g = orient(g, exifOrientation(b))
	}
	return g, nil
}

var _ = gif.Decode // GIF is sniffed only to name it in the refusal

func toGray(img image.Image) *image.Gray {
	if g, ok := img.(*image.Gray); ok && g.Rect.Min == (image.Point{}) {
		return g
	}
	b := img.Bounds()
	g := image.NewGray(image.Rect(0, 0, b.Dx(), b.Dy()))
	draw.Draw(g, g.Rect, img, b.Min, draw.Src)
	return g
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

// exifOrientation reads the Orientation tag (0x0112) of a JPEG's APP1 Exif
// segment; 1 (as stored) when absent or unreadable.
func exifOrientation(b []byte) int {
	p := 2
	for p+4 <= len(b) && b[p] == 0xFF {
		marker := b[p+1]
		if marker == 0xDA || marker == 0xD9 {
			break
		}
		n := int(binary.BigEndian.Uint16(b[p+2:]))
		if n < 2 || p+2+n > len(b) {
			break
		}
		seg := b[p+4 : p+2+n]
		if marker == 0xE1 && len(seg) > 14 && string(seg[:6]) == "Exif\x00\x00" {
			return tiffOrientation(seg[6:])
		}
		p += 2 + n
	}
	return 1
}

func tiffOrientation(t []byte) int {
	if len(t) < 8 {
		return 1
	}
	var bo binary.ByteOrder
	switch string(t[:2]) {
	case "II":
		bo = binary.LittleEndian
	case "MM":
		bo = binary.BigEndian
	default:
		return 1
	}
	off := int(bo.Uint32(t[4:]))
	if off < 8 || off+2 > len(t) {
		return 1
	}
	n := int(bo.Uint16(t[off:]))
	for i := 0; i < n; i++ {
		e := off + 2 + 12*i
		if e+12 > len(t) {
			return 1
		}
		if bo.Uint16(t[e:]) == 0x0112 {
			v := int(bo.Uint16(t[e+8:]))
			if v >= 1 && v <= 8 {
				return v
			}
			return 1
		}
	}
	return 1
}

// orient applies an EXIF orientation (1..8) so the image is upright.
func orient(g *image.Gray, o int) *image.Gray {
	if o <= 1 || o > 8 {
		return g
	}
	w, h := g.Rect.Dx(), g.Rect.Dy()
	ow, oh := w, h
	if o >= 5 {
		ow, oh = h, w
	}
	out := image.NewGray(image.Rect(0, 0, ow, oh))
	for y := 0; y < h; y++ {
		for x := 0; x < w; x++ {
			var nx, ny int
			switch o {
			case 2:
				nx, ny = w-1-x, y
			case 3:
				nx, ny = w-1-x, h-1-y
			case 4:
				nx, ny = x, h-1-y
			case 5:
				nx, ny = y, x
			case 6:
				nx, ny = h-1-y, x
			case 7:
				nx, ny = h-1-y, w-1-x
			case 8:
				nx, ny = y, w-1-x
			}
			out.Pix[ny*out.Stride+nx] = g.Pix[y*g.Stride+x]
		}
	}
	return out
}
