package admin

import (
	"context"
	"net/http"

	"github.com/tenantdb/tenantdb/internal/apierr"
	"github.com/tenantdb/tenantdb/internal/catalog"
	"github.com/tenantdb/tenantdb/internal/keyspace"
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
	t, err := h.o.Catalog.CreateTenant(c.ctx, nt)
	if err != nil {
		return err
	}
	if r, ok := h.o.Dropper.(TenantReviver); ok && req.ID != "" {
		r.ReviveTenant(t.ID)
	}
	if h.quotas != nil && req.ID != "" {
		h.quotas.Remember(t.ID)
	}
	h.record(c, t.ID, "tenant.create", t.ID.String())
	h.record(c, keyspace.Platform, "tenant.create", t.ID.String())
	if req.OwnerSub != "" {
		h.record(c, t.ID, "member.add", "sub:"+req.OwnerSub)
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
	return WriteJSON(c.w, http.StatusOK, tenantOut(c.tenant))
}

func (h *Handler) suspendTenant(c *call) error {
	return h.setStatus(c, catalog.Suspended, "tenant.suspend")
}

func (h *Handler) resumeTenant(c *call) error {
	return h.setStatus(c, catalog.Active, "tenant.resume")
}

func (h *Handler) setStatus(c *call, s catalog.Status, action string) error {
	t, err := h.o.Catalog.SetStatus(c.ctx, c.tenant.ID, s)
	if err != nil {
		return err
	}
	h.record(c, t.ID, action, t.ID.String())
	h.record(c, keyspace.Platform, action, t.ID.String())
	return WriteJSON(c.w, http.StatusOK, tenantOut(t))
}

func (h *Handler) deleteTenant(c *call) error {
	var drop func(context.Context, tenancy.TenantID) error
	if h.o.Dropper != nil {
		drop = h.o.Dropper.DropTenant
	}
	id := c.tenant.ID
	// NB: the log is retired before the tenant's range is deleted, so that
	// no late record (a denial racing the deletion) lands in it after.
	h.o.Audit.Retire(id)
	// NB: so are the checkpoints of its token buckets.
	if h.quotas != nil {
		h.quotas.Forget(id)
	}
	if err := h.o.Catalog.DeleteTenant(c.ctx, id, drop); err != nil {
		h.o.Audit.Unretire(id)
		if h.quotas != nil {
			h.quotas.Remember(id)
		}
		return err
	}
	h.o.Audit.Forget(id)
	h.record(c, keyspace.Platform, "tenant.delete", id.String())
	out := tenantOut(c.tenant)
	out.Status = "deleted"
	return WriteJSON(c.w, http.StatusOK, out)
}
