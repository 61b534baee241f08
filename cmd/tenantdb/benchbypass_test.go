//go:build benchbypass

package main

import (
	"io"
	"log/slog"
	"testing"
)

// TestBenchBypassFlag: a build with the benchbypass tag accepts
// --bench-bypass-tenancy and passes it to the node.
func TestBenchBypassFlag(t *testing.T) {
	getenv := func(string) string { return "" }
	for _, c := range []struct {
		args []string
		want bool
	}{{nil, false}, {[]string{"--bench-bypass-tenancy"}, true}} {
		cfg, err := parseServeConfig(c.args, getenv, io.Discard)
		if err != nil {
			t.Fatalf("%v: %v", c.args, err)
		}
		if got := cfg.nodeOptions("127.0.0.1:1", "", slog.New(slog.DiscardHandler)).BenchBypassTenancy; got != c.want {
			t.Errorf("%v: node.Options.BenchBypassTenancy = %v, want %v", c.args, got, c.want)
		}
	}
}
