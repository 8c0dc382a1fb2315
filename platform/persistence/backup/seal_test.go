package backup

import (
	"bytes"
	"encoding/hex"
	"errors"
	"strings"
	"testing"
)

func mustArchive(t *testing.T) []byte {
	t.Helper()
	cat := []byte(`{"index":7,"keys":[{"key_id":"k1","secret":"c2VjcmV0"}]}`)
	a := &Archive{Meta: Meta{Index: 7, Term: 2, Counts: map[string]int{"keys": 1}, CatalogSHA256: Sum(cat)}, Catalog: cat}
	b, err := a.Encode()
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func mustPassphrase(t *testing.T, p string) Secret {
	t.Helper()
	s, err := Passphrase(p)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestSealedFileOpensWithItsSecretOnly(t *testing.T) {
	plain := mustArchive(t)
	raw, err := RawKey([]byte(strings.Repeat("ab", 32) + "\n"))
	if err != nil {
		t.Fatal(err)
	}
	other, _ := RawKey(bytes.Repeat([]byte{7}, 32))
	pass := mustPassphrase(t, "correct horse battery staple")
	for _, tc := range []struct {
		name       string
		seal, open Secret
		want       error
	}{
		{"a passphrase opens what it sealed", pass, pass, nil},
		{"a key file opens what it sealed", raw, raw, nil},
		{"another passphrase is refused as a wrong key", pass, mustPassphrase(t, "incorrect horse battery"), ErrWrongKey},
		{"another key is refused as a wrong key", raw, other, ErrWrongKey},
		{"a key file for a passphrase file is refused", pass, raw, ErrWrongKey},
		{"a passphrase for a key file is refused", raw, pass, ErrWrongKey},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, err := Seal(plain, tc.seal)
			if err != nil {
				t.Fatal(err)
			}
			if bytes.Contains(f, []byte("c2VjcmV0")) {
				t.Fatal("the sealed file holds the archive in clear")
			}
			got, _, err := Open(f, tc.open)
			if !errors.Is(err, tc.want) {
				t.Fatalf("Open: %v, want %v", err, tc.want)
			}
			if tc.want == nil {
				if !bytes.Equal(got, plain) {
					t.Fatal("opened archive differs from the sealed one")
				}
				if _, err := Decode(got); err != nil {
					t.Fatal(err)
				}
			}
		})
	}
}

func TestDamagedFilesAreRefusedWithWhatIsWrong(t *testing.T) {
	raw, _ := RawKey(bytes.Repeat([]byte{1}, 32))
	f, err := Seal(mustArchive(t), raw)
	if err != nil {
		t.Fatal(err)
	}
	flip := func(i int) []byte { g := bytes.Clone(f); g[i] ^= 0x40; return g }
	for _, tc := range []struct {
		name string
		file []byte
		want error
	}{
		{"an empty file", nil, ErrCorrupt},
		{"a file that is not a backup", []byte(`{"index":1}`), ErrCorrupt},
		{"a file cut inside its header", f[:20], ErrTruncated},
		{"a file cut by one byte", f[:len(f)-1], ErrTruncated},
		{"a file cut in half", f[:len(f)/2], ErrTruncated},
		{"a file with bytes appended", append(bytes.Clone(f), 0), ErrCorrupt},
		{"a flipped bit in the ciphertext", flip(headerLen + 3), ErrCorrupt},
		{"a flipped bit in the nonce", flip(35), ErrCorrupt},
		{"a flipped bit in the checksum", flip(len(f) - 1), ErrCorrupt},
		{"an unknown version", flip(8), ErrCorrupt},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, _, err := Open(tc.file, raw); !errors.Is(err, tc.want) {
				t.Fatalf("Open: %v, want %v", err, tc.want)
			}
		})
	}
}

func TestATamperedFileWithARecomputedChecksumFailsAuthentication(t *testing.T) {
	raw, _ := RawKey(bytes.Repeat([]byte{1}, 32))
	f, _ := Seal(mustArchive(t), raw)
	g := bytes.Clone(f[:len(f)-trailerLen])
	g[headerLen+5] ^= 1
	tail, _ := hex.DecodeString(Sum(g))
	if _, _, err := Open(append(g, tail...), raw); !errors.Is(err, ErrWrongKey) {
		t.Fatalf("Open: %v, want the AEAD to refuse it", err)
	}
}

func TestArchiveWithAChangedCatalogIsRefused(t *testing.T) {
	b := mustArchive(t)
	b = bytes.Replace(b, []byte(`"index":7,"keys"`), []byte(`"index":8,"keys"`), 1)
	if _, err := Decode(b); !errors.Is(err, ErrFormat) {
		t.Fatalf("Decode: %v", err)
	}
}

func TestShortPassphrasesAndBadKeyFilesAreRefused(t *testing.T) {
	if _, err := Passphrase("short\n"); err == nil {
		t.Fatal("a 5-character passphrase was accepted")
	}
	for _, k := range [][]byte{nil, []byte("abc"), bytes.Repeat([]byte("z"), 64), bytes.Repeat([]byte{1}, 31)} {
		if _, err := RawKey(k); err == nil {
			t.Fatalf("key file %q accepted", k)
		}
	}
}
