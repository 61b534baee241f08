package gateways

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/tenantdb/tenantdb/client"
	"github.com/tenantdb/tenantdb/tests/harness"
)

// TestUnservedAdminOperations: what a gateway does not serve (moves
// between pool and silo stores, operator backups; in-place restores are
// served: TestTenantRestoreAcrossGateways)
// answers the operator a ValidationException that says why, not "no
// such admin endpoint", as the README's table of the remote backend
// says; tenant keys are still refused first.
func TestUnservedAdminOperations(t *testing.T) {
	t.Parallel()
	gw := harness.StartCluster(t, 1, harness.Options{}).Gateways[0]
	ctx := context.Background()
	app := gw.NewTenant(t, "unserved", "admin")
	op := gw.Admin()
	check := func(what string, err error, status int, words string) {
		t.Helper()
		var e *client.Error
		if !errors.As(err, &e) {
			t.Fatalf("%s: %v, want an API error", what, err)
		}
		if e.Status != status || !strings.Contains(e.Message, words) {
			t.Errorf("%s: %d %s %q, want %d and a message with %q", what, e.Status, e.Code, e.Message, status, words)
		}
	}
	_, err := op.MoveTenant(ctx, app.TenantID, client.MoveRequest{To: "silo"})
	check("move", err, http.StatusBadRequest, "gateway over a remote")
	_, err = op.Moves(ctx, app.TenantID)
	check("moves", err, http.StatusBadRequest, "gateway over a remote")
	tenantAdmin := &client.Client{Endpoint: gw.Endpoint, Key: app.Key}
	_, err = tenantAdmin.MoveTenant(ctx, app.TenantID, client.MoveRequest{To: "silo"})
	check("move by the tenant's admin", err, http.StatusForbidden, "")
}
