package backup

import (
	"bytes"
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"

	"golang.org/x/crypto/scrypt"
)

// The sealed file, every integer big-endian:
//
//	magic "TRUSTDBK" | version 1 | kdf (1 scrypt passphrase, 2 raw key) |
//	scrypt log2 N | r | p | 0 | salt (16) | nonce (12) | ciphertext length (8) |
//	ciphertext (AES-256-GCM of the archive, the 50-byte header as
//	additional data) | SHA-256 of everything before it (32)
//
// The trailing checksum tells a damaged or cut file from a wrong key
// before any key is derived: truncation and corruption are caught by
// length and checksum with a message that says so, and only a file that
// is intact yet fails authentication is reported as a wrong key (or a
// file forged with a recomputed checksum, which GCM catches).
const (
	magic      = "TRUSTDBK"
	version    = 1
	kdfScrypt  = 1
	kdfRaw     = 2
	headerLen  = 8 + 6 + 16 + 12 + 8
	trailerLen = sha256.Size
	// scrypt cost: N = 2^15, r = 8, p = 1 (the interactive-login figure of
	// the scrypt paper's successors, ~50-100 ms here); a file may say up
	// to 2^20, never more, so a crafted header cannot demand gigabytes.
	scryptLogN    = 15
	scryptMaxLogN = 20
	// MinPassphrase is the shortest passphrase accepted.
	MinPassphrase = 12
)

// Errors of Open and Check. Each wraps to a message that says what to do.
var (
	// ErrTruncated: the file is shorter than its header says.
	ErrTruncated = errors.New("backup: file truncated")
	// ErrCorrupt: the file is not a sealed backup, or its checksum does
	// not match its bytes.
	ErrCorrupt = errors.New("backup: file corrupted")
	// ErrWrongKey: the file is intact but does not open with this key.
	ErrWrongKey = errors.New("backup: wrong key or passphrase (the file is intact but does not decrypt with it)")
)

// Secret is what the operator supplies to seal and open a file: a
// passphrase (stretched with scrypt and a per-file salt) or a raw 32-byte
// key.
type Secret struct {
	passphrase []byte
	key        []byte
}

// Passphrase makes a Secret from a passphrase of at least MinPassphrase
// bytes (a trailing newline, as a file written by echo has, is dropped).
func Passphrase(p string) (Secret, error) {
	p = strings.TrimRight(p, "\r\n")
	if len(p) < MinPassphrase {
		return Secret{}, fmt.Errorf("backup: passphrase shorter than %d characters", MinPassphrase)
	}
	return Secret{passphrase: []byte(p)}, nil
}

// RawKey makes a Secret from a 32-byte key given as 32 raw bytes or as
// 64 hexadecimal characters (surrounding white space ignored), as
// `openssl rand -hex 32 > key` writes it.
func RawKey(b []byte) (Secret, error) {
	if len(b) == 32 {
		return Secret{key: bytes.Clone(b)}, nil
	}
	t := bytes.TrimSpace(b)
	if len(t) == 64 {
		k := make([]byte, 32)
		if _, err := hex.Decode(k, t); err == nil {
			return Secret{key: k}, nil
		}
	}
	return Secret{}, errors.New("backup: a key file holds 32 raw bytes or 64 hexadecimal characters")
}

// FileInfo is what the sealed file says about itself without a key.
type FileInfo struct {
	Size   int    // bytes of the whole file
	SHA256 string // hex SHA-256 of the whole file
	KDF    string // "scrypt" or "raw-key"
	Cipher string // always AES-256-GCM
	Sealed int    // ciphertext bytes
}

// Seal encrypts archive with s.
func Seal(archive []byte, s Secret) ([]byte, error) {
	hdr := make([]byte, headerLen)
	copy(hdr, magic)
	hdr[8] = version
	salt, nonce := hdr[14:30], hdr[30:42]
	if _, err := rand.Read(hdr[14:42]); err != nil {
		return nil, err
	}
	switch {
	case s.key != nil:
		hdr[9] = kdfRaw
		clear(salt)
	case s.passphrase != nil:
		hdr[9], hdr[10], hdr[11], hdr[12] = kdfScrypt, scryptLogN, 8, 1
	default:
		return nil, errors.New("backup: no key or passphrase")
	}
	aead, err := s.aead(hdr)
	if err != nil {
		return nil, err
	}
	binary.BigEndian.PutUint64(hdr[42:50], uint64(len(archive)+aead.Overhead()))
	out := make([]byte, 0, headerLen+len(archive)+aead.Overhead()+trailerLen)
	out = append(out, hdr...)
	out = aead.Seal(out, nonce, archive, hdr)
	s256 := sha256.Sum256(out)
	return append(out, s256[:]...), nil
}

// Check verifies the file's structure, length and checksum without a key.
func Check(file []byte) (FileInfo, error) {
	sum := sha256.Sum256(file)
	info := FileInfo{Size: len(file), SHA256: hex.EncodeToString(sum[:]), Cipher: "AES-256-GCM"}
	if len(file) < len(magic) || string(file[:len(magic)]) != magic {
		return info, fmt.Errorf("%w: not a trustd backup (no %q header)", ErrCorrupt, magic)
	}
	if len(file) < headerLen {
		return info, fmt.Errorf("%w: %d bytes, shorter than the %d-byte header", ErrTruncated, len(file), headerLen)
	}
	if file[8] != version {
		return info, fmt.Errorf("%w: file version %d, this build reads %d", ErrCorrupt, file[8], version)
	}
	switch file[9] {
	case kdfScrypt:
		info.KDF = "scrypt"
		if file[10] < 10 || file[10] > scryptMaxLogN || file[11] == 0 || file[12] == 0 {
			return info, fmt.Errorf("%w: scrypt parameters out of range", ErrCorrupt)
		}
	case kdfRaw:
		info.KDF = "raw-key"
	default:
		return info, fmt.Errorf("%w: unknown key derivation %d", ErrCorrupt, file[9])
	}
	ct := binary.BigEndian.Uint64(file[42:50])
	want := uint64(headerLen) + ct + trailerLen
	switch {
	case ct > 1<<40:
		return info, fmt.Errorf("%w: header claims %d bytes of ciphertext", ErrCorrupt, ct)
	case uint64(len(file)) < want:
		return info, fmt.Errorf("%w: %d of %d bytes present", ErrTruncated, len(file), want)
	case uint64(len(file)) > want:
		return info, fmt.Errorf("%w: %d bytes after the end the header states (%d)", ErrCorrupt, uint64(len(file))-want, want)
	}
	body := file[:len(file)-trailerLen]
	if got := sha256.Sum256(body); !bytes.Equal(got[:], file[len(file)-trailerLen:]) {
		return info, fmt.Errorf("%w: checksum mismatch (the file changed after it was written)", ErrCorrupt)
	}
	info.Sealed = int(ct)
	return info, nil
}

// Open checks file and decrypts it with s, returning the archive bytes.
func Open(file []byte, s Secret) ([]byte, FileInfo, error) {
	info, err := Check(file)
	if err != nil {
		return nil, info, err
	}
	hdr := file[:headerLen]
	switch {
	case hdr[9] == kdfScrypt && s.passphrase == nil:
		return nil, info, fmt.Errorf("%w: the file was sealed with a passphrase, a key file was given", ErrWrongKey)
	case hdr[9] == kdfRaw && s.key == nil:
		return nil, info, fmt.Errorf("%w: the file was sealed with a key file, a passphrase was given", ErrWrongKey)
	}
	aead, err := s.aead(hdr)
	if err != nil {
		return nil, info, err
	}
	plain, err := aead.Open(nil, hdr[30:42], file[headerLen:len(file)-trailerLen], hdr)
	if err != nil {
		return nil, info, ErrWrongKey
	}
	return plain, info, nil
}

// aead builds AES-256-GCM under s for the header's key derivation.
func (s Secret) aead(hdr []byte) (cipher.AEAD, error) {
	key := s.key
	if hdr[9] == kdfScrypt {
		var err error
		key, err = scrypt.Key(s.passphrase, hdr[14:30], 1<<hdr[10], int(hdr[11]), int(hdr[12]), 32)
		if err != nil {
			return nil, fmt.Errorf("backup: derive key: %w", err)
		}
	}
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, err
	}
	return cipher.NewGCM(block)
}

// sum is the hex SHA-256 of b.
func sum(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// Sum is the hex SHA-256 of a catalog, for Meta.CatalogSHA256.
func Sum(catalog []byte) string { return sum(catalog) }
