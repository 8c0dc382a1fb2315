// Package users owns the rules of workspace console users: roles and what
// each may do, the email and password rules, and the memory-hard password
// hash (argon2id). It stores nothing (records live in the catalog, through
// Raft) and never sees HTTP.
package users

import (
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"fmt"
	"net/mail"
	"strings"

	"golang.org/x/crypto/argon2"

	"github.com/trustd/trustd/platform/errcode"
)

// Roles of a console user.
const (
	// Viewer reads the workspace's pages and changes nothing.
	Viewer = "viewer"
	// Editor reads and changes the workspace's configuration (sites,
	// policies, webhooks); editors do not decide agent approvals.
	Editor = "editor"
	// Approver reads the workspace's pages and approves or denies agent
	// requests; approvers do not change configuration (separation of
	// duties: the person who approves need not be able to edit).
	Approver = "approver"
)

// Roles lists the roles in the order forms show them.
var Roles = []string{Viewer, Editor, Approver}

// Permission is what a console action needs.
type Permission uint8

const (
	// View reads a workspace's pages.
	View Permission = iota
	// Edit changes a workspace's configuration.
	Edit
	// Approve decides agent approval requests.
	Approve
	// Admin is cluster-wide (cluster page, workspaces, console users):
	// only the admin token holds it.
	Admin
)

func (p Permission) String() string {
	return [...]string{"view", "edit", "approve", "admin"}[p]
}

// Allows reports whether role grants p. Admin is never granted by a role.
func Allows(role string, p Permission) bool {
	switch p {
	case View:
		return role == Viewer || role == Editor || role == Approver
	case Edit:
		return role == Editor
	case Approve:
		return role == Approver
	}
	return false
}

// Errors of the console user rules.
var (
	ErrInvalidEmail    = errcode.New("invalid-email", errcode.Invalid, "trustd: email is not a single address of at most 254 characters.")
	ErrInvalidRole     = errcode.New("invalid-role", errcode.Invalid, "trustd: role is not viewer, editor or approver.")
	ErrInvalidPassword = errcode.New("invalid-password", errcode.Invalid, "trustd: password must be 12 to 256 bytes.")
)

// NormalizeEmail checks an address and returns its lower-case form.
func NormalizeEmail(s string) (string, error) {
	if s == "" || len(s) > 254 {
		return "", ErrInvalidEmail
	}
	a, err := mail.ParseAddress(s)
	if err != nil || a.Address != s || a.Name != "" || !strings.Contains(s[strings.LastIndexByte(s, '@')+1:], ".") {
		return "", ErrInvalidEmail
	}
	return strings.ToLower(s), nil
}

// ValidRole checks a role name.
func ValidRole(r string) error {
	for _, x := range Roles {
		if r == x {
			return nil
		}
	}
	return ErrInvalidRole
}

// ValidPassword checks a new password's length: long enough to resist
// guessing at the login's rate limit, short enough to bound hashing work.
func ValidPassword(p string) error {
	if len(p) < 12 || len(p) > 256 {
		return ErrInvalidPassword
	}
	return nil
}

// Params are argon2id's costs. Default follows RFC 9106's second
// recommendation scaled to OWASP's minimum (19 MiB, 2 passes, 1 lane);
// the costs are written into each hash, so raising them later keeps old
// hashes verifiable.
type Params struct {
	Memory  uint32 // KiB
	Time    uint32
	Threads uint8
}

// Default are the costs new hashes use.
var Default = Params{Memory: 19 * 1024, Time: 2, Threads: 1}

// MaxMemory bounds the memory a stored hash may ask for at verification
// (a tampered record must not make a login allocate gigabytes).
const MaxMemory = 256 * 1024

// kdf admits at most two argon2id runs at once per process, so a burst of
// admin calls or logins cannot take all memory or cores.
var kdf = make(chan struct{}, 2)

func idKey(password, salt []byte, p Params) []byte {
	kdf <- struct{}{}
	defer func() { <-kdf }()
	return argon2.IDKey(password, salt, p.Time, p.Memory, p.Threads, 32)
}

// Hash returns the PHC string of password under p:
// $argon2id$v=19$m=…,t=…,p=…$salt$key (base64 without padding).
func Hash(password string, p Params) string {
	var salt [16]byte
	if _, err := rand.Read(salt[:]); err != nil {
		panic("users: crypto/rand failed: " + err.Error())
	}
	key := idKey([]byte(password), salt[:], p)
	b := base64.RawStdEncoding
	return fmt.Sprintf("$argon2id$v=%d$m=%d,t=%d,p=%d$%s$%s", argon2.Version, p.Memory, p.Time, p.Threads, b.EncodeToString(salt[:]), b.EncodeToString(key))
}

// Verify reports whether password matches the PHC string h, comparing in
// constant time. A malformed h never matches.
func Verify(h, password string) bool {
	var v int
	var p Params
	parts := strings.Split(h, "$")
	if len(parts) != 6 || parts[1] != "argon2id" {
		return false
	}
	if _, err := fmt.Sscanf(parts[2], "v=%d", &v); err != nil || v != argon2.Version {
		return false
	}
	if _, err := fmt.Sscanf(parts[3], "m=%d,t=%d,p=%d", &p.Memory, &p.Time, &p.Threads); err != nil {
		return false
	}
	if p.Memory < 8 || p.Memory > MaxMemory || p.Time < 1 || p.Time > 10 || p.Threads < 1 || p.Threads > 16 {
		return false
	}
	salt, err1 := base64.RawStdEncoding.DecodeString(parts[4])
	key, err2 := base64.RawStdEncoding.DecodeString(parts[5])
	if err1 != nil || err2 != nil || len(salt) < 8 || len(key) != 32 {
		return false
	}
	got := idKey([]byte(password), salt, p)
	return subtle.ConstantTimeCompare(got, key) == 1
}

// dummy is verified against when no user has the email, so an unknown
// address costs the same time as a wrong password.
var dummy = Hash("trustd-console-no-such-user", Default)

// VerifyMissing spends a verification's time and returns false.
func VerifyMissing(password string) bool {
	Verify(dummy, password)
	return false
}

// Errors lists the codes above, for the contract.
var Errors = []*errcode.Code{ErrInvalidEmail, ErrInvalidRole, ErrInvalidPassword}
