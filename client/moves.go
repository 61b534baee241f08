package client

import (
	"context"
	"time"
)

// MoveRequest asks to move a tenant's data between the pool (the server's
// main store, shared by tenants) and the tenant's own silo store, online.
type MoveRequest struct {
	// Table names the shared table whose data of the tenant moves; ""
	// moves every shared table that is not a silo table.
	Table string `json:"table,omitempty"`
	// To is "silo" or "pool".
	To string `json:"to"`
}

// TenantMove is the state of a move of a tenant's data of one table.
type TenantMove struct {
	// Table is empty for a tier move: the end of a move of all the
	// tenant's shared tables, which sets its tier to Tier once they
	// have moved.
	Table string `json:"table"`
	Tier  string `json:"tier,omitempty"`
	From  string `json:"from"`
	To    string `json:"to"`
	// Phase is "copying", "catching-up", "cutover", "cleaning", "done",
	// "failed" (rolled back: the data stayed where it was) or
	// "unchanged" (it was there already).
	Phase    string    `json:"phase"`
	Started  time.Time `json:"started"`
	Finished time.Time `json:"finished,omitzero"`
	// Items copied of ItemsTotal; Changes caught up from the change log.
	Items      int64 `json:"items"`
	ItemsTotal int64 `json:"items_total"`
	Changes    int64 `json:"changes"`
	// Attempts counts cutovers begun; BlockedMS is how long the tenant's
	// writes of the table were held by the one that moved it.
	Attempts  int     `json:"attempts"`
	BlockedMS float64 `json:"blocked_ms"`
	Error     string  `json:"error,omitempty"`
}

// Done reports whether the move has ended (done, failed or unchanged).
func (m TenantMove) Done() bool { return !m.Finished.IsZero() }

// MoveTenant starts moving a tenant's data (operator only) and returns
// each table's move; Moves reports their progress.
func (c *Client) MoveTenant(ctx context.Context, tenant string, req MoveRequest) ([]TenantMove, error) {
	var out []TenantMove
	return out, c.do(ctx, "POST", tenantPath(tenant)+"/moves", c.Key, req, &out)
}

// Moves returns a tenant's moves (operator only): those running, then
// the recent finished ones, newest first.
func (c *Client) Moves(ctx context.Context, tenant string) ([]TenantMove, error) {
	var out []TenantMove
	return out, c.do(ctx, "GET", tenantPath(tenant)+"/moves", c.Key, nil, &out)
}
