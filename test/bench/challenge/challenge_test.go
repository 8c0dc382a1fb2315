package challenge

import (
	"context"
	"crypto/pbkdf2"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"strconv"
	"testing"

	"github.com/trustd/trustd/test/bench/internal/faketrustd"
	"github.com/trustd/trustd/test/bench/provision"
	"github.com/trustd/trustd/verify/pow"
)

func TestSolveFindsTheFirstQualifyingNonce(t *testing.T) {
	salt := []byte("0123456789abcdef")
	p := PoW{Algorithm: "pbkdf2-sha256", Salt: base64.RawURLEncoding.EncodeToString(salt), Iterations: 16, Difficulty: 6}
	n, err := Solve(context.Background(), p)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i <= n; i++ {
		dk, _ := pbkdf2.Key(sha256.New, strconv.Itoa(i), salt, 16, 32)
		if ok := pow.LeadingZeroBits(dk) >= 6; ok != (i == n) {
			t.Fatalf("nonce %d qualifies=%v, solution was %d", i, ok, n)
		}
	}
}

func TestSolveRejectsBadInput(t *testing.T) {
	if _, err := Solve(context.Background(), PoW{Algorithm: "sha1"}); !errors.Is(err, ErrUnsupported) {
		t.Fatalf("want ErrUnsupported, got %v", err)
	}
	if _, err := Solve(context.Background(), PoW{Algorithm: "pbkdf2-sha256", Salt: "!!", Iterations: 1}); err == nil {
		t.Fatal("want an error for a bad salt")
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := Solve(ctx, PoW{Algorithm: "pbkdf2-sha256", Salt: "AA", Iterations: 1, Difficulty: 256}); !errors.Is(err, context.Canceled) {
		t.Fatalf("want the context's error, got %v", err)
	}
}

func TestMintManyAgainstTheFake(t *testing.T) {
	fake := faketrustd.Start(t, "adm")
	a, err := provision.NewAdmin(fake.URL, "adm")
	if err != nil {
		t.Fatal(err)
	}
	env, err := a.Setup(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	m := NewMinter(fake.URL, "http://"+provision.BenchHost, env.Site.SiteKey, 4)
	var calls int
	toks, err := MintMany(context.Background(), m, 30, 4, func(done, want int) { calls++ })
	if err != nil || len(toks) != 30 {
		t.Fatalf("minted %d: %v", len(toks), err)
	}
	seen := map[string]bool{}
	for _, tok := range toks {
		if seen[tok] {
			t.Fatalf("token %s minted twice", tok)
		}
		seen[tok] = true
	}
	if calls == 0 {
		t.Fatal("progress never reported")
	}
}

func TestMintManyGivesUpOnAWrongSite(t *testing.T) {
	fake := faketrustd.Start(t, "adm")
	m := NewMinter(fake.URL, "http://"+provision.BenchHost, "no-such-key", 2)
	toks, err := MintMany(context.Background(), m, 1000, 2, nil)
	if err == nil || len(toks) != 0 {
		t.Fatalf("want a failure with no tokens, got %d tokens, %v", len(toks), err)
	}
}
