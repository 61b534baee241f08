package admin

import (
	"context"
	"net/http"

	"github.com/tenantdb/tenantdb/internal/apierr"
	"github.com/tenantdb/tenantdb/internal/catalog"
	"github.com/tenantdb/tenantdb/internal/tenancy"
)

func (h *Handler) createTenant(c *call) error {
	var req CreateTenantRequest
	if err := decode(c.r, &req); err != nil {
		return err
	}
	nt := catalog.NewTenant{Name: req.Name, Slug: req.Slug, Tier: catalog.Tier(req.Tier), OwnerSub: req.OwnerSub}
	if req.ID != "" {
		id, err := tenancy.ParseTenantID(req.ID)
		if err != nil || id.IsZero() {
			return apierr.Validationf("id must be 32 hex characters and not zero")
		}
		nt.ID = id
	}
	t, err := h.o.Lifecycle.Create(c.ctx, c.s, nt)
	if err != nil {
		return err
	}
	ts, err := h.operatorOn(c, t.ID)
	if err != nil {
		return err
	}
	h.record(c, ts, "tenant.create", t.ID.String())
	h.record(c, c.s, "tenant.create", t.ID.String())
	if req.OwnerSub != "" {
		h.record(c, ts, "member.add", "sub:"+req.OwnerSub)
	}
	return WriteJSON(c.w, http.StatusCreated, tenantOut(t))
}

func (h *Handler) listTenants(c *call) error {
	ts, err := h.o.Catalog.Tenants(c.ctx)
	if err != nil {
		return err
	}
	out := make([]Tenant, 0, len(ts))
	for _, t := range ts {
		out = append(out, tenantOut(t))
	}
	return WriteJSON(c.w, http.StatusOK, out)
}

func (h *Handler) showTenant(c *call) error {
	out := tenantOut(c.tenant)
	ps, err := h.o.Lifecycle.Placement(c.ctx, c.s)
	if err != nil {
		return err
	}
	for _, p := range ps {
		out.Placement = append(out.Placement, TablePlacement{Table: p.Table, Env: p.Env, Isolation: p.Isolation, Store: p.Store, Path: p.Path, HasData: p.HasData, Moving: p.Moving})
	}
	return WriteJSON(c.w, http.StatusOK, out)
}

func (h *Handler) suspendTenant(c *call) error {
	return h.setStatus(c, h.o.Lifecycle.Suspend, "tenant.suspend")
}

func (h *Handler) resumeTenant(c *call) error {
	return h.setStatus(c, h.o.Lifecycle.Resume, "tenant.resume")
}

func (h *Handler) setStatus(c *call, set func(context.Context, tenancy.Scope) (catalog.Tenant, error), action string) error {
	t, err := set(c.ctx, c.s)
	if err != nil {
		return err
	}
	h.record(c, c.s, action, t.ID.String())
	h.recordPlatform(c, action, t.ID.String())
	return WriteJSON(c.w, http.StatusOK, tenantOut(t))
}

func (h *Handler) deleteTenant(c *call) error {
	if err := h.o.Lifecycle.Delete(c.ctx, c.s); err != nil {
		return err
	}
	h.recordPlatform(c, "tenant.delete", c.s.Tenant().String())
	out := tenantOut(c.tenant)
	out.Status = "deleted"
	return WriteJSON(c.w, http.StatusOK, out)
}
