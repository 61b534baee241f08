package admin

// Quotas and usage: the admin endpoints over the quota manager.
//
//	GET /v1/tenants/{tenant}/quota[?table=NAME]   operator, or the tenant's admin key
//	PUT /v1/tenants/{tenant}/quota[?table=NAME]   operator
//	GET /v1/tenants/{tenant}/usage[?from=&to=]    operator, or the tenant's live admin key
//
// PUT takes {"read_units", "write_units", "burst_seconds", "weight",
// "max_inflight"}: each member present replaces the stored value, 0 removes
// it (back to the default), absent members are kept.

import (
	"encoding/json"
	"net/http"
	"net/url"
	"time"

	"github.com/tenantdb/tenantdb/internal/apierr"
	"github.com/tenantdb/tenantdb/internal/audit"
	"github.com/tenantdb/tenantdb/internal/quota"
	"github.com/tenantdb/tenantdb/internal/tenancy"
)

// ServeQuotas adds the quota and usage endpoints over q.
func (h *Handler) ServeQuotas(q *quota.Manager) {
	log := h.o.Audit
	h.HandleTenant("GET /v1/tenants/{tenant}/quota", func(w http.ResponseWriter, r *http.Request, p tenancy.Principal, s tenancy.Scope) {
		out, err := q.GetQuota(r.Context(), s, r.URL.Query().Get("table"))
		if err != nil {
			WriteError(w, err)
			return
		}
		WriteJSON(w, http.StatusOK, out)
	})
	h.HandleTenant("PUT /v1/tenants/{tenant}/quota", func(w http.ResponseWriter, r *http.Request, p tenancy.Principal, s tenancy.Scope) {
		ctx := audit.WithSource(r.Context(), r.RemoteAddr)
		const action = "admin:PUT /v1/tenants/{tenant}/quota"
		if !s.IsOperator() {
			log.Denied(ctx, p, action, "only the operator sets quotas")
			WriteError(w, apierr.New(apierr.AccessDenied, "only the operator may set quotas"))
			return
		}
		var u quota.Update
		dec := json.NewDecoder(r.Body)
		dec.DisallowUnknownFields()
		if err := dec.Decode(&u); err != nil {
			WriteError(w, apierr.Validationf("malformed JSON body: %s", apierr.Clip(err.Error())))
			return
		}
		table := r.URL.Query().Get("table")
		out, err := q.SetQuota(ctx, s, table, u)
		if err != nil {
			WriteError(w, err)
			return
		}
		target := "quota"
		if table != "" {
			target = "quota of table " + table
		}
		if _, err := log.Append(ctx, s, audit.Event{Actor: p.KeyID, Role: p.Role.String(), Action: "SetQuota", Target: target, Source: r.RemoteAddr}); err != nil {
			WriteError(w, apierr.Wrap(apierr.Internal, err, "auditing the quota change"))
			return
		}
		WriteJSON(w, http.StatusOK, out)
	})
	h.HandleTenantWide("GET /v1/tenants/{tenant}/usage", func(w http.ResponseWriter, r *http.Request, p tenancy.Principal, s tenancy.Scope) {
		from, to, err := usageWindow(r.URL.Query())
		if err != nil {
			WriteError(w, err)
			return
		}
		out, err := q.Usage(r.Context(), s, from, to)
		if err != nil {
			WriteError(w, err)
			return
		}
		WriteJSON(w, http.StatusOK, out)
	})
}

// usageWindow reads the from and to query parameters (RFC 3339; zero when
// absent, which the quota package takes as "the last hour").
func usageWindow(q url.Values) (from, to time.Time, err error) {
	parse := func(name string) (time.Time, error) {
		s := q.Get(name)
		if s == "" {
			return time.Time{}, nil
		}
		t, err := time.Parse(time.RFC3339, s)
		if err != nil {
			return time.Time{}, apierr.Validationf("%s must be an RFC 3339 time such as 2026-01-02T15:04:05Z", name)
		}
		return t, nil
	}
	if from, err = parse("from"); err != nil {
		return
	}
	to, err = parse("to")
	return
}
