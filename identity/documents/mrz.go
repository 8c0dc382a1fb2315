package documents

import (
	"strings"
	"time"
)

// MRZ formats of ICAO 9303: TD1 (3 lines of 30), TD2 (2 of 36), TD3 (2 of 44).
const (
	TD1 = "TD1"
	TD2 = "TD2"
	TD3 = "TD3"
)

// MRZ is a parsed machine-readable zone. The check-digit results are kept
// per field so a caller can say which one failed.
type MRZ struct {
	Format         string
	DocumentCode   string // P, I, A, C, V plus the optional second letter
	Issuer         string
	DocumentNumber string
	Nationality    string
	BirthDate      string // YYMMDD
	Sex            string
	ExpiryDate     string // YYMMDD
	Surname        string
	GivenNames     string
	Optional       string

	NumberOK, BirthOK, ExpiryOK, OptionalOK, CompositeOK bool
}

// Valid reports whether every check digit holds.
func (m *MRZ) Valid() bool {
	return m.NumberOK && m.BirthOK && m.ExpiryOK && m.OptionalOK && m.CompositeOK
}

// FailedChecks names the check digits that did not hold.
func (m *MRZ) FailedChecks() []string {
	var out []string
	for _, f := range []struct {
		n  string
		ok bool
	}{{"document_number", m.NumberOK}, {"birth_date", m.BirthOK}, {"expiry_date", m.ExpiryOK},
		{"optional_data", m.OptionalOK}, {"composite", m.CompositeOK}} {
		if !f.ok {
			out = append(out, f.n)
		}
	}
	return out
}

// charValue is the ICAO 9303 value of an MRZ character: digits their value,
// A..Z 10..35, the filler '<' 0; -1 for anything else.
func charValue(c byte) int {
	switch {
	case c >= '0' && c <= '9':
		return int(c - '0')
	case c >= 'A' && c <= 'Z':
		return int(c-'A') + 10
	case c == '<':
		return 0
	}
	return -1
}

// CheckDigit computes the ICAO 9303 check digit (weights 7, 3, 1) of s.
// ok is false when s holds a character outside the MRZ alphabet.
func CheckDigit(s string) (d byte, ok bool) {
	w := [3]int{7, 3, 1}
	sum := 0
	for i := 0; i < len(s); i++ {
		v := charValue(s[i])
		if v < 0 {
			return 0, false
		}
		sum += v * w[i%3]
	}
	return byte('0' + sum%10), true
}

// checks reports whether check digit cd matches field. A field of fillers
// may carry the filler '<' as its check digit (optional data, TD3).
func checks(field string, cd byte) bool {
	if cd == '<' && strings.Trim(field, "<") == "" {
		return true
	}
	d, ok := CheckDigit(field)
	return ok && d == cd
}

func validMRZLine(s string) bool {
	for i := 0; i < len(s); i++ {
		if charValue(s[i]) < 0 {
			return false
		}
	}
	return true
}

// ParseMRZ parses the lines of a machine-readable zone. The format follows
// from the line count and length; anything else is ErrMRZFormat.
func ParseMRZ(lines []string) (*MRZ, error) {
	for _, l := range lines {
		if !validMRZLine(l) {
			return nil, ErrMRZFormat.With("a line holds a character outside A-Z, 0-9 and <")
		}
	}
	switch {
	case len(lines) == 3 && len(lines[0]) == 30 && len(lines[1]) == 30 && len(lines[2]) == 30:
		return parseTD1(lines), nil
	case len(lines) == 2 && len(lines[0]) == 36 && len(lines[1]) == 36:
		return parseTD23(lines, TD2), nil
	case len(lines) == 2 && len(lines[0]) == 44 && len(lines[1]) == 44:
		return parseTD23(lines, TD3), nil
	}
	return nil, ErrMRZFormat.With("expected 3 lines of 30, 2 of 36 or 2 of 44 characters")
}

func names(s string) (surname, given string) {
	s = strings.TrimRight(s, "<")
	parts := strings.SplitN(s, "<<", 2)
	surname = strings.ReplaceAll(parts[0], "<", " ")
	if len(parts) == 2 {
		given = strings.TrimSpace(strings.ReplaceAll(parts[1], "<", " "))
	}
	return surname, given
}

func parseTD1(l []string) *MRZ {
	m := &MRZ{Format: TD1}
	m.DocumentCode = strings.TrimRight(l[0][0:2], "<")
	m.Issuer = strings.TrimRight(l[0][2:5], "<")
	m.DocumentNumber = strings.TrimRight(l[0][5:14], "<")
	m.NumberOK = checks(l[0][5:14], l[0][14])
	m.Optional = strings.TrimRight(l[0][15:30], "<") + strings.TrimRight(l[1][18:29], "<")
	m.BirthDate, m.BirthOK = l[1][0:6], checks(l[1][0:6], l[1][6])
	m.Sex = l[1][7:8]
	m.ExpiryDate, m.ExpiryOK = l[1][8:14], checks(l[1][8:14], l[1][14])
	m.Nationality = strings.TrimRight(l[1][15:18], "<")
	m.OptionalOK = true
	m.CompositeOK = checks(l[0][5:30]+l[1][0:7]+l[1][8:15]+l[1][18:29], l[1][29])
	m.Surname, m.GivenNames = names(l[2])
	return m
}

func parseTD23(l []string, format string) *MRZ {
	m := &MRZ{Format: format}
	n := len(l[0])
	m.DocumentCode = strings.TrimRight(l[0][0:2], "<")
	m.Issuer = strings.TrimRight(l[0][2:5], "<")
	m.Surname, m.GivenNames = names(l[0][5:n])
	b := l[1]
	m.DocumentNumber = strings.TrimRight(b[0:9], "<")
	m.NumberOK = checks(b[0:9], b[9])
	m.Nationality = strings.TrimRight(b[10:13], "<")
	m.BirthDate, m.BirthOK = b[13:19], checks(b[13:19], b[19])
	m.Sex = b[20:21]
	m.ExpiryDate, m.ExpiryOK = b[21:27], checks(b[21:27], b[27])
	if format == TD3 {
		m.Optional = strings.TrimRight(b[28:42], "<")
		m.OptionalOK = checks(b[28:42], b[42])
		m.CompositeOK = checks(b[0:10]+b[13:20]+b[21:43], b[43])
	} else {
		m.Optional = strings.TrimRight(b[28:35], "<")
		m.OptionalOK = true
		m.CompositeOK = checks(b[0:10]+b[13:20]+b[21:35], b[35])
	}
	return m
}

// Expiry returns the expiry date (MRZ years are 20YY for expiry).
func (m *MRZ) Expiry() (time.Time, bool) {
	t, err := time.Parse("060102", m.ExpiryDate)
	if err != nil {
		return time.Time{}, false
	}
	return time.Date(2000+t.Year()%100, t.Month(), t.Day(), 0, 0, 0, 0, time.UTC), true
}

// Expired reports whether the document expired before now (it is valid
// through its expiry day).
func (m *MRZ) Expired(now time.Time) bool {
	e, ok := m.Expiry()
	return !ok || now.UTC().After(e.AddDate(0, 0, 1))
}

// digit and letter confusions of OCR, per field kind.
var toDigit = map[byte]byte{'O': '0', 'Q': '0', 'D': '0', 'I': '1', 'L': '1', 'B': '8', 'S': '5', 'Z': '2', 'G': '6'}
var toLetter = map[byte]byte{'0': 'O', '1': 'I', '8': 'B', '5': 'S', '2': 'Z', '6': 'G'}

// CorrectMRZ applies field-aware OCR corrections (letters read in digit-only
// fields become digits, digits in alphabetic fields become letters) and, if
// the document number still fails its check digit, searches the usual
// confusions (O/0, I/1, B/8, S/5, Z/2) for one that satisfies it. It returns
// the corrected lines, the number of characters it changed in fields that
// check digits cover (corrections: a result that needed any is never as
// good as a clean read, the research measured check-digit-passing false
// reads after correction) and the number of structural repairs in fields
// no check digit covers (document code, issuer, nationality, names: digits
// read in an alphabetic field, and the trailing name filler after "<<<",
// which Tesseract reads as K, S, E, C or X).
func CorrectMRZ(lines []string) (out []string, corrections, repairs int) {
	out = make([]string, len(lines))
	copy(out, lines)
	changed := 0
	if !((len(out) == 3 && len(out[0]) == 30 && len(out[1]) == 30 && len(out[2]) == 30) ||
		(len(out) == 2 && len(out[0]) == len(out[1]) && (len(out[0]) == 36 || len(out[0]) == 44))) {
		return out, 0, 0
	}
	fillTail := func(li, from int) {
		l := out[li]
		if i := strings.Index(l[from:], "<<<"); i >= 0 {
			tail := l[from+i:]
			for k := 0; k < len(tail); k++ {
				if tail[k] != '<' {
					repairs++
				}
			}
			out[li] = l[:from+i] + strings.Repeat("<", len(tail))
		}
	}
	alpha := func(li, from, to int) {
		before := changed
		fix0(out, &changed, li, from, to, toLetter)
		repairs += changed - before
		changed = before
	}
	fix := func(li, from, to int, m map[byte]byte) {
		fix0(out, &changed, li, from, to, m)
	}
	numField := -1 // line, start: the document number and its check digit
	numLine, numStart := 0, 0
	switch {
	case len(out) == 3 && len(out[0]) == 30:
		alpha(0, 0, 5)
		fix(0, 14, 15, toDigit)
		fix(1, 0, 7, toDigit)
		fix(1, 8, 15, toDigit)
		alpha(1, 15, 18)
		fix(1, 29, 30, toDigit)
		alpha(2, 0, 30)
		fillTail(2, 0)
		numField, numLine, numStart = 1, 0, 5
	case len(out) == 2 && (len(out[0]) == 36 || len(out[0]) == 44):
		n := len(out[0])
		alpha(0, 0, n)
		fillTail(0, 5)
		fix(1, 9, 10, toDigit)
		alpha(1, 10, 13)
		fix(1, 13, 20, toDigit)
		fix(1, 21, 28, toDigit)
		fix(1, n-1, n, toDigit)
		if n == 44 {
			fix(1, 42, 43, toDigit)
		}
		numField, numLine, numStart = 1, 1, 0
	}
	if numField < 0 {
		return out, changed, repairs
	}
	l := out[numLine]
	field, cd := l[numStart:numStart+9], l[numStart+9]
	if checks(field, cd) {
		return out, changed, repairs
	}
	alt := map[byte]byte{'O': '0', '0': 'O', 'I': '1', '1': 'I', 'B': '8', '8': 'B', 'S': '5', '5': 'S', 'Z': '2', '2': 'Z'}
	var pos []int
	for i := 0; i < 9; i++ {
		if _, ok := alt[field[i]]; ok {
			pos = append(pos, i)
		}
	}
	if len(pos) > 6 {
		return out, changed, repairs
	}
	for mask := 1; mask < 1<<len(pos); mask++ {
		b := []byte(field)
		n := 0
		for j, p := range pos {
			if mask&(1<<j) != 0 {
				b[p] = alt[b[p]]
				n++
			}
		}
		if checks(string(b), cd) {
			out[numLine] = l[:numStart] + string(b) + l[numStart+9:]
			return out, changed + n, repairs
		}
	}
	return out, changed, repairs
}

func fix0(out []string, changed *int, li, from, to int, m map[byte]byte) {
	b := []byte(out[li])
	for i := from; i < to; i++ {
		if r, ok := m[b[i]]; ok {
			b[i] = r
			*changed++
		}
	}
	out[li] = string(b)
}

// NormalizeOCRLines turns OCR output into candidate MRZ lines: spaces and
// characters outside the MRZ alphabet dropped, short lines discarded, each
// line cut or padded with fillers to the nearest MRZ width.
func NormalizeOCRLines(text string) []string {
	var lines []string
	for _, raw := range strings.Split(text, "\n") {
		var b strings.Builder
		for _, r := range strings.ToUpper(raw) {
			switch {
			case r == '«':
				b.WriteByte('<')
			case r < 128 && charValue(byte(r)) >= 0:
				b.WriteByte(byte(r))
			}
		}
		if b.Len() >= 26 {
			lines = append(lines, b.String())
		}
	}
	if len(lines) == 0 {
		return nil
	}
	width := 44
	switch {
	case len(lines) >= 3:
		width = 30
		lines = lines[len(lines)-3:]
	default:
		if len(lines) > 2 {
			lines = lines[len(lines)-2:]
		}
		l := len(lines[len(lines)-1])
		if l <= 33 {
			width = 30
		} else if l <= 40 {
			width = 36
		}
	}
	for i, l := range lines {
		switch {
		case len(l) > width:
			lines[i] = l[:width]
		case len(l) < width:
			lines[i] = l + strings.Repeat("<", width-len(l))
		}
	}
	return lines
}
