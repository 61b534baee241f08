package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tenantdb/tenantdb/internal/admin"
	"github.com/tenantdb/tenantdb/internal/audit"
	"github.com/tenantdb/tenantdb/internal/auth"
	"github.com/tenantdb/tenantdb/internal/node"
)

// cliServer runs a node in-process and returns its URL and the path of
// an operator credentials file.
func cliServer(t *testing.T) (string, string) {
	t.Helper()
	ctx := context.Background()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	n, err := node.Open(ctx, node.Options{InMemory: true, Endpoint: l.Addr().String()})
	if err != nil {
		l.Close()
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- n.Serve(l) }()
	t.Cleanup(func() {
		sctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		n.Shutdown(sctx)
		<-served
		n.Close()
	})
	path := filepath.Join(t.TempDir(), auth.OperatorCredentialsFile)
	if err := auth.WriteCredentialsFile(path, auth.OperatorProfile, n.Bootstrap().Operator, "us-east-1", ""); err != nil {
		t.Fatal(err)
	}
	return "http://" + l.Addr().String(), path
}

// cli runs tenantdb with args and returns stdout, stderr and the exit code.
func cli(t *testing.T, args ...string) (string, string, int) {
	t.Helper()
	var out, errb bytes.Buffer
	code := run(context.Background(), args, &out, &errb)
	return out.String(), errb.String(), code
}

func TestCLI(t *testing.T) {
	url, creds := cliServer(t)
	t.Setenv("TENANTDB_ENDPOINT", url)
	t.Setenv("TENANTDB_CREDENTIALS", creds)

	// tenant create NAME --json: exactly one JSON object on stdout.
	out, errs, code := cli(t, "tenant", "create", "Acme Corp", "--json")
	if code != 0 {
		t.Fatalf("tenant create: %d %s", code, errs)
	}
	var ten map[string]any
	dec := json.NewDecoder(strings.NewReader(out))
	if err := dec.Decode(&ten); err != nil || dec.More() {
		t.Fatalf("tenant create --json output is not one JSON object: %q", out)
	}
	id, _ := ten["id"].(string)
	if len(id) != 32 || ten["name"] != "Acme Corp" || ten["status"] != "active" {
		t.Fatalf("tenant create --json = %v", ten)
	}

	// Flags before and after positional arguments, --endpoint given explicitly.
	if _, errs, code := cli(t, "tenant", "--endpoint", url, "create", "--slug", "beta", "Beta Inc", "--json"); code != 0 {
		t.Fatalf("flags around args: %s", errs)
	}

	out, _, code = cli(t, "tenant", "list")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if code != 0 || len(lines) != 3 || !strings.HasPrefix(lines[0], "ID") || !strings.Contains(out, "acme-corp") {
		t.Fatalf("tenant list:\n%s", out)
	}
	// Aligned columns: every row has its STATUS column at the same offset.
	col := strings.Index(lines[0], "STATUS")
	for _, l := range lines[1:] {
		if !strings.HasPrefix(l[col:], "active") {
			t.Fatalf("columns not aligned:\n%s", out)
		}
	}
	out, _, _ = cli(t, "tenant", "list", "--json")
	var list []map[string]any
	if err := json.Unmarshal([]byte(out), &list); err != nil || len(list) != 2 {
		t.Fatalf("tenant list --json: %q", out)
	}

	// key create --json has the fields scripts use.
	out, errs, code = cli(t, "key", "create", "--tenant", id, "--role", "read", "--env", "test", "--json")
	if code != 0 {
		t.Fatalf("key create: %s", errs)
	}
	var key map[string]any
	if err := json.Unmarshal([]byte(out), &key); err != nil {
		t.Fatalf("key create --json: %q", out)
	}
	for _, f := range []string{"tenant_id", "access_key_id", "secret_access_key", "key", "role", "env"} {
		if key[f] == nil || key[f] == "" {
			t.Errorf("key create --json lacks %s: %v", f, key)
		}
	}
	if key["tenant_id"] != id || key["role"] != "read" || key["env"] != "test" || key["key"] != key["access_key_id"].(string)+"_"+key["secret_access_key"].(string) {
		t.Fatalf("key create --json = %v", key)
	}
	akid := key["access_key_id"].(string)

	// The new key can be used by the CLI itself (--key), e.g. for whoami-like reads.
	if _, errs, code := cli(t, "tenant", "show", id, "--key", key["key"].(string)); code == 0 || !strings.Contains(errs, "AccessDenied") {
		t.Fatalf("read key on the admin API: %d %s", code, errs)
	}

	out, _, _ = cli(t, "key", "list", "--tenant", "acme-corp")
	if !strings.Contains(out, akid) || strings.Contains(out, key["secret_access_key"].(string)) {
		t.Fatalf("key list:\n%s", out)
	}
	out, errs, code = cli(t, "key", "rotate", akid, "--json")
	if code != 0 || !strings.Contains(out, "secret_access_key") {
		t.Fatalf("key rotate: %d %s %s", code, out, errs)
	}
	var rotated admin.Key
	json.Unmarshal([]byte(out), &rotated)
	if _, errs, code := cli(t, "key", "revoke", "--tenant", id, rotated.KeyID); code != 0 {
		t.Fatalf("key revoke: %s", errs)
	}
	out, _, _ = cli(t, "key", "list", "--tenant", id, "--json")
	var keys []admin.Key
	json.Unmarshal([]byte(out), &keys)
	if len(keys) != 2 || keys[0].Status != "revoked" || keys[1].Status != "revoked" {
		t.Fatalf("keys after rotate and revoke: %+v", keys)
	}

	out, errs, code = cli(t, "session", "--tenant", id, "--role", "read", "--tables", "A,B", "--json")
	var sess map[string]any
	if code != 0 || json.Unmarshal([]byte(out), &sess) != nil || sess["Version"] != float64(1) || sess["SessionToken"] == "" {
		t.Fatalf("session: %d %s %s", code, out, errs)
	}

	for _, verb := range []string{"suspend", "resume"} {
		if _, errs, code := cli(t, "tenant", verb, id); code != 0 {
			t.Fatalf("tenant %s: %s", verb, errs)
		}
	}
	out, _, code = cli(t, "audit", "--tenant", id)
	for _, want := range []string{"tenant.create", "key.create", "key.rotate", "key.revoke", "session.issue", "tenant.suspend", "tenant.resume", "denied"} {
		if !strings.Contains(out, want) {
			t.Errorf("audit lacks %s:\n%s", want, out)
		}
	}
	out, _, code = cli(t, "audit", "--tenant", id, "--verify", "--json")
	if code != 0 || !strings.Contains(out, `"ok": true`) {
		t.Fatalf("audit --verify: %d %s", code, out)
	}
	out, _, code = cli(t, "audit", "--json", "--limit", "2")
	var recs []audit.Record
	if code != 0 || json.Unmarshal([]byte(out), &recs) != nil || len(recs) != 2 {
		t.Fatalf("platform audit: %d %s", code, out)
	}

	if out, _, code := cli(t, "tenant", "delete", "beta", "--json"); code != 0 || !strings.Contains(out, `"deleted"`) {
		t.Fatalf("tenant delete: %d %s", code, out)
	}

	// Errors go to stderr with a non-zero exit; --json keeps stdout empty.
	out, errs, code = cli(t, "tenant", "show", "nosuch", "--json")
	if code != 1 || out != "" || !strings.Contains(errs, "NotFound") {
		t.Fatalf("unknown tenant: %d %q %q", code, out, errs)
	}
	if _, errs, code := cli(t, "tenant", "list", "--credentials", filepath.Join(t.TempDir(), "none")); code != 1 || !strings.Contains(errs, "no credentials") {
		t.Fatalf("missing credentials: %d %s", code, errs)
	}
	if _, _, code := cli(t, "key", "create"); code != 1 {
		t.Fatalf("key create without --tenant: %d", code)
	}
	if _, _, code := cli(t, "tenant"); code != 2 {
		t.Fatalf("tenant without a command: %d", code)
	}
}
