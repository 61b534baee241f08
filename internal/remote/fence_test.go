package remote

import (
	"context"
	"testing"
	"time"

	"github.com/tenantdb/tenantdb/internal/apierr"
	"github.com/tenantdb/tenantdb/internal/dynamo"
	"github.com/tenantdb/tenantdb/internal/tenancy"
	"github.com/tenantdb/tenantdb/internal/wire"
)

// stall is a Handler that waits for its context (or d) and says how long
// it had.
type stall struct{ d time.Duration }

func (s stall) Handle(ctx context.Context, _ tenancy.Scope, _ *dynamo.Op, _ any) (wire.Output, error) {
	if s.d == 0 {
		return nil, ctx.Err()
	}
	select {
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-time.After(s.d):
		return nil, nil
	}
}

func op(t testing.TB, name string) *dynamo.Op {
	o, ok := dynamo.Lookup(name)
	if !ok {
		t.Fatalf("no operation %s", name)
	}
	return o
}

// TestFenceBoundsWrites: a write (and CreateTable) that has not finished
// within the fence is answered InternalServerError saying its outcome is
// unknown; a read is not bounded; without a fence nothing is.
func TestFenceBoundsWrites(t *testing.T) {
	b := &Backend{opts: Options{WriteFence: 50 * time.Millisecond}}
	h := b.Fence(stall{d: 300 * time.Millisecond})
	ctx := context.Background()
	for _, name := range []string{"PutItem", "BatchWriteItem", "TransactWriteItems", "CreateTable"} {
		o := op(t, name)
		_, err := h.Handle(ctx, tenancy.Scope{}, o, o.New())
		if !apierr.Is(err, apierr.Internal) {
			t.Errorf("%s past the fence: %v, want InternalServerError", name, err)
		}
	}
	for _, name := range []string{"GetItem", "Query", "DescribeTable", "DeleteTable"} {
		o := op(t, name)
		if _, err := h.Handle(ctx, tenancy.Scope{}, o, o.New()); err != nil {
			t.Errorf("%s was fenced: %v", name, err)
		}
	}
	o := op(t, "ExecuteStatement")
	if _, err := h.Handle(ctx, tenancy.Scope{}, o, &wire.ExecuteStatementInput{Statement: `INSERT INTO "t" VALUE {'pk': 'x'}`}); !apierr.Is(err, apierr.Internal) {
		t.Errorf("a writing PartiQL statement past the fence: %v", err)
	}
	if _, err := (&Backend{}).Fence(stall{d: 100 * time.Millisecond}).Handle(ctx, tenancy.Scope{}, op(t, "PutItem"), op(t, "PutItem").New()); err != nil {
		t.Errorf("without a fence: %v", err)
	}
}

// BenchmarkFence is the fence's cost per write over a handler that
// returns at once (baseline: the handler alone).
func BenchmarkFence(b *testing.B) {
	o := op(b, "PutItem")
	in := o.New()
	ctx := context.Background()
	for _, c := range []struct {
		name string
		h    dynamo.Handler
	}{{"direct", stall{}}, {"fenced", (&Backend{opts: Options{WriteFence: 3 * time.Second}}).Fence(stall{})}} {
		b.Run(c.name, func(b *testing.B) {
			for b.Loop() {
				_, _ = c.h.Handle(ctx, tenancy.Scope{}, o, in)
			}
		})
	}
}
