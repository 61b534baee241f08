package isolation

import (
	"context"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tenantdb/tenantdb/client"
	"github.com/tenantdb/tenantdb/tests/harness"
)

// TestOperatorBackupRefusesTenants: the operator backup (POST
// /v1/backups, `tenantdb backup create`) copies every tenant's data, so
// only the operator may ask for it. A tenant's admin, app and read keys
// and its temporary credentials are refused with 403 before anything is
// written, and each refusal is in the tenant's own audit log.
func TestOperatorBackupRefusesTenants(t *testing.T) {
	t.Parallel()
	srv := harness.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	a := srv.NewTenant(t, "opbackupA", "admin")
	keys := map[string]harness.Credential{"admin": a, "app": srv.NewKey(t, a.TenantID, "app"), "read": srv.NewKey(t, a.TenantID, "read")}
	sess, err := client.New(srv.Endpoint, a.Key).CreateSession(ctx, a.TenantID, client.SessionRequest{Role: "admin"})
	if err != nil {
		t.Fatal(err)
	}
	repo := filepath.Join(t.TempDir(), "evil-backup")
	attempts := 0
	for role, k := range keys {
		c := client.New(srv.Endpoint, k.Key)
		_, err := c.Backup(ctx, client.BackupRequest{To: repo}, nil)
		attempts++
		var e *client.Error
		if !errors.As(err, &e) || e.Status != http.StatusForbidden {
			t.Errorf("LEAK: backup create with A's %s key: %v; want 403", role, err)
		}
	}
	sc := &client.Client{Endpoint: srv.Endpoint, Session: &sess}
	_, err = sc.Backup(ctx, client.BackupRequest{To: repo}, nil)
	attempts++
	var e *client.Error
	if !errors.As(err, &e) || e.Status != http.StatusForbidden {
		t.Errorf("LEAK: backup create with A's admin session: %v; want 403", err)
	}
	if _, err := os.Stat(repo); !os.IsNotExist(err) {
		t.Errorf("LEAK: a refused backup wrote %s: %v", repo, err)
	}

	page, err := client.New(srv.Endpoint, a.Key).Audit(ctx, a.TenantID, client.AuditQuery{Limit: 1000})
	if err != nil {
		t.Fatal(err)
	}
	var denied int64
	for _, r := range page.Records {
		if r.Action == "admin:POST /v1/backups" && strings.HasPrefix(r.Outcome, "denied") {
			denied += max(r.Count, 1)
		}
	}
	if denied < int64(attempts) {
		t.Errorf("A's audit log holds %d refused backups; A attempted %d", denied, attempts)
	}
}
