package main

import (
	"reflect"
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
