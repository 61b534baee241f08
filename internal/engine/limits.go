package engine

import (
	"context"

	"github.com/tenantdb/tenantdb/internal/tenancy"
	"github.com/tenantdb/tenantdb/internal/wire"
)

// DescribeLimits reports DynamoDB's default account and table capacity
// limits. The engine enforces none: a server answers with the caller's
// quota instead, which the quota layer (quota.Manager.Wrap) puts in
// place of these numbers.
func (e *Engine) DescribeLimits(ctx context.Context, s tenancy.Scope, _ *wire.DescribeLimitsInput) (*wire.DescribeLimitsOutput, error) {
	if err := check(ctx, s); err != nil {
		return nil, err
	}
	return &wire.DescribeLimitsOutput{
		AccountMaxReadCapacityUnits:  80000,
		AccountMaxWriteCapacityUnits: 80000,
		TableMaxReadCapacityUnits:    40000,
		TableMaxWriteCapacityUnits:   40000,
	}, nil
}

// DescribeEndpoints reports the server's own address (Options.Endpoint),
// so SDKs with endpoint discovery keep talking to tenantdb.
func (e *Engine) DescribeEndpoints(ctx context.Context, s tenancy.Scope, _ *wire.DescribeEndpointsInput) (*wire.DescribeEndpointsOutput, error) {
	if err := check(ctx, s); err != nil {
		return nil, err
	}
	addr := e.opts.Endpoint
	if addr == "" {
		addr = "127.0.0.1:8000"
	}
	return &wire.DescribeEndpointsOutput{Endpoints: []wire.Endpoint{{Address: addr, CachePeriodInMinutes: 1440}}}, nil
}
