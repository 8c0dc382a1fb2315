package session

import (
	"errors"
	"testing"
)

func TestRefuseClientVerdict(t *testing.T) {
	for body, refused := range map[string]bool{
		`{"subject_id":"u1","consent_accepted":true}`:    false,
		`{"selfie":"x","face_match_score":0.99}`:         true,
		`{"frames":[{"image":"x","liveness":"passed"}]}`: true,
		`{"subject_id":"verified"}`:                      false, // a value, not a name
		`{"document":{"Decision":"verify"}}`:             true,
		`not json`:                                       false, // the strict decoder answers it
	} {
		err := RefuseClientVerdict([]byte(body))
		if got := errors.Is(err, ErrClientVerdict); got != refused {
			t.Errorf("%s: %v, want refused=%v", body, err, refused)
		}
	}
}
