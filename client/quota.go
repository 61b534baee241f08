package client

import (
	"context"
	"net/url"
	"time"
)

func quotaPath(tenant, table string) string {
	p := tenantPath(tenant) + "/quota"
	if table != "" {
		p += "?table=" + url.QueryEscape(table)
	}
	return p
}

// Quota returns a tenant's quota ("" table) or one table's.
func (c *Client) Quota(ctx context.Context, tenant, table string) (Quota, error) {
	var out Quota
	return out, c.do(ctx, "GET", quotaPath(tenant, table), c.Key, nil, &out)
}

// SetQuota changes a tenant's quota ("" table) or one table's (operator
// only) and returns the result.
func (c *Client) SetQuota(ctx context.Context, tenant, table string, u QuotaUpdate) (Quota, error) {
	var out Quota
	return out, c.do(ctx, "PUT", quotaPath(tenant, table), c.Key, u, &out)
}

// Usage returns a tenant's metered usage in the hourly buckets that
// overlap [from, to) (zero from: an hour before to; zero to: now), and its
// current storage. A tenant admin key of another environment than live
// is refused.
func (c *Client) Usage(ctx context.Context, tenant string, from, to time.Time) (UsageReport, error) {
	v := url.Values{}
	if !from.IsZero() {
		v.Set("from", from.Format(time.RFC3339Nano))
	}
	if !to.IsZero() {
		v.Set("to", to.Format(time.RFC3339Nano))
	}
	path := tenantPath(tenant) + "/usage"
	if len(v) > 0 {
		path += "?" + v.Encode()
	}
	var out UsageReport
	return out, c.do(ctx, "GET", path, c.Key, nil, &out)
}
