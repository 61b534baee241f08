package admin

import (
	"context"
	"net/http"

	"github.com/tenantdb/tenantdb/client"
	"github.com/tenantdb/tenantdb/internal/apierr"
	"github.com/tenantdb/tenantdb/internal/tenancy"
)

// Restores runs in-place restores of a tenant environment (package
// rewind).
type Restores interface {
	Start(ctx context.Context, s tenancy.Scope, req client.RestoreRequest, actor, role string) (client.TenantRestore, error)
	Status(ctx context.Context, s tenancy.Scope) (client.TenantRestore, error)
}

// ServeRestores adds the in-place restore routes: POST
// /v1/tenants/{tenant}/restore starts one (202; the rewind runs in the
// background), GET shows the running or last one. Both are tenant
// routes for an admin key of the tenant, acting on its environment; the
// operator, admitted like to every tenant route, is refused by r (it has
// no access to tenant data) and the refusal is audited.
func (h *Handler) ServeRestores(r Restores) {
	h.handle("POST /v1/tenants/{tenant}/restore", tenantAdmin, func(c *call) error {
		var req client.RestoreRequest
		if err := decode(c.r, &req); err != nil {
			return err
		}
		if req.ToTime.IsZero() {
			return apierr.Validationf("to_time is required (RFC 3339)")
		}
		out, err := r.Start(c.ctx, c.s, req, c.p.KeyID, c.p.Role.String())
		if err != nil {
			return h.refused(c, err)
		}
		return WriteJSON(c.w, http.StatusAccepted, out)
	})
	h.handle("GET /v1/tenants/{tenant}/restore", tenantAdmin, func(c *call) error {
		out, err := r.Status(c.ctx, c.s)
		if err != nil {
			return h.refused(c, err)
		}
		return WriteJSON(c.w, http.StatusOK, out)
	})
}
