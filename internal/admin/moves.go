package admin

import (
	"context"
	"fmt"
	"net/http"

	"github.com/tenantdb/tenantdb/client"
	"github.com/tenantdb/tenantdb/internal/apierr"
	"github.com/tenantdb/tenantdb/internal/audit"
	"github.com/tenantdb/tenantdb/internal/catalog"
	"github.com/tenantdb/tenantdb/internal/keyspace"
	"github.com/tenantdb/tenantdb/internal/schema"
	"github.com/tenantdb/tenantdb/internal/tenancy"
)

// Moves moves tenants' data between the pool and their silo stores
// (the embedded engine).
type Moves interface {
	StartMove(ctx context.Context, s tenancy.Scope, table, to string) ([]schema.MoveStatus, error)
	Moves(ctx context.Context, s tenancy.Scope) ([]schema.MoveStatus, error)
	SetMoveHook(fn func(tenant tenancy.TenantID, st schema.MoveStatus))
	SetTierHook(fn func(ctx context.Context, tenant tenancy.TenantID, tier string) error)
}

// ServeMoves adds POST /v1/tenants/{tenant}/moves (start a move) and GET
// /v1/tenants/{tenant}/moves (its progress), for the operator only: where
// a tenant's data lives is the platform's decision (and its cost), so a
// tenant's own admin key is refused like any other tenant's. Starting a
// move is audited in the tenant's log and the platform's; its end (done
// or failed, also after a restart resumed it) in the tenant's log. A
// move of all the tenant's shared tables ends by setting its tier in the
// catalog (tenant.tier in its log and the platform's). With m nil (a
// gateway over a remote engine) both answer a ValidationException saying
// so, after the same permission check.
func (h *Handler) ServeMoves(m Moves) {
	unavailable := apierr.Validationf("moves between the pool and silo stores need the embedded engine, and this server is a gateway over a remote one (spread a hot tenant with tenantdb tenant shard)")
	h.handle("POST /v1/tenants/{tenant}/moves", operatorOnly, func(c *call) error {
		var req client.MoveRequest
		if err := decode(c.r, &req); err != nil {
			return err
		}
		if m == nil {
			return unavailable
		}
		sts, err := m.StartMove(c.ctx, c.s, req.Table, req.To)
		if err != nil {
			return err
		}
		target := fmt.Sprintf("%s table=%s to=%s", c.s.Tenant(), req.Table, req.To)
		h.record(c, c.s, "tenant.move", target)
		h.recordPlatform(c, "tenant.move", target)
		return WriteJSON(c.w, http.StatusAccepted, movesOut(sts))
	})
	h.handle("GET /v1/tenants/{tenant}/moves", operatorOnly, func(c *call) error {
		if m == nil {
			return unavailable
		}
		sts, err := m.Moves(c.ctx, c.s)
		if err != nil {
			return err
		}
		return WriteJSON(c.w, http.StatusOK, movesOut(sts))
	})
	if m == nil {
		return
	}
	m.SetMoveHook(func(tenant tenancy.TenantID, st schema.MoveStatus) {
		// NB: no request: the move runs (or resumed) in the background.
		s := tenancy.SystemScope(tenant, "move")
		ev := audit.Event{Actor: "system:move", Role: "operator", Action: "tenant.move." + st.Phase,
			Target: fmt.Sprintf("table=%s from=%s to=%s items=%d changes=%d blocked_ms=%.3f", st.Table, st.From, st.To, st.Items, st.Changes, st.BlockedMS),
			Reason: st.Error}
		if st.Tier != "" {
			ev.Action, ev.Target = "tenant.tier-move."+st.Phase, fmt.Sprintf("tier from=%s to=%s", st.From, st.To)
		}
		if _, err := h.o.Audit.Append(context.Background(), s, ev); err != nil {
			h.log.Error("audit append failed", "action", ev.Action, "tenant", tenant.String(), "err", err)
		}
	})
	m.SetTierHook(func(ctx context.Context, tenant tenancy.TenantID, tier string) error {
		s := tenancy.SystemScope(tenant, "move")
		old, err := h.o.Catalog.Tenant(ctx, s.Tenant())
		if err != nil {
			return err
		}
		if old.Tier == catalog.Tier(tier) {
			return nil // set before a restart
		}
		if _, err := h.o.Catalog.SetTier(ctx, s, catalog.Tier(tier)); err != nil {
			return err
		}
		ev := audit.Event{Actor: "system:move", Role: "operator", Action: "tenant.tier",
			Target: fmt.Sprintf("%s tier from=%s to=%s", s.Tenant(), old.Tier, tier)}
		for _, sc := range []tenancy.Scope{s, tenancy.SystemScope(keyspace.Platform, "move")} {
			if _, err := h.o.Audit.Append(ctx, sc, ev); err != nil {
				h.log.Error("audit append failed", "action", ev.Action, "tenant", sc.Tenant().String(), "err", err)
			}
		}
		return nil
	})
}

func movesOut(sts []schema.MoveStatus) []client.TenantMove {
	out := make([]client.TenantMove, 0, len(sts))
	for _, s := range sts {
		out = append(out, client.TenantMove{Table: s.Table, Tier: s.Tier, From: s.From, To: s.To, Phase: s.Phase, Started: s.Started, Finished: s.Finished,
			Items: s.Items, ItemsTotal: s.ItemsTotal, Changes: s.Changes, Attempts: s.Attempts, BlockedMS: s.BlockedMS, Error: s.Error})
	}
	return out
}
