package admin

import (
	"context"
	"net/http"

	"github.com/tenantdb/tenantdb/internal/apierr"
	"github.com/tenantdb/tenantdb/internal/audit"
	"github.com/tenantdb/tenantdb/internal/rekey"
	"github.com/tenantdb/tenantdb/internal/tenancy"
)

// ServerKeyOps are the server key's admin operations (the node provides
// them: a rotation touches the key file, the keyring and the credentials).
type ServerKeyOps struct {
	Status func(ctx context.Context) (ServerKeyStatus, error)
	Rotate func(ctx context.Context) (ServerKeyStatus, error)
}

// ServeEncryption adds the encryption routes: a tenant's encryption state
// and data key rotation (the operator's `tenantdb tenant rotate-key`),
// and the server key's state and rotation (`tenantdb server-key rotate`).
func (h *Handler) ServeEncryption(r *rekey.Service, sk ServerKeyOps) {
	log := h.o.Audit
	h.HandleTenant("GET /v1/tenants/{tenant}/encryption", func(w http.ResponseWriter, req *http.Request, p tenancy.Principal, s tenancy.Scope) {
		out, err := r.Status(req.Context(), s)
		if err != nil {
			WriteError(w, err)
			return
		}
		WriteJSON(w, http.StatusOK, out)
	})
	h.HandleTenant("POST /v1/tenants/{tenant}/rotate-key", func(w http.ResponseWriter, req *http.Request, p tenancy.Principal, s tenancy.Scope) {
		ctx := audit.WithSource(req.Context(), req.RemoteAddr)
		if !s.IsOperator() {
			log.Denied(ctx, p, "admin:POST /v1/tenants/{tenant}/rotate-key", "only the operator rotates data keys")
			WriteError(w, apierr.New(apierr.AccessDenied, "only the operator may rotate a tenant's data key"))
			return
		}
		out, err := r.Rotate(ctx, s, p.KeyID, p.Role.String())
		if err != nil {
			WriteError(w, err)
			return
		}
		WriteJSON(w, http.StatusAccepted, out)
	})
	h.handle("GET /v1/server-key", operatorOnly, func(c *call) error {
		out, err := sk.Status(c.ctx)
		if err != nil {
			return err
		}
		return WriteJSON(c.w, http.StatusOK, out)
	})
	h.handle("POST /v1/server-key/rotate", operatorOnly, func(c *call) error {
		out, err := sk.Rotate(c.ctx)
		if err != nil {
			h.recordPlatformOutcome(c, "server-key.rotate", err)
			return err
		}
		h.recordPlatform(c, "server-key.rotate", out.Check)
		return WriteJSON(c.w, http.StatusOK, out)
	})
}

// recordPlatformOutcome records a failed operator action in the platform log.
func (h *Handler) recordPlatformOutcome(c *call, action string, err error) {
	s, serr := h.operatorOn(c, tenancy.TenantID{})
	if serr != nil {
		return
	}
	ev := audit.Event{Actor: c.p.KeyID, Role: c.p.Role.String(), Action: action, Source: c.r.RemoteAddr, Outcome: audit.OutcomeError, Reason: apierr.Clip(err.Error())}
	if _, aerr := h.o.Audit.Append(c.ctx, s, ev); aerr != nil {
		h.log.Error("audit append failed", "action", action, "err", aerr)
	}
}
