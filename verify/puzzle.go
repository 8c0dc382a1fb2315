package verify

import (
	"bytes"
	"crypto/subtle"
	"image"
	"image/color"
	"image/png"
	"math/rand/v2"
	"strconv"
	"strings"

	"github.com/trustd/trustd/platform/token"
)

// Visual puzzles. Everything about a puzzle derives from its 16-byte seed
// under the signing key: the 5 characters the image shows, the accessible
// arithmetic question and its answer, and the image's jitter and noise.
// So the server stores nothing, the image can be fetched again and looks
// the same, and the answers never appear in anything the browser receives
// except the rendered pixels (and, for the text alternative, the question).

// puzzleAlphabet avoids look-alikes (0/O, 1/I/L, B/8, S/5, G/6, Q, U/V, Z/2).
const puzzleAlphabet = "23456789ACDEFHJKMNPRTWXY"

// glyphs are 5×7 bitmaps of puzzleAlphabet, one string of 7 rows each.
var glyphs = map[byte][7]string{
	'2': {"01110", "10001", "00001", "00010", "00100", "01000", "11111"},
	'3': {"11110", "00001", "00001", "01110", "00001", "00001", "11110"},
	'4': {"00010", "00110", "01010", "10010", "11111", "00010", "00010"},
	'5': {"11111", "10000", "11110", "00001", "00001", "10001", "01110"},
	'6': {"00110", "01000", "10000", "11110", "10001", "10001", "01110"},
	'7': {"11111", "00001", "00010", "00100", "01000", "01000", "01000"},
	'8': {"01110", "10001", "10001", "01110", "10001", "10001", "01110"},
	'9': {"01110", "10001", "10001", "01111", "00001", "00010", "01100"},
	'A': {"01110", "10001", "10001", "11111", "10001", "10001", "10001"},
	'C': {"01110", "10001", "10000", "10000", "10000", "10001", "01110"},
	'D': {"11110", "10001", "10001", "10001", "10001", "10001", "11110"},
	'E': {"11111", "10000", "10000", "11110", "10000", "10000", "11111"},
	'F': {"11111", "10000", "10000", "11110", "10000", "10000", "10000"},
	'H': {"10001", "10001", "10001", "11111", "10001", "10001", "10001"},
	'J': {"00111", "00010", "00010", "00010", "00010", "10010", "01100"},
	'K': {"10001", "10010", "10100", "11000", "10100", "10010", "10001"},
	'M': {"10001", "11011", "10101", "10101", "10001", "10001", "10001"},
	'N': {"10001", "11001", "10101", "10011", "10001", "10001", "10001"},
	'P': {"11110", "10001", "10001", "11110", "10000", "10000", "10000"},
	'R': {"11110", "10001", "10001", "11110", "10100", "10010", "10001"},
	'T': {"11111", "00100", "00100", "00100", "00100", "00100", "00100"},
	'W': {"10001", "10001", "10001", "10101", "10101", "11011", "10001"},
	'X': {"10001", "10001", "01010", "00100", "01010", "10001", "10001"},
	'Y': {"10001", "10001", "01010", "00100", "00100", "00100", "00100"},
}

var numberWords = [...]string{"zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "eleven", "twelve"}

type puzzle struct {
	answer    string // the characters in the image
	question  string // the text alternative
	altAnswer string // its answer, decimal
	render    [32]byte
}

func newPuzzle(k *token.Key, seed [16]byte) *puzzle {
	sum := k.Sum(nil, []byte("puzzle\x00"), seed[:])
	p := &puzzle{}
	var ans [5]byte
	for i := range ans {
		ans[i] = puzzleAlphabet[int(sum[i])%len(puzzleAlphabet)]
	}
	p.answer = string(ans[:])
	a, b := 2+int(sum[5])%11, 1+int(sum[6])%9
	if sum[7]&1 == 0 {
		p.question = "Type, in digits, the result of " + numberWords[a] + " plus " + numberWords[b] + "."
		p.altAnswer = strconv.Itoa(a + b)
	} else {
		if b > a {
			a, b = b, a
		}
		p.question = "Type, in digits, the result of " + numberWords[a] + " minus " + numberWords[b] + "."
		p.altAnswer = strconv.Itoa(a - b)
	}
	copy(p.render[:], k.Sum(nil, []byte("render\x00"), seed[:]))
	return p
}

// check returns the challenge variant an answer solves ("image" or
// "alt_text"), or "" when it solves neither. Case and surrounding spaces
// do not matter.
func (p *puzzle) check(answer string) string {
	a := strings.ToUpper(strings.TrimSpace(answer))
	switch {
	case subtle.ConstantTimeCompare([]byte(a), []byte(p.answer)) == 1:
		return "image"
	case subtle.ConstantTimeCompare([]byte(a), []byte(p.altAnswer)) == 1:
		return "alt_text"
	}
	return ""
}

// png renders the puzzle: jittered, sheared, scaled glyphs in random dark
// colours over a noisy light background with crossing lines.
func (p *puzzle) png() ([]byte, error) {
	const w, h, scale = 200, 70, 4
	rng := rand.New(rand.NewChaCha8(p.render))
	img := image.NewNRGBA(image.Rect(0, 0, w, h))
	for i := 0; i < len(img.Pix); i += 4 {
		v := uint8(225 + rng.IntN(30))
		img.Pix[i], img.Pix[i+1], img.Pix[i+2], img.Pix[i+3] = v, v-uint8(rng.IntN(20)), v, 255
	}
	for i := 0; i < len(p.answer); i++ {
		g := glyphs[p.answer[i]]
		ink := color.NRGBA{uint8(rng.IntN(110)), uint8(rng.IntN(110)), uint8(rng.IntN(110)), 255}
		x0, y0 := 12+i*36+rng.IntN(8), 8+rng.IntN(20)
		shear := (rng.Float64() - 0.5) * 0.6
		for row := 0; row < 7; row++ {
			for col := 0; col < 5; col++ {
				if g[row][col] != '1' {
					continue
				}
				for dy := 0; dy < scale; dy++ {
					for dx := 0; dx < scale; dx++ {
						y := y0 + row*scale + dy
						x := x0 + col*scale + dx + int(shear*float64(row*scale+dy-14))
						img.SetNRGBA(x, y, ink)
					}
				}
			}
		}
	}
	for l := 0; l < 4; l++ {
		ink := color.NRGBA{uint8(rng.IntN(160)), uint8(rng.IntN(160)), uint8(rng.IntN(160)), 255}
		y, slope := float64(rng.IntN(h)), (rng.Float64()-0.5)*0.8
		for x := 0; x < w; x++ {
			img.SetNRGBA(x, int(y+slope*float64(x)), ink)
		}
	}
	var buf bytes.Buffer
	if err := png.Encode(&buf, img); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// PuzzleAnswers are the two accepted answers of the puzzle of seed: the
// characters its image shows and the digits answering its text question.
// Only a holder of the signing key can compute them (tests do).
func PuzzleAnswers(k *token.Key, seed [16]byte) (image, altText string) {
	p := newPuzzle(k, seed)
	return p.answer, p.altAnswer
}
