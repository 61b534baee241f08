package main

import (
	"bytes"
	"context"
	"reflect"
	"strings"
	"testing"
)

func TestHoistGlobalFlags(t *testing.T) {
	for _, tc := range []struct{ in, want []string }{
		{[]string{"--endpoint", "http://x", "tenant", "list"}, []string{"tenant", "list", "--endpoint", "http://x"}},
		{[]string{"--json", "--endpoint=http://x", "tenant", "create", "a"}, []string{"tenant", "create", "a", "--json", "--endpoint=http://x"}},
		{[]string{"tenant", "list", "--json"}, []string{"tenant", "list", "--json"}},
		{[]string{"--help"}, []string{"--help"}},
		{[]string{"--endpoint", "http://x"}, []string{"--endpoint", "http://x"}},
	} {
		if got := hoistGlobalFlags(tc.in); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("hoistGlobalFlags(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// TestHelpExitsZero: -h and --help after a command print its usage and
// succeed, as Go's flag.ExitOnError does; an unknown flag still fails.
func TestHelpExitsZero(t *testing.T) {
	for _, args := range [][]string{{"verify", "--help"}, {"tenant", "create", "-h"}, {"serve", "-help"}} {
		var out, errOut bytes.Buffer
		if code := run(context.Background(), args, &out, &errOut); code != 0 {
			t.Errorf("%v: exit %d, want 0 (stderr %q)", args, code, errOut.String())
		}
		if !strings.Contains(out.String()+errOut.String(), "usage") {
			t.Errorf("%v printed no usage: %q %q", args, out.String(), errOut.String())
		}
	}
	var out, errOut bytes.Buffer
	if code := run(context.Background(), []string{"verify", "--no-such-flag"}, &out, &errOut); code == 0 {
		t.Errorf("an unknown flag exited 0")
	}
}
