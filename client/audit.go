package client

import (
	"context"
	"net/url"
	"strconv"
	"time"
)

// AuditQuery selects audit records: those in [From, To) (zero: no bound)
// with a seq greater than After, at most Limit (0: the server's default,
// 100; at most 1000).
type AuditQuery struct {
	From, To time.Time
	After    uint64
	Limit    int
}

func (q AuditQuery) encode() string {
	v := url.Values{}
	if !q.From.IsZero() {
		v.Set("from", q.From.Format(time.RFC3339Nano))
	}
	if !q.To.IsZero() {
		v.Set("to", q.To.Format(time.RFC3339Nano))
	}
	if q.After > 0 {
		v.Set("after", strconv.FormatUint(q.After, 10))
	}
	if q.Limit > 0 {
		v.Set("limit", strconv.Itoa(q.Limit))
	}
	if len(v) == 0 {
		return ""
	}
	return "?" + v.Encode()
}

// Audit returns a page of a tenant's audit log ("" tenant: the platform
// log, operator only).
func (c *Client) Audit(ctx context.Context, tenant string, q AuditQuery) (AuditPage, error) {
	var out AuditPage
	path := "/v1/audit"
	if tenant != "" {
		path = tenantPath(tenant) + "/audit"
	}
	return out, c.do(ctx, "GET", path+q.encode(), c.Key, nil, &out)
}

// VerifyAudit checks a tenant's (or, with "", the platform's) audit hash
// chain. A broken chain is an answer with OK false, not an error.
func (c *Client) VerifyAudit(ctx context.Context, tenant string) (VerifyResult, error) {
	var out VerifyResult
	path := "/v1/audit/verify"
	if tenant != "" {
		path = tenantPath(tenant) + "/audit/verify"
	}
	return out, c.do(ctx, "GET", path, c.Key, nil, &out)
}
