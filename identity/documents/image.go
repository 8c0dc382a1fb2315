package documents

import (
	"encoding/binary"
	"image"
	"image/draw"

	"github.com/trustd/trustd/platform/lib/raster"
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

// imageLimits are the header limits of one image.
var imageLimits = raster.Limits{MaxBytes: MaxImageBytes, MaxSide: MaxImageSide, MaxPixels: MaxImagePixels, MinSide: MinImageSide}

// inspect checks an image's limits on its header alone (no pixel decoded).
func inspect(b []byte) (raster.Info, error) {
	in, err := raster.Inspect(b, imageLimits)
	return in, imageCodes.As(err)
}

// DecodeImage checks the limits on the header, refuses animation, decodes
// and applies the JPEG EXIF orientation. The result is grey-scale, the only
// form the checks use. A 16-bit PNG is decoded straight to 8-bit grey
// (raster.DecodeGray16), so it costs what an 8-bit one does.
func DecodeImage(b []byte) (*image.Gray, error) {
	in, err := inspect(b)
	if err != nil {
		return nil, err
	}
	return decodeInspected(b, in)
}

func decodeInspected(b []byte, in raster.Info) (*image.Gray, error) {
	if in.Format == "png" && in.BitDepth == 16 {
		g, err := raster.DecodeGray16(b, in)
		return g, imageCodes.As(err)
	}
	img, format, err := raster.Decode(b, imageLimits)
	if err != nil {
		return nil, imageCodes.As(err)
	}
	g := toGray(img)
	if format == "jpeg" {
		g = orient(g, exifOrientation(b))
	}
	return g, nil
}

// DecodeCost is the memory, in bytes, that screening one image with header
// in holds at most, read from the header before decoding: the decoder's
// pixels (width × height × bytes per pixel by depth and channels,
// raster.Info.DecodedBytes; two rows for a 16-bit PNG, which is streamed
// to grey), the grey image (width × height; twice for JPEG, whose EXIF
// orientation makes a rotated copy) and the page normalised to the
// working width (1200 × the scaled height; a narrow tall image grows).
func DecodeCost(in raster.Info) int64 {
	w, h := int64(in.Width), int64(in.Height)
	var pixels int64
	if in.Format == "png" && in.BitDepth == 16 {
		pixels = 2 * (8*w + 1)
	} else {
		pixels = in.DecodedBytes()
	}
	grey := w * h
	if in.Format == "jpeg" {
		grey *= 2
	}
	var norm int64
	if w > 0 && w != WorkingWidth {
		norm = WorkingWidth * max((h*WorkingWidth+w/2)/w, 1)
	}
	return pixels + grey + norm
}

func toGray(img image.Image) *image.Gray {
	if g, ok := img.(*image.Gray); ok && g.Rect.Min == (image.Point{}) {
		return g
	}
	b := img.Bounds()
	g := image.NewGray(image.Rect(0, 0, b.Dx(), b.Dy()))
	draw.Draw(g, g.Rect, img, b.Min, draw.Src)
	return g
}

// imageCodes are this module's codes for a refused upload.
var imageCodes = raster.Codes{raster.Missing: ErrImageMissing, raster.TooLarge: ErrImageTooLarge, raster.TooSmall: ErrImageTooSmall,
	raster.Format: ErrImageFormat, raster.Animated: ErrImageAnimated, raster.Malformed: ErrImageMalformed}

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
