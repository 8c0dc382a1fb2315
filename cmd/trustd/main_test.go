package main

import "testing"

// TestHelpIsNoFailure: --help prints the usage and run returns nil (exit 0).
func TestHelpIsNoFailure(t *testing.T) {
	for _, arg := range []string{"--help", "-h"} {
		if err := run([]string{arg}); err != nil {
			t.Fatalf("%s: %v", arg, err)
		}
	}
	if err := run([]string{"--no-such-flag"}); err == nil {
		t.Fatal("an unknown flag is an error")
	}
}
