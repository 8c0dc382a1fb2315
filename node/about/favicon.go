package about

import (
	"bytes"
	"encoding/binary"
	"image"
	"image/color"
	"image/png"
	"sync"

	"github.com/valyala/fasthttp"
)

// The icon browsers ask every origin for (/favicon.ico), so the console,
// the demo and the person pages do not log a 404 each: a 32×32 shield in
// the console's accent colour, drawn here and wrapped as an ICO holding
// one PNG (every current browser reads that form).

var favicon = sync.OnceValue(func() []byte {
	const n = 32
	img := image.NewNRGBA(image.Rect(0, 0, n, n))
	accent := color.NRGBA{R: 0x09, G: 0x69, B: 0xda, A: 0xff}
	for y := 3; y < n-2; y++ {
		// A shield: straight sides, then a point at the bottom.
		half := 12
		if y > 17 {
			half = 12 * (n - 2 - y) / (n - 2 - 17)
		}
		for x := n/2 - half; x < n/2+half; x++ {
			img.Set(x, y, accent)
		}
	}
	var p bytes.Buffer
	_ = png.Encode(&p, img)
	var ico bytes.Buffer
	// ICONDIR: reserved, type 1 (icon), one image; then its ICONDIRENTRY.
	_ = binary.Write(&ico, binary.LittleEndian, [3]uint16{0, 1, 1})
	ico.Write([]byte{n, n, 0, 0})
	_ = binary.Write(&ico, binary.LittleEndian, [2]uint16{1, 32})
	_ = binary.Write(&ico, binary.LittleEndian, [2]uint32{uint32(p.Len()), 6 + 16})
	ico.Write(p.Bytes())
	return ico.Bytes()
})

// serveFavicon answers /favicon.ico, the area's one page (outside the
// API: no route, no contract entry, no legacy-base headers).
func serveFavicon(ctx *fasthttp.RequestCtx) {
	if !ctx.IsGet() && !ctx.IsHead() {
		ctx.Response.Header.Set("Allow", "GET, HEAD")
		ctx.SetStatusCode(405)
		return
	}
	ctx.SetContentType("image/x-icon")
	ctx.Response.Header.Set("Cache-Control", "public, max-age=86400")
	ctx.SetBody(favicon())
}
