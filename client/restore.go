package client

import (
	"context"
	"time"
)

// RestoreRequest is the body of POST /v1/tenants/{tenant}/restore: an
// in-place restore of the tenant environment's items to a past time.
type RestoreRequest struct {
	// ToTime is the time to restore to: afterwards a consistent read
	// returns what one at that time returned.
	ToTime time.Time `json:"to_time"`
	// Tables to restore; none means every table the tenant sees (its view
	// of shared tables and its own tables) that holds its items.
	Tables []string `json:"tables,omitempty"`
}

// TenantRestore is an in-place restore of a tenant environment, as
// POST and GET /v1/tenants/{tenant}/restore answer it.
type TenantRestore struct {
	ID     string    `json:"id"`
	Tenant string    `json:"tenant"`
	Env    string    `json:"env"`
	ToTime time.Time `json:"to_time"`
	// UndoTo is the moment just before the restore's first write:
	// restoring to it undoes the restore.
	UndoTo   time.Time  `json:"undo_to"`
	Started  time.Time  `json:"started"`
	Finished *time.Time `json:"finished,omitempty"`
	// State is "running" (the tenant's reads and writes of the tables
	// are refused until it is "done").
	State string `json:"state"`
	// Running says the server is working on it now (a running restore
	// that is not resumes at the server's next start or at the next
	// request to run it again).
	Running bool           `json:"running"`
	Tables  []RestoreTable `json:"tables"`
	// Skipped are the tables the tenant never held an item of.
	Skipped []string `json:"skipped,omitempty"`
	// Error is why the last attempt stopped, if it did.
	Error string `json:"error,omitempty"`
}

// RestoreTable is one table of a TenantRestore and its progress.
type RestoreTable struct {
	Name string `json:"name"`
	// Keys is the number of item keys changed since ToTime (known once
	// the table's change log is read); Checked how many are done;
	// Changed how many needed a write.
	Keys    int64 `json:"keys"`
	Checked int64 `json:"checked"`
	Changed int64 `json:"changed"`
	Done    bool  `json:"done"`
}

// StartRestore starts an in-place restore of the tenant environment of
// the Client's key (an admin key of the tenant, or an admin session the
// operator mints) and returns at once; Restore shows its progress.
func (c *Client) StartRestore(ctx context.Context, tenant string, req RestoreRequest) (TenantRestore, error) {
	var out TenantRestore
	return out, c.do(ctx, "POST", tenantPath(tenant)+"/restore", c.Key, req, &out)
}

// Restore returns the tenant environment's restore: the one running, or
// the last one.
func (c *Client) Restore(ctx context.Context, tenant string) (TenantRestore, error) {
	var out TenantRestore
	return out, c.do(ctx, "GET", tenantPath(tenant)+"/restore", c.Key, nil, &out)
}
