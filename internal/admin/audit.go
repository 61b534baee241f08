package admin

import (
	"net/http"
	"strconv"
	"time"

	"github.com/tenantdb/tenantdb/internal/apierr"
	"github.com/tenantdb/tenantdb/internal/audit"
	"github.com/tenantdb/tenantdb/internal/tenancy"
)

// NB: the tenant and the platform routes share these functions: the
// guard binds the operator's scope on /v1/audit to no tenant, which is
// the platform log (keyspace.Platform).

func (h *Handler) tenantAudit(c *call) error { return h.queryAudit(c, c.s) }

func (h *Handler) platformAudit(c *call) error { return h.queryAudit(c, c.s) }

func (h *Handler) verifyTenantAudit(c *call) error { return h.verifyAudit(c, c.s) }

func (h *Handler) verifyPlatformAudit(c *call) error { return h.verifyAudit(c, c.s) }

// queryAudit serves ?from=&to= (RFC 3339), &after= (a seq) and &limit=.
func (h *Handler) queryAudit(c *call, s tenancy.Scope) error {
	q := c.r.URL.Query()
	parseTime := func(name string) (time.Time, error) {
		v := q.Get(name)
		if v == "" {
			return time.Time{}, nil
		}
		tm, err := time.Parse(time.RFC3339Nano, v)
		if err != nil {
			return time.Time{}, apierr.Validationf("%s must be an RFC 3339 time", name)
		}
		return tm, nil
	}
	from, err := parseTime("from")
	if err != nil {
		return err
	}
	to, err := parseTime("to")
	if err != nil {
		return err
	}
	var after uint64
	if v := q.Get("after"); v != "" {
		if after, err = strconv.ParseUint(v, 10, 64); err != nil {
			return apierr.Validationf("after must be a record seq")
		}
	}
	limit := 100
	if v := q.Get("limit"); v != "" {
		if limit, err = strconv.Atoi(v); err != nil || limit < 1 || limit > 1000 {
			return apierr.Validationf("limit must be between 1 and 1000")
		}
	}
	rs, err := h.o.Audit.Query(c.ctx, s, from, to, after, limit)
	if err != nil {
		return err
	}
	page := AuditPage{Records: rs}
	if page.Records == nil {
		page.Records = []audit.Record{}
	}
	if len(rs) == limit {
		page.NextAfter = rs[len(rs)-1].Seq
	}
	return WriteJSON(c.w, http.StatusOK, page)
}

func (h *Handler) verifyAudit(c *call, s tenancy.Scope) error {
	n, err := h.o.Audit.Verify(c.ctx, s)
	out := VerifyResult{OK: err == nil, Records: n}
	if err != nil {
		out.Error = err.Error()
	}
	return WriteJSON(c.w, http.StatusOK, out)
}
