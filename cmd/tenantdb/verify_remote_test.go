package main

import (
	"context"
	"encoding/json"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tenantdb/tenantdb/internal/auth"
	"github.com/tenantdb/tenantdb/internal/node"
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
	ctx := context.Background()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	engine, err := node.Open(ctx, node.Options{InMemory: true, Endpoint: l.Addr().String(), DefaultTenant: true})
	if err != nil {
		l.Close()
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- engine.Serve(l) }()
	t.Cleanup(func() {
		sctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		engine.Shutdown(sctx)
		<-served
		engine.Close()
	})
	engineURL := "http://" + l.Addr().String()
	creds := filepath.Join(t.TempDir(), "engine-credentials")
	if err := auth.WriteCredentialsFile(creds, "engine", engine.Bootstrap().Default, "us-east-1", engineURL); err != nil {
		t.Fatal(err)
	}
	for _, v := range []string{"AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN"} {
		t.Setenv(v, "")
	}
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", creds)
	t.Setenv("AWS_CONFIG_FILE", filepath.Join(t.TempDir(), "none"))
	t.Setenv("AWS_PROFILE", "engine")

	dir := t.TempDir()
	cfg, err := parseServeConfig([]string{"--addr", "127.0.0.1:0", "--data-dir", dir, "--log-level", "error",
		"--backend", "dynamodb", "--backend-endpoint", engineURL, "--backend-region", "us-east-1", "--backend-table-prefix", "gwv-"},
		func(string) string { return "" }, os.Stderr)
	if err != nil {
		t.Fatal(err)
	}
	sctx, cancel := context.WithCancel(ctx)
	out := &lockedBuffer{}
	done := make(chan error, 1)
	go func() { done <- serve(sctx, cfg, out) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("serve returned %v", err)
		}
	})
	var gateway string
	for deadline := time.Now().Add(30 * time.Second); gateway == ""; time.Sleep(10 * time.Millisecond) {
		if m := listeningRE.FindStringSubmatch(out.String()); m != nil {
			gateway = m[1]
		}
		select {
		case err := <-done:
			t.Fatalf("serve returned early: %v\n%s", err, out)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("serve did not start:\n%s", out)
		}
	}

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
	for _, f := range []string{"streams", "backups", "exports", "subscriptions", "aggregates"} {
		if skipped[f] == "" {
			t.Errorf("family %s not skipped over the remote backend", f)
		}
	}
	if rep.Skipped != len(skipped) || !strings.Contains(stderr, "backups         skipped: ") {
		t.Errorf("skipped %d (families %v); progress:\n%s", rep.Skipped, skipped, stderr)
	}
}
