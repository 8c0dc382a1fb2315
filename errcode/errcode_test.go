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
