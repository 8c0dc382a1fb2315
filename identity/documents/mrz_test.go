package documents

import (
	"strings"
	"testing"
	"time"
)

// ICAO 9303 specimens (part 4 TD3, part 5 TD1, part 6 TD2).
var specimens = []struct {
	name   string
	lines  []string
	format string
	number string
}{
	{"TD3", []string{"P<UTOERIKSSON<<ANNA<MARIA<<<<<<<<<<<<<<<<<<<", "L898902C36UTO7408122F1204159ZE184226B<<<<<10"}, TD3, "L898902C3"},
	{"TD1", []string{"I<UTOD231458907<<<<<<<<<<<<<<<", "7408122F1204159UTO<<<<<<<<<<<6", "ERIKSSON<<ANNA<MARIA<<<<<<<<<<"}, TD1, "D23145890"},
	{"TD2", []string{"I<UTOERIKSSON<<ANNA<MARIA<<<<<<<<<<<", "D231458907UTO7408122F1204159<<<<<<<6"}, TD2, "D23145890"},
}

func TestICAOSpecimens(t *testing.T) {
	for _, s := range specimens {
		t.Run(s.name, func(t *testing.T) {
			m, err := ParseMRZ(s.lines)
			if err != nil {
				t.Fatal(err)
			}
			if !m.Valid() || m.Format != s.format || m.DocumentNumber != s.number || m.Issuer != "UTO" ||
				m.Surname != "ERIKSSON" || m.GivenNames != "ANNA MARIA" || m.BirthDate != "740812" || m.ExpiryDate != "120415" || m.Sex != "F" {
				t.Fatalf("%+v", m)
			}
			if !m.Expired(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)) || m.Expired(time.Date(2012, 4, 15, 12, 0, 0, 0, time.UTC)) {
				t.Fatal("expiry: 2012-04-15 is valid through that day only")
			}
		})
	}
}

func TestCheckDigit(t *testing.T) {
	for _, c := range []struct {
		in   string
		want byte
	}{{"L898902C3", '6'}, {"740812", '2'}, {"120415", '9'}, {"ZE184226B<<<<<", '1'}, {"D23145890", '7'}, {"<<<", '0'}} {
		if d, ok := CheckDigit(c.in); !ok || d != c.want {
			t.Errorf("CheckDigit(%q) = %c, want %c", c.in, d, c.want)
		}
	}
	if _, ok := CheckDigit("ab"); ok {
		t.Error("lower case accepted")
	}
}

func TestBadCheckDigitsFlagFieldAndComposite(t *testing.T) {
	l := append([]string(nil), specimens[0].lines...)
	l[1] = l[1][:9] + "7" + l[1][10:] // document number check digit 6 → 7
	m, err := ParseMRZ(l)
	if err != nil {
		t.Fatal(err)
	}
	if m.NumberOK || m.CompositeOK || !m.BirthOK || m.Valid() {
		t.Fatalf("%+v", m)
	}
	if got := strings.Join(m.FailedChecks(), ","); got != "document_number,composite" {
		t.Fatal(got)
	}
}

func TestParseMRZRejectsShapes(t *testing.T) {
	for _, l := range [][]string{nil, {"P<UTO"}, {strings.Repeat("<", 44)}, {strings.Repeat("<", 44), strings.Repeat("<", 36)},
		{strings.Repeat("a", 44), strings.Repeat("<", 44)}, {strings.Repeat("<", 30), strings.Repeat("<", 30)}} {
		if _, err := ParseMRZ(l); err == nil {
			t.Errorf("%q accepted", l)
		}
	}
}

func TestCorrectMRZ(t *testing.T) {
	// OCR confusions: O for 0 in the birth date, 5 for S in the name,
	// and the document number read with I for 1.
	good := []string{"P<UTOERIKSSON<<ANNA<MARIA<<<<<<<<<<<<<<<<<<<", "L898902C36UTO7408122F1204159ZE184226B<<<<<10"}
	bad := []string{"P<UTOERIK55ON<<ANNA<MARIA<<<<<<<<<<<<<<<<<<<", "L898902C36UTO74O8122F12O4159ZE184226B<<<<<10"}
	fixed, n, rep := CorrectMRZ(bad)
	if n != 2 || rep != 2 || fixed[0] != good[0] || fixed[1] != good[1] {
		t.Fatalf("n=%d %q", n, fixed)
	}
	if _, n, rep := CorrectMRZ(good); n != 0 || rep != 0 {
		t.Fatalf("clean MRZ changed %d chars", n)
	}
	// Document-number search: the O/0 swap satisfying the check digit.
	num := "AB0CD1234"
	l2 := num + string(mustCD(num)) + "UTO8001014M3501014<<<<<<<<<<<<<<<<"
	l2 = l2[:42] + "<" + string(mustCD(l2[0:10]+l2[13:20]+l2[21:43]))
	lines := []string{"P<UTODOE<<J<<<<<<<<<<<<<<<<<<<<<<<<<<<<<<<<<", l2}
	if m, err := ParseMRZ(lines); err != nil || !m.Valid() {
		t.Fatalf("built MRZ invalid: %v %+v", err, m)
	}
	broken := []string{lines[0], "ABOCD1234" + lines[1][9:]}
	fixed, n, _ = CorrectMRZ(broken)
	m, _ := ParseMRZ(fixed)
	if n == 0 || m == nil || !m.Valid() || m.DocumentNumber != "AB0CD1234" {
		t.Fatalf("n=%d %q %+v", n, fixed, m)
	}
}

func TestNormalizeOCRLines(t *testing.T) {
	got := NormalizeOCRLines("noise\nP<UTOERIKSSON<<ANNA<MARIA<<<<<<<<<<<<<<<<<\n L898902C36UTO7408122F1204159ZE184226B<<<<<10 \n")
	if len(got) != 2 || len(got[0]) != 44 || got[1] != specimens[0].lines[1] {
		t.Fatalf("%q", got)
	}
}

func FuzzParseMRZ(f *testing.F) {
	for _, s := range specimens {
		f.Add(strings.Join(s.lines, "\n"))
	}
	f.Add("P<<\n<<")
	f.Add("P<UTOERIKSSON<<ANNA<MARIA<<<<<<<<<<<<<<<<<<<\n")
	f.Add("I<UTOD231458907<<<<<<<<<<<<<<<\n7408122F1204159UTO<<<<<<<<<<<6\nERIKSSON<<ANNA<MARIA<<<<")
	f.Fuzz(func(t *testing.T, s string) {
		lines := NormalizeOCRLines(s)
		m, err := ParseMRZ(lines)
		if err == nil {
			_ = m.Valid()
			_, _ = m.Expiry()
		}
		fixed, _, _ := CorrectMRZ(lines)
		if m2, err := ParseMRZ(fixed); err == nil {
			_ = m2.FailedChecks()
		}
		_, _ = ParseMRZ(strings.Split(s, "\n"))
		_, _, _ = CorrectMRZ(strings.Split(s, "\n"))
	})
}

func mustCD(s string) byte { d, _ := CheckDigit(s); return d }
