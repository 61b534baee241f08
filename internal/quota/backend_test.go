package quota

import (
	"context"
	"testing"
	"time"

	"github.com/tenantdb/tenantdb/internal/apierr"
	"github.com/tenantdb/tenantdb/internal/dynamo"
	"github.com/tenantdb/tenantdb/internal/tenancy"
	"github.com/tenantdb/tenantdb/internal/wire"
)

// recorder is a Handler that records what reaches it and charges one read
// and one write unit per request.
type recorder struct{ got []*dynamo.Op }

func (r *recorder) Handle(_ context.Context, _ tenancy.Scope, op *dynamo.Op, _ any) (wire.Output, error) {
	r.got = append(r.got, op)
	return &wire.PutItemOutput{Metered: wire.Metered{U: wire.Usage{ReadUnits: 1, WriteUnits: 1}}}, nil
}

// TestLimitedChargesEveryOperation: the decorator admits, forwards and
// meters every operation of the table, with nothing written per operation.
func TestLimitedChargesEveryOperation(t *testing.T) {
	c := &clock{t: t0.Add(time.Minute)}
	m := newManager(t, Options{DB: memDB(t), Now: c.now})
	next := &recorder{}
	h := m.Wrap(next)
	a := tid(1)
	ctx := context.Background()
	ops := dynamo.Ops()
	for _, op := range ops {
		s, err := (&tenancy.Guard{}).Admit(tenancy.Principal{Tenant: a, Env: "live", Role: tenancy.RoleAdmin, KeyID: "k"}, op.Action)
		if err != nil {
			t.Fatalf("%s: %v", op.Name, err)
		}
		if _, err := h.Handle(ctx, s, op, op.New()); err != nil {
			t.Fatalf("%s: %v", op.Name, err)
		}
	}
	if len(next.got) != len(ops) {
		t.Fatalf("%d of %d operations reached the wrapped handler", len(next.got), len(ops))
	}
	for i, op := range ops {
		if next.got[i] != op {
			t.Errorf("request %d reached the wrapped handler as %s, want %s", i, next.got[i].Name, op.Name)
		}
	}
	r, err := m.Usage(ctx, sys(a), t0, t0.Add(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	for _, op := range ops {
		if u := r.ByOperation[op.Name]; u.Requests != 1 || u.ConsumedReadUnits != 1 || u.ConsumedWriteUnits != 1 {
			t.Errorf("%s metered as %+v, want 1 request, 1 read and 1 write unit", op.Name, u)
		}
	}
}

// TestLimitedRejectsBeforeForwarding: a throttled request never reaches
// the wrapped handler, and is metered as throttled.
func TestLimitedRejectsBeforeForwarding(t *testing.T) {
	c := &clock{t: t0.Add(time.Minute)}
	m := newManager(t, Options{DB: memDB(t), Now: c.now, Default: Limits{WriteUnits: 1, BurstSeconds: 1}})
	next := &recorder{}
	h := m.Wrap(next)
	a := tid(1)
	ctx := context.Background()
	put := lookup(t, "PutItem")
	s := scope(t, a, "PutItem")
	if _, err := h.Handle(ctx, s, put, &wire.PutItemInput{TableName: "t"}); err != nil {
		t.Fatal(err)
	}
	if _, err := h.Handle(ctx, s, put, &wire.PutItemInput{TableName: "t"}); !apierr.Is(err, apierr.ProvisionedThroughputExceeded) {
		t.Fatalf("second write with the bucket empty: %v, want ProvisionedThroughputExceeded", err)
	}
	if len(next.got) != 1 {
		t.Errorf("%d requests reached the wrapped handler, want 1", len(next.got))
	}
	r, err := m.Usage(ctx, sys(a), t0, t0.Add(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	if u := r.ByOperation["PutItem"]; u.Requests != 2 || u.ThrottledRequests != 1 {
		t.Errorf("PutItem metered as %+v, want 2 requests, 1 throttled", u)
	}
}
