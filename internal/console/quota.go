package console

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/tenantdb/tenantdb/client"
)

// rotateKey replaces a key (the old one valid for the grace period given)
// and shows the new key's secret once.
func (h *Handler) rotateKey(q *req) {
	t, ok := h.tenantOf(q)
	if !ok {
		return
	}
	grace := 0
	if g := strings.TrimSpace(q.r.PostFormValue("grace")); g != "" {
		var err error
		if grace, err = strconv.Atoi(g); err != nil || grace < 0 {
			h.badRequest(q, "The grace period is a whole number of seconds.")
			return
		}
	}
	k, err := q.admin.RotateKey(q.ctx, t.ID, q.r.PathValue("key"), time.Duration(grace)*time.Second)
	if err != nil {
		h.fail(q, err)
		return
	}
	p := q.page("Rotated key", k)
	p.Tenant = &t
	h.render(q.w, http.StatusOK, "keycreated", p)
}

func (h *Handler) quota(q *req) {
	t, ok := h.tenantOf(q)
	if !ok {
		return
	}
	qt, err := q.admin.Quota(q.ctx, t.ID, "")
	if err != nil {
		h.fail(q, err)
		return
	}
	h.showTenant(q, t, "quota", "Quota of "+t.Name, qt)
}

// setQuota changes the tenant's quota or a table's: an empty field keeps
// the value, 0 restores the default. Only the operator may (the admin API
// refuses anyone else).
func (h *Handler) setQuota(q *req) {
	t, ok := h.tenantOf(q)
	if !ok {
		return
	}
	var u client.QuotaUpdate
	for _, f := range []struct {
		name string
		dst  **float64
	}{{"read_units", &u.ReadUnits}, {"write_units", &u.WriteUnits}, {"burst_seconds", &u.BurstSeconds}} {
		v := strings.TrimSpace(q.r.PostFormValue(f.name))
		if v == "" {
			continue
		}
		x, err := strconv.ParseFloat(v, 64)
		if err != nil {
			h.badRequest(q, fmt.Sprintf("%s must be a number, not %q.", f.name, v))
			return
		}
		*f.dst = &x
	}
	table := strings.TrimSpace(q.r.PostFormValue("table"))
	if _, err := q.admin.SetQuota(q.ctx, t.ID, table, u); err != nil {
		h.fail(q, err)
		return
	}
	what := "the tenant's quota"
	if table != "" {
		what = "the quota of table " + table
	}
	h.redirect(q, tenantURL(t, "/quota"), "Changed "+what+".")
}
