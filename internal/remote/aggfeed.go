package remote

import (
	"context"
	"time"

	"github.com/tenantdb/tenantdb/internal/apierr"
	"github.com/tenantdb/tenantdb/internal/tenancy"
)

// AggregateFeed is the change feed aggregates follow on a gateway
// (aggregate.Feed): the webhook Follower — one logical table's changes in
// one namespace, read from the engine table's DynamoDB stream — with a
// Retain that says what an engine without Streams (dynalite) lacks for
// aggregates. DESIGN.md, "Aggregates".
type AggregateFeed struct{ *Follower }

// AggregateFeed returns the feed aggregates follow; poll is how long a
// reader that found nothing waits (default 1 s).
func (b *Backend) AggregateFeed(poll time.Duration) AggregateFeed {
	return AggregateFeed{b.Follower(poll)}
}

// Retain checks that s sees table and that the engine serves the stream
// an aggregate is maintained from. Errors: ResourceNotFound; Validation
// for an engine without Streams.
func (f AggregateFeed) Retain(ctx context.Context, s tenancy.Scope, table, consumer string) error {
	if _, err := f.target(ctx, s, table); err != nil {
		return err
	}
	if _, err := f.b.engineStream(ctx); err != nil {
		if apierr.Is(err, apierr.Validation) {
			return apierr.Validationf("aggregates are not available on this gateway: they are maintained from the engine table's DynamoDB stream, and the engine has no Streams (%s)", apierr.Message(err))
		}
		return err
	}
	return nil
}
