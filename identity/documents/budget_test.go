package documents

import (
	"bytes"
	"compress/zlib"
	"context"
	"encoding/base64"
	"encoding/binary"
	"hash/crc32"
	"image"
	"image/png"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/trustd/trustd/platform/errcode"
)

// uniformPNG16 writes a 16-bit PNG of w×h pixels of colour type ct (0
// grey, 2 RGB, 4 grey+alpha, 6 RGBA) by hand, one row at a time, so the
// test never holds the decoded image: every row is the same mid grey with
// a dark band in the middle, as a mostly uniform scan. 8000×3145 RGBA is
// ~260 KB here (zlib BestSpeed, to keep the test fast; the file
// was 195 KB).
func uniformPNG16(t testing.TB, w, h, ct int) []byte {
	t.Helper()
	ch := map[int]int{0: 1, 2: 3, 4: 2, 6: 4}[ct]
	var out bytes.Buffer
	out.WriteString("\x89PNG\r\n\x1a\n")
	chunk := func(typ string, data []byte) {
		c := binary.BigEndian.AppendUint32(nil, uint32(len(data)))
		c = append(append(c, typ...), data...)
		c = binary.BigEndian.AppendUint32(c, crc32.ChecksumIEEE(c[4:]))
		out.Write(c)
	}
	ihdr := binary.BigEndian.AppendUint32(nil, uint32(w))
	ihdr = binary.BigEndian.AppendUint32(ihdr, uint32(h))
	chunk("IHDR", append(ihdr, 16, byte(ct), 0, 0, 0))
	var z bytes.Buffer
	zw, _ := zlib.NewWriterLevel(&z, zlib.BestSpeed)
	row := make([]byte, 1+w*2*ch)
	up := make([]byte, len(row)) // filter Up, no change: a row like the one above
	up[0] = 2
	last := byte(0)
	for y := 0; y < h; y++ {
		v := byte(0x80)
		if y > h/2-20 && y < h/2+20 {
			v = 0x10
		}
		if v == last {
			if _, err := zw.Write(up); err != nil {
				t.Fatal(err)
			}
			continue
		}
		last = v
		for i := 1; i < len(row); i++ {
			row[i] = v
		}
		if ct == 4 || ct == 6 {
			for x := 0; x < w; x++ { // opaque
				o := 1 + x*2*ch + 2*(ch-1)
				row[o], row[o+1] = 0xff, 0xff
			}
		}
		if _, err := zw.Write(row); err != nil {
			t.Fatal(err)
		}
	}
	_ = zw.Close()
	chunk("IDAT", z.Bytes())
	chunk("IEND", nil)
	return out.Bytes()
}

// allocated is the bytes allocated while f runs (an upper bound of its
// peak): runtime.MemStats.TotalAlloc around the call.
func allocated(f func()) uint64 {
	var a, b runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&a)
	f()
	runtime.ReadMemStats(&b)
	return b.TotalAlloc - a.TotalAlloc
}

// TestSixteenBitPNGDecodesAtEightBits is issue 24 item 5: a 195 KB 16-bit
// RGBA PNG of 8000×3145 (inside the pixel limits) made png.Decode allocate
// 201 MB (8 bytes a pixel) and the grey conversion walk it pixel by pixel.
// It is now decoded straight to 8-bit grey: what it allocates is the grey
// image (25 MB) and a few rows, measured with runtime.MemStats.
func TestSixteenBitPNGDecodesAtEightBits(t *testing.T) {
	b := uniformPNG16(t, 8000, 3145, 6)
	if len(b) > 320<<10 {
		t.Fatalf("the test file is %d bytes, want ~200–270 KB", len(b))
	}
	var err error
	var w, h int
	var mid, top uint8
	got := allocated(func() {
		img, e := DecodeImage(b)
		err = e
		if e == nil {
			w, h = img.Rect.Dx(), img.Rect.Dy()
			top, mid = img.Pix[0], img.Pix[img.PixOffset(10, 3145/2)]
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	if w != 8000 || h != 3145 || top != 0x80 || mid != 0x10 {
		t.Fatalf("decoded %d×%d, grey %#x and %#x", w, h, top, mid)
	}
	limit := uint64(8000*3145) + 8<<20 // the grey image plus 8 MiB
	t.Logf("decoding the %d-byte 16-bit RGBA PNG allocated %.1f MiB (limit %.1f)", len(b), float64(got)/(1<<20), float64(limit)/(1<<20))
	if got > limit {
		t.Fatalf("decoding allocated %d bytes, over %d: a 16-bit PNG still costs 8 bytes a pixel", got, limit)
	}
}

// gateOCR blocks every read until release is closed, so a test holds a
// screening (and its decode budget) open; it counts reads at once.
type gateOCR struct {
	release      chan struct{}
	mu           sync.Mutex
	now, maxSeen int
}

func (g *gateOCR) Read(ctx context.Context, _ *image.Gray) (string, error) {
	g.mu.Lock()
	g.now++
	g.maxSeen = max(g.maxSeen, g.now)
	g.mu.Unlock()
	defer func() { g.mu.Lock(); g.now--; g.mu.Unlock() }()
	select {
	case <-g.release:
	case <-ctx.Done():
	}
	return "", ErrOCRUnavailable
}

func passportPNG(t testing.TB, w, h int) string {
	t.Helper()
	g := image.NewGray(image.Rect(0, 0, w, h))
	for i := range g.Pix {
		g.Pix[i] = uint8(i * 7)
	}
	return base64.StdEncoding.EncodeToString(pngOf(g))
}

// TestDecodeBudgetRefusesWhenInUse: with a budget for one screening and
// no wait, of six concurrent screenings one runs and five are refused
// with screening-busy; the bytes held never pass the budget and are all
// given back.
func TestDecodeBudgetRefusesWhenInUse(t *testing.T) {
	img := passportPNG(t, 1000, 700)
	raw, _ := base64.StdEncoding.DecodeString(img)
	in, err := inspect(raw)
	if err != nil {
		t.Fatal(err)
	}
	cost := DecodeCost(in)
	ocr := &gateOCR{release: make(chan struct{})}
	s := NewScreener(ocr, 8).WithDecodeBudget(cost*3/2, 0)
	const n = 6
	errs := make(chan error, n)
	var wg sync.WaitGroup
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := s.Screen(context.Background(), Request{Country: "UTO", DocumentType: "passport", Front: img})
			errs <- err
		}()
	}
	var busy int
	for i := 0; i < n-1; i++ { // the refusals come while the one runner is held in OCR
		err := <-errs
		if code, msg, _ := errcode.From(err); code != ErrBusy || !strings.Contains(msg, "budget") {
			t.Fatalf("a concurrent screening over the budget: %v, want screening-busy", err)
		}
		busy++
	}
	close(ocr.release)
	wg.Wait()
	if err := <-errs; err != nil {
		t.Fatalf("the screening that had the budget: %v", err)
	}
	u := s.Budget()
	if busy != n-1 || u.Peak > u.Total || u.Peak != cost || u.Held != 0 {
		t.Fatalf("busy %d, budget %+v (one screening costs %d)", busy, u, cost)
	}
}

// TestDecodeBudgetWaits: with a wait, screenings over the budget queue
// for it instead of failing; never more than the budget is held.
func TestDecodeBudgetWaits(t *testing.T) {
	img := passportPNG(t, 1000, 700)
	raw, _ := base64.StdEncoding.DecodeString(img)
	in, _ := inspect(raw)
	cost := DecodeCost(in)
	ocr := &gateOCR{release: make(chan struct{})}
	close(ocr.release)
	s := NewScreener(ocr, 8).WithDecodeBudget(cost*3/2, time.Minute)
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	for i := 0; i < 4; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := s.Screen(context.Background(), Request{Country: "UTO", DocumentType: "passport", Front: img})
			errs <- err
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatalf("a screening that could wait for the budget: %v", err)
		}
	}
	if u := s.Budget(); u.Peak > u.Total || u.Held != 0 || ocr.maxSeen != 1 {
		t.Fatalf("budget %+v, screenings at once %d", u, ocr.maxSeen)
	}
}

// TestDecodeCostOverTheBudgetIsTooLarge: a screening that alone needs
// more than the whole budget is refused as image-too-large, with the
// numbers, before anything is decoded.
func TestDecodeCostOverTheBudgetIsTooLarge(t *testing.T) {
	img := passportPNG(t, 1000, 700)
	s := NewScreener(nil, 2).WithDecodeBudget(1<<20, time.Minute)
	_, err := s.Screen(context.Background(), Request{Country: "UTO", DocumentType: "passport", Front: img})
	if code, msg, _ := errcode.From(err); code != ErrImageTooLarge || !strings.Contains(msg, "decode budget is 1048576") {
		t.Fatalf("over the whole budget: %v", err)
	}
}

// TestSixteenBitPNGScreeningsAreBounded: the file priced from its
// header costs the grey image, not 8 bytes a pixel, and eight screenings
// of it in parallel (the issue measured a 972 MB peak) allocate about
// eight grey images.
func TestSixteenBitPNGScreeningsAreBounded(t *testing.T) {
	raw := uniformPNG16(t, 8000, 3145, 6)
	in, err := inspect(raw)
	if err != nil {
		t.Fatal(err)
	}
	if c, px := DecodeCost(in), int64(8000*3145); c > px+2<<20 || in.DecodedBytes() != 8*px {
		t.Fatalf("cost %d for %d pixels (the standard decoder's %d)", c, px, in.DecodedBytes())
	}
	img := base64.StdEncoding.EncodeToString(raw)
	s := NewScreener(nil, 2)
	var wg sync.WaitGroup
	got := allocated(func() {
		for i := 0; i < 8; i++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if _, err := s.Screen(context.Background(), Request{Country: "UTO", DocumentType: "passport", Front: img}); err != nil {
					t.Error(err)
				}
			}()
		}
		wg.Wait()
	})
	limit := uint64(raceAllocSlack * float64(8*(8000*3145+len(raw)+8<<20)))
	t.Logf("8 screenings of the 16-bit RGBA PNG allocated %.0f MiB (limit %.0f); budget %+v", float64(got)/(1<<20), float64(limit)/(1<<20), s.Budget())
	if got > limit {
		t.Fatalf("8 screenings allocated %d bytes, over %d", got, limit)
	}
}

// BenchmarkDecodeSixteenBitPNG decodes the file (8000×3145 16-bit
// RGBA) to grey; "std" is what it cost before (png.Decode, then draw into
// grey).
func BenchmarkDecodeSixteenBitPNG(b *testing.B) {
	raw := uniformPNG16(b, 8000, 3145, 6)
	b.Run("stream", func(b *testing.B) {
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			if _, err := DecodeImage(raw); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("std", func(b *testing.B) {
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			img, err := png.Decode(bytes.NewReader(raw))
			if err != nil {
				b.Fatal(err)
			}
			toGray(img)
		}
	})
}
