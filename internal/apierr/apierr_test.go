package apierr

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestMessage(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want string
	}{
		{New(Validation, "bad %s", "input"), "bad input"},
		{fmt.Errorf("wrapped: %w", New(AccessDenied, "no")), "no"},
		{errors.New("storage: /var/lib/tenantdb/db/000123.sst: corrupt"), InternalMessage},
		{&Error{Kind: Internal}, InternalMessage},
	} {
		if got := Message(tc.err); got != tc.want {
			t.Errorf("Message(%v) = %q, want %q", tc.err, got, tc.want)
		}
	}
}

func TestClip(t *testing.T) {
	short := strings.Repeat("a", maxEcho)
	if got := Clip(short); got != short {
		t.Errorf("Clip of %d bytes changed it: %q", len(short), got)
	}
	long := strings.Repeat("b", 1000)
	if got, want := Clip(long), strings.Repeat("b", maxEcho)+"..."; got != want {
		t.Errorf("Clip(1000 bytes) = %d bytes, want %d", len(got), len(want))
	}
	// A multi-byte character straddling the limit is dropped whole.
	s := strings.Repeat("c", maxEcho-1) + "é" + "tail"
	got := Clip(s)
	if !utf8.ValidString(got) || got != strings.Repeat("c", maxEcho-1)+"..." {
		t.Errorf("Clip cut a character: %q", got)
	}
}
