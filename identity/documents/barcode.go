package documents

import (
	"image"
	"strings"
	"time"

	zxinggo "github.com/ericlevine/zxinggo"
	"github.com/ericlevine/zxinggo/binarizer"
	_ "github.com/ericlevine/zxinggo/pdf417" // registers the PDF417 reader
)

// AAMVA holds the fields of an AAMVA driver-licence barcode used in the
// cross-checks.
type AAMVA struct {
	IIN          string
	Jurisdiction string // DAJ
	Country      string // DCG, USA or CAN
	Number       string // DAQ
	FamilyName   string // DCS
	FirstName    string // DAC
	BirthDate    time.Time
	ExpiryDate   time.Time
	IssueDate    time.Time
}

// ReadPDF417 decodes the first PDF417 symbol in img with zxinggo.
func ReadPDF417(img image.Image) (string, bool) {
	src := zxinggo.NewImageLuminanceSource(img)
	bm := zxinggo.NewBinaryBitmap(binarizer.NewHybrid(src))
	res, err := zxinggo.Decode(bm, &zxinggo.DecodeOptions{PossibleFormats: []zxinggo.Format{zxinggo.FormatPDF417}, TryHarder: true})
	if err != nil || res == nil {
		return "", false
	}
	return res.Text, true
}

// ParseAAMVA parses the header and the DL/ID subfile elements of an AAMVA
// card-design-standard payload. ok is false when it is not one.
func ParseAAMVA(s string) (*AAMVA, bool) {
	i := strings.Index(s, "ANSI ")
	if i < 0 || len(s) < i+5+6+2+2+2 {
		return nil, false
	}
	a := &AAMVA{IIN: s[i+5 : i+11]}
	el := map[string]string{}
	// Element lines follow the subfile type (DL or ID) and are separated by
	// line feeds; the first element shares its line with the subfile type.
	body := s[i+5:]
	for _, line := range strings.FieldsFunc(body, func(r rune) bool { return r == '\n' || r == '\r' || r == '\x1e' }) {
		for _, st := range []string{"DL", "ID"} {
			if j := strings.LastIndex(line, st+"D"); j >= 0 && len(line) >= j+5 {
				line = line[j+2:]
				break
			}
		}
		if len(line) >= 3 && line[0] == 'D' {
			el[line[:3]] = strings.TrimSpace(line[3:])
		}
	}
	a.Jurisdiction, a.Country, a.Number = el["DAJ"], el["DCG"], el["DAQ"]
	a.FamilyName, a.FirstName = el["DCS"], el["DAC"]
	can := a.Country == "CAN"
	a.BirthDate, _ = aamvaDate(el["DBB"], can)
	a.ExpiryDate, _ = aamvaDate(el["DBA"], can)
	a.IssueDate, _ = aamvaDate(el["DBD"], can)
	if a.Number == "" || a.ExpiryDate.IsZero() {
		return nil, false
	}
	return a, true
}

// aamvaDate parses MMDDCCYY (USA) or CCYYMMDD (Canada).
func aamvaDate(s string, canada bool) (time.Time, bool) {
	if len(s) != 8 {
		return time.Time{}, false
	}
	layout := "01022006"
	if canada {
		layout = "20060102"
	}
	t, err := time.Parse(layout, s)
	if err != nil && !canada { // some US issuers write CCYYMMDD
		t, err = time.Parse("20060102", s)
	}
	return t, err == nil
}
