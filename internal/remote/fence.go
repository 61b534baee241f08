package remote

import (
	"context"
	"errors"
	"time"

	"github.com/tenantdb/tenantdb/internal/apierr"
	"github.com/tenantdb/tenantdb/internal/dynamo"
	"github.com/tenantdb/tenantdb/internal/tenancy"
	"github.com/tenantdb/tenantdb/internal/wire"
)

// Fencing the writes of a tenant or table being deleted across gateways
// (DESIGN.md, "Fencing"). A gateway admits a request with what it cached
// of the tenant and of the table's definition, for at most the fleet's
// staleness; a deletion marks the tenant (or replaces the definition by a
// tombstone) and settles for that bound, so no gateway admits a request
// of it afterwards. A request admitted just before can still be on its
// way: every engine call made for a request that writes is bounded by
// Options.WriteFence from when the request reached the backend (a
// context deadline: the engine client gives up on a call not answered by
// then, so none is sent later), and the deletion deletes the tenant's (or
// the table's) items once after the settle and again fenceWait later,
// when every such call has ended. What a late call wrote between the two
// is deleted by the second.

// fenceTransit is the part of fenceWait beyond the deadline and its 10 %
// of clock rate: a call the gateway sent just before its deadline on its
// way to the engine and being applied there, and the time a request
// takes from the gateway's admission to the fence (decoding it).
const fenceTransit = time.Second

// fenceWait is how long a deletion waits after it began, before it
// deletes again: no call of a request admitted before the deletion was
// settled is still running then (0: no fence, one gateway).
func (b *Backend) fenceWait() time.Duration {
	if b.opts.WriteFence <= 0 {
		return 0
	}
	return b.opts.WriteFence + b.opts.WriteFence/10 + fenceTransit
}

// waitFence waits until fenceWait has passed since since, or ctx ends.
func (b *Backend) waitFence(ctx context.Context, since time.Time) error {
	if b.opts.WriteFence <= 0 {
		return nil
	}
	return sleep(ctx, b.fenceWait()-time.Since(since))
}

// Fence returns h with every request that writes — items
// (ClassWrite, PartiQL's writing statements included) or a new table's
// definition (CreateTable) — bounded by Options.WriteFence, the quota
// decorator's wait and engine calls included; node wraps the server's
// handler in it. Without a WriteFence it returns h.
func (b *Backend) Fence(h dynamo.Handler) dynamo.Handler {
	if b.opts.WriteFence <= 0 {
		return h
	}
	return fenced{h: h, d: b.opts.WriteFence}
}

type fenced struct {
	h dynamo.Handler
	d time.Duration
}

func (f fenced) Handle(ctx context.Context, s tenancy.Scope, op *dynamo.Op, in any) (wire.Output, error) {
	if op.ClassOf(in) != tenancy.ClassWrite && op.Name != "CreateTable" {
		return f.h.Handle(ctx, s, op, in)
	}
	fctx, cancel := context.WithTimeout(ctx, f.d)
	defer cancel()
	out, err := f.h.Handle(fctx, s, op, in)
	if err != nil && ctx.Err() == nil && errors.Is(fctx.Err(), context.DeadlineExceeded) {
		// NB: the engine may have applied a call the gateway gave up on;
		// DynamoDB answers an outcome it does not know with a 500 too.
		return nil, apierr.New(apierr.Internal, "The request did not complete within the gateway's write fence of %v; it may or may not have been applied", f.d)
	}
	return out, err
}
