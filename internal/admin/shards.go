package admin

import (
	"context"
	"fmt"
	"net/http"

	"github.com/tenantdb/tenantdb/client"
	"github.com/tenantdb/tenantdb/internal/apierr"
	"github.com/tenantdb/tenantdb/internal/tenancy"
)

// Shards sets and reports the shard counts of a tenant's tables on a
// gateway over a remote engine (internal/remote).
type Shards interface {
	SetShards(ctx context.Context, s tenancy.Scope, table string, n int) (client.ShardsResult, error)
	Shards(ctx context.Context, s tenancy.Scope) (client.ShardsResult, error)
}

// ServeShards adds POST /v1/tenants/{tenant}/shards (change the shard
// count of the tenant's tables, online; client.ShardRequest) and GET
// (their layouts and the progress of a change), operator only. With a nil
// x (the embedded engine, which has no engine partitions to spread) both
// answer a ValidationException saying so.
func (h *Handler) ServeShards(x Shards) {
	unavailable := apierr.Validationf("shards apply to a server that is a gateway over a remote engine (tenantdb serve --backend dynamodb)")
	h.handle("POST /v1/tenants/{tenant}/shards", operatorOnly, func(c *call) error {
		var req client.ShardRequest
		if err := decode(c.r, &req); err != nil {
			return err
		}
		if x == nil {
			return unavailable
		}
		out, err := x.SetShards(c.ctx, c.s, req.Table, req.Shards)
		if err != nil {
			return err
		}
		target := fmt.Sprintf("%s shards=%d", c.s.Tenant(), req.Shards)
		if req.Table != "" {
			target += " table=" + req.Table
		}
		h.record(c, c.s, "tenant.shards", target)
		h.recordPlatform(c, "tenant.shards", target)
		return WriteJSON(c.w, http.StatusOK, out)
	})
	h.handle("GET /v1/tenants/{tenant}/shards", operatorOnly, func(c *call) error {
		if x == nil {
			return unavailable
		}
		out, err := x.Shards(c.ctx, c.s)
		if err != nil {
			return err
		}
		return WriteJSON(c.w, http.StatusOK, out)
	})
}
