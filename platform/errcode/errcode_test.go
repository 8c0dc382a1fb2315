package errcode

import (
	"errors"
	"fmt"
	"testing"
)

var errSample = New("sample-code", Conflict, "A sample failure.")

func TestFrom(t *testing.T) {
	tests := []struct {
		name    string
		err     error
		wantOK  bool
		wantMsg string
	}{
		{"a bare code shows its meaning", errSample, true, "A sample failure."},
		{"a detailed code shows its detail", errSample.With("field %s", "x"), true, "field x"},
		{"a wrapped detailed code is still found", fmt.Errorf("ctx: %w", errSample.With("d")), true, "d"},
		{"an unrelated error is not a domain error", errors.New("boom"), false, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, msg, ok := From(tt.err)
			if ok != tt.wantOK || msg != tt.wantMsg {
				t.Fatalf("From = %v %q %v, want ok=%v msg=%q", c, msg, ok, tt.wantOK, tt.wantMsg)
			}
			if ok && (c != errSample || !errors.Is(tt.err, errSample)) {
				t.Fatalf("code %v does not match the sentinel", c)
			}
		})
	}
}

// A module's sentinel for a shared code keeps its own words and matches
// both itself and the shared code; its With refines the words further.
func TestDetailSentinel(t *testing.T) {
	mine := errSample.Detail("in this module's words")
	tests := []struct {
		name    string
		err     error
		wantMsg string
	}{
		{"the bare sentinel shows its words", mine, "in this module's words"},
		{"a wrapped sentinel still shows its words", fmt.Errorf("%w: disk gone", mine), "in this module's words"},
		{"the sentinel's With shows the occurrence's words", mine.With("slot %d", 3), "slot 3"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, msg, ok := From(tt.err)
			if !ok || c != errSample || msg != tt.wantMsg {
				t.Fatalf("From = %v %q %v, want %v %q", c, msg, ok, errSample, tt.wantMsg)
			}
			if !errors.Is(tt.err, mine) || !errors.Is(tt.err, errSample) {
				t.Fatalf("%v does not match both the sentinel and its code", tt.err)
			}
		})
	}
	if other := errSample.Detail("another module"); errors.Is(mine, other) {
		t.Fatal("two modules' sentinels of one code match each other")
	}
}
