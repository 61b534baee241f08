//go:build !benchbypass

package main

import (
	"io"
	"strings"
	"testing"
)

// TestNoBenchBypassFlag: the product binary (built without the
// benchbypass tag) has no switch that turns tenancy checks off.
func TestNoBenchBypassFlag(t *testing.T) {
	_, err := parseServeConfig([]string{"--bench-bypass-tenancy"}, func(string) string { return "" }, io.Discard)
	if err == nil || !strings.Contains(err.Error(), "bench-bypass-tenancy") {
		t.Fatalf("serve --bench-bypass-tenancy: err = %v, want flag not defined", err)
	}
}
