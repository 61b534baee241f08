package main

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tenantdb/tenantdb/internal/auth"
)

// TestVerifyGateway runs `tenantdb verify` against `tenantdb serve
// --backend dynamodb` over a second tenantdb as the engine (as
// TestServeOverRemoteBackend starts them): no leak, exit 0, and the
// families whose features the remote backend refuses are reported as
// skipped with the server's reason, not as passes and not as leaks.
func TestVerifyGateway(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: starts an engine and a gateway")
	}
	_, _, gateway, dir := startGateway(t, "gwv-")

	stdout, stderr, code := cli(t, "verify", "--endpoint", gateway, "--credentials", filepath.Join(dir, auth.OperatorCredentialsFile), "--json")
	if code != 0 {
		t.Fatalf("verify against the gateway: exit %d\n%s\n%s", code, stdout, stderr)
	}
	var rep struct {
		Attempts, Leaks, Inconclusive, Skipped int
		Families                               []struct {
			Family   string `json:"family"`
			Attempts int    `json:"attempts"`
			Leaks    int    `json:"leaks"`
			Skipped  string `json:"skipped"`
		} `json:"families"`
	}
	if err := json.Unmarshal([]byte(stdout), &rep); err != nil {
		t.Fatalf("verify --json: %v\n%s", err, stdout)
	}
	if rep.Leaks != 0 || rep.Inconclusive != 0 || rep.Attempts < 200 {
		t.Fatalf("report: %s", stdout)
	}
	skipped := map[string]string{}
	for _, f := range rep.Families {
		if f.Skipped != "" {
			skipped[f.Family] = f.Skipped
		} else if f.Attempts == 0 {
			t.Errorf("family %s made no attempt and was not skipped", f.Family)
		}
	}
	for _, f := range []string{"exports"} {
		if skipped[f] == "" {
			t.Errorf("family %s not skipped over the remote backend", f)
		}
	}
	// Streams, backups, point-in-time recovery, webhook subscriptions
	// and aggregates are served over the stand-in engine: attacked, not
	// skipped.
	for _, f := range []string{"streams", "backups", "subscriptions", "aggregates"} {
		if skipped[f] != "" {
			t.Errorf("family %s skipped over the remote backend: %s", f, skipped[f])
		}
	}
	if rep.Skipped != len(skipped) || !strings.Contains(stderr, "exports         skipped: ") {
		t.Errorf("skipped %d (families %v); progress:\n%s", rep.Skipped, skipped, stderr)
	}
}
