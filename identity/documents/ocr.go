package documents

import (
	"bytes"
	"context"
	"errors"
	"image"
	"image/png"
	"os/exec"
	"time"
)

// OCR reads the text of an image region. ErrOCRUnavailable and
// ErrOCRTimeout make the screening answer review, never verify.
type OCR interface {
	Read(ctx context.Context, img *image.Gray) (string, error)
}

var (
	ErrOCRUnavailable = errors.New("ocr engine not installed")
	ErrOCRTimeout     = errors.New("ocr timed out")
)

// Tesseract runs Debian's tesseract CLI (package tesseract-ocr) on the MRZ
// crop, piped through stdin and stdout: the image never touches the disk.
type Tesseract struct {
	Path    string        // default "tesseract" on PATH
	Timeout time.Duration // default 5 s
}

const mrzWhitelist = "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789<"

func (t Tesseract) Read(ctx context.Context, img *image.Gray) (string, error) {
	path := t.Path
	if path == "" {
		path = "tesseract"
	}
	bin, err := exec.LookPath(path)
	if err != nil {
		return "", ErrOCRUnavailable
	}
	to := t.Timeout
	if to <= 0 {
		to = 5 * time.Second
	}
	ctx, cancel := context.WithTimeout(ctx, to)
	defer cancel()
	var in bytes.Buffer
	if err := png.Encode(&in, img); err != nil {
		return "", err
	}
	cmd := exec.CommandContext(ctx, bin, "stdin", "stdout", "--psm", "6", "-l", "eng",
		"-c", "tessedit_char_whitelist="+mrzWhitelist, "-c", "load_system_dawg=0", "-c", "load_freq_dawg=0")
	cmd.Stdin = &in
	var out, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &stderr
	cmd.Env = []string{"OMP_THREAD_LIMIT=1"}
	err = cmd.Run()
	if ctx.Err() == context.DeadlineExceeded {
		return "", ErrOCRTimeout
	}
	if err != nil {
		return "", errors.New("tesseract failed: " + firstLine(stderr.String()))
	}
	return out.String(), nil
}

func firstLine(s string) string {
	if i := bytes.IndexByte([]byte(s), '\n'); i >= 0 {
		return s[:i]
	}
	return s
}

// mrzCrop cuts the band out of the normalised page and binarises it lightly
// (Otsu), which helps Tesseract on guilloche backgrounds.
func mrzCrop(n *image.Gray, band image.Rectangle) *image.Gray {
	band = band.Intersect(n.Rect)
	out := image.NewGray(image.Rect(0, 0, band.Dx(), band.Dy()))
	var hist [256]int
	for y := 0; y < band.Dy(); y++ {
		copy(out.Pix[y*out.Stride:y*out.Stride+band.Dx()], n.Pix[n.PixOffset(band.Min.X, band.Min.Y+y):])
	}
	for _, p := range out.Pix {
		hist[p]++
	}
	t := otsu(hist[:], len(out.Pix))
	for i, p := range out.Pix {
		if int(p) <= t {
			out.Pix[i] = 0
		} else {
			out.Pix[i] = 255
		}
	}
	return out
}

func otsu(hist []int, total int) int {
	var sum float64
	for i, h := range hist {
		sum += float64(i * h)
	}
	var sumB, wB float64
	best, bestT := 0.0, 127
	for t := 0; t < 256; t++ {
		wB += float64(hist[t])
		if wB == 0 {
			continue
		}
		wF := float64(total) - wB
		if wF == 0 {
			break
		}
		sumB += float64(t * hist[t])
		mB, mF := sumB/wB, (sum-sumB)/wF
		v := wB * wF * (mB - mF) * (mB - mF)
		if v > best {
			best, bestT = v, t
		}
	}
	return bestT
}

// OCRInstalled reports whether the tesseract CLI is on PATH.
func OCRInstalled() bool {
	_, err := exec.LookPath("tesseract")
	return err == nil
}
