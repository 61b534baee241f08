package main

import (
	"encoding/json"
	"strings"
	"testing"
)

// tenantdb verify against a real server: a JSON report with every family,
// no leak, exit 0; and the text report. (internal/tenancy's tests prove
// that it finds an injected leak and fails.)
func TestVerify(t *testing.T) {
	url, creds := cliServer(t)
	out, errs, code := cli(t, "verify", "--endpoint", url, "--credentials", creds, "--json")
	if code != 0 {
		t.Fatalf("verify --json: exit %d\n%s\n%s", code, out, errs)
	}
	var rep struct {
		Attempts *int `json:"attempts"`
		Leaks    *int `json:"leaks"`
		Families []struct {
			Family   string `json:"family"`
			Attempts int    `json:"attempts"`
			Leaks    int    `json:"leaks"`
			Skipped  string `json:"skipped"`
		} `json:"families"`
	}
	dec := json.NewDecoder(strings.NewReader(out))
	if err := dec.Decode(&rep); err != nil || dec.More() {
		t.Fatalf("verify --json output is not one JSON object: %v\n%s", err, out)
	}
	if rep.Attempts == nil || rep.Leaks == nil || *rep.Attempts < 100 || *rep.Leaks != 0 || len(rep.Families) < 14 {
		t.Fatalf("report %s", out)
	}
	for _, f := range rep.Families {
		// This server has no --export-root: the exports family is skipped,
		// saying so; every other runs.
		if f.Family == "exports" {
			if !strings.Contains(f.Skipped, "export root") || f.Attempts != 0 {
				t.Errorf("family %+v, want skipped for want of an export root", f)
			}
			continue
		}
		if f.Attempts == 0 || f.Leaks != 0 || f.Skipped != "" {
			t.Errorf("family %+v", f)
		}
	}
	if !strings.Contains(errs, "admin-routes") {
		t.Errorf("no progress on stderr: %q", errs)
	}

	out, errs, code = cli(t, "verify", "--endpoint", url, "--credentials", creds, "--quiet")
	if code != 0 || !strings.Contains(out, "no leaks") || !strings.Contains(out, "FAMILY") || !strings.Contains(out, "SKIPPED exports: ") || errs != "" {
		t.Fatalf("verify: exit %d\n%s\n%s", code, out, errs)
	}

	// A key that is not one: refused before anything, exit 1.
	_, errs, code = cli(t, "verify", "--endpoint", url, "--key", "sk_nope_nope")
	if code != 1 {
		t.Errorf("verify with a bad key: exit %d, want 1 (%s)", code, errs)
	}
}
