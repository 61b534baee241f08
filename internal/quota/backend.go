package quota

import (
	"context"

	"github.com/tenantdb/tenantdb/internal/tenancy"
	"github.com/tenantdb/tenantdb/internal/wire"
)

// Backend is what the quota decorator wraps: one method per DynamoDB
// operation, each taking the tenant Scope the guard issued — the same
// method set as the server's Backend, so the engine implements it and a
// *Limited can stand in for the engine.
type Backend interface {
	CreateTable(context.Context, tenancy.Scope, *wire.CreateTableInput) (*wire.CreateTableOutput, error)
	DescribeTable(context.Context, tenancy.Scope, *wire.DescribeTableInput) (*wire.DescribeTableOutput, error)
	ListTables(context.Context, tenancy.Scope, *wire.ListTablesInput) (*wire.ListTablesOutput, error)
	DeleteTable(context.Context, tenancy.Scope, *wire.DeleteTableInput) (*wire.DeleteTableOutput, error)
	UpdateTable(context.Context, tenancy.Scope, *wire.UpdateTableInput) (*wire.UpdateTableOutput, error)
	PutItem(context.Context, tenancy.Scope, *wire.PutItemInput) (*wire.PutItemOutput, error)
	GetItem(context.Context, tenancy.Scope, *wire.GetItemInput) (*wire.GetItemOutput, error)
	UpdateItem(context.Context, tenancy.Scope, *wire.UpdateItemInput) (*wire.UpdateItemOutput, error)
	DeleteItem(context.Context, tenancy.Scope, *wire.DeleteItemInput) (*wire.DeleteItemOutput, error)
	Query(context.Context, tenancy.Scope, *wire.QueryInput) (*wire.QueryOutput, error)
	Scan(context.Context, tenancy.Scope, *wire.ScanInput) (*wire.ScanOutput, error)
	BatchGetItem(context.Context, tenancy.Scope, *wire.BatchGetItemInput) (*wire.BatchGetItemOutput, error)
	BatchWriteItem(context.Context, tenancy.Scope, *wire.BatchWriteItemInput) (*wire.BatchWriteItemOutput, error)
	TransactWriteItems(context.Context, tenancy.Scope, *wire.TransactWriteItemsInput) (*wire.TransactWriteItemsOutput, error)
	TransactGetItems(context.Context, tenancy.Scope, *wire.TransactGetItemsInput) (*wire.TransactGetItemsOutput, error)
	UpdateTimeToLive(context.Context, tenancy.Scope, *wire.UpdateTimeToLiveInput) (*wire.UpdateTimeToLiveOutput, error)
	DescribeTimeToLive(context.Context, tenancy.Scope, *wire.DescribeTimeToLiveInput) (*wire.DescribeTimeToLiveOutput, error)
	TagResource(context.Context, tenancy.Scope, *wire.TagResourceInput) (*wire.EmptyOutput, error)
	UntagResource(context.Context, tenancy.Scope, *wire.UntagResourceInput) (*wire.EmptyOutput, error)
	ListTagsOfResource(context.Context, tenancy.Scope, *wire.ListTagsOfResourceInput) (*wire.ListTagsOfResourceOutput, error)
	DescribeEndpoints(context.Context, tenancy.Scope, *wire.DescribeEndpointsInput) (*wire.DescribeEndpointsOutput, error)
	DescribeLimits(context.Context, tenancy.Scope, *wire.DescribeLimitsInput) (*wire.DescribeLimitsOutput, error)
}

// Limited is a Backend under admission control and metering: every
// operation is admitted by its Manager before it reaches the wrapped
// Backend (a rejected one never does) and charged what it consumed
// afterwards.
type Limited struct {
	next Backend
	m    *Manager
}

var _ Backend = (*Limited)(nil)

// Wrap returns next under m's admission control and metering.
func (m *Manager) Wrap(next Backend) *Limited { return &Limited{next: next, m: m} }

// run admits, calls and charges one operation.
func run[I any, O wire.Output](l *Limited, ctx context.Context, s tenancy.Scope, in *I, call func(context.Context, tenancy.Scope, *I) (O, error)) (O, error) {
	tk, err := l.m.Admit(ctx, s, in)
	if err != nil {
		var zero O
		return zero, err
	}
	out, err := call(ctx, s, in)
	var zero O
	if err != nil || any(out) == any(zero) {
		tk.Done(nil, err)
	} else {
		tk.Done(out, nil)
	}
	return out, err
}

// CreateTable implements Backend.
func (l *Limited) CreateTable(ctx context.Context, s tenancy.Scope, in *wire.CreateTableInput) (*wire.CreateTableOutput, error) {
	return run(l, ctx, s, in, l.next.CreateTable)
}

// DescribeTable implements Backend.
func (l *Limited) DescribeTable(ctx context.Context, s tenancy.Scope, in *wire.DescribeTableInput) (*wire.DescribeTableOutput, error) {
	return run(l, ctx, s, in, l.next.DescribeTable)
}

// ListTables implements Backend.
func (l *Limited) ListTables(ctx context.Context, s tenancy.Scope, in *wire.ListTablesInput) (*wire.ListTablesOutput, error) {
	return run(l, ctx, s, in, l.next.ListTables)
}

// DeleteTable implements Backend.
func (l *Limited) DeleteTable(ctx context.Context, s tenancy.Scope, in *wire.DeleteTableInput) (*wire.DeleteTableOutput, error) {
	return run(l, ctx, s, in, l.next.DeleteTable)
}

// UpdateTable implements Backend.
func (l *Limited) UpdateTable(ctx context.Context, s tenancy.Scope, in *wire.UpdateTableInput) (*wire.UpdateTableOutput, error) {
	return run(l, ctx, s, in, l.next.UpdateTable)
}

// PutItem implements Backend.
func (l *Limited) PutItem(ctx context.Context, s tenancy.Scope, in *wire.PutItemInput) (*wire.PutItemOutput, error) {
	return run(l, ctx, s, in, l.next.PutItem)
}

// GetItem implements Backend.
func (l *Limited) GetItem(ctx context.Context, s tenancy.Scope, in *wire.GetItemInput) (*wire.GetItemOutput, error) {
	return run(l, ctx, s, in, l.next.GetItem)
}

// UpdateItem implements Backend.
func (l *Limited) UpdateItem(ctx context.Context, s tenancy.Scope, in *wire.UpdateItemInput) (*wire.UpdateItemOutput, error) {
	return run(l, ctx, s, in, l.next.UpdateItem)
}

// DeleteItem implements Backend.
func (l *Limited) DeleteItem(ctx context.Context, s tenancy.Scope, in *wire.DeleteItemInput) (*wire.DeleteItemOutput, error) {
	return run(l, ctx, s, in, l.next.DeleteItem)
}

// Query implements Backend.
func (l *Limited) Query(ctx context.Context, s tenancy.Scope, in *wire.QueryInput) (*wire.QueryOutput, error) {
	return run(l, ctx, s, in, l.next.Query)
}

// Scan implements Backend.
func (l *Limited) Scan(ctx context.Context, s tenancy.Scope, in *wire.ScanInput) (*wire.ScanOutput, error) {
	return run(l, ctx, s, in, l.next.Scan)
}

// BatchGetItem implements Backend.
func (l *Limited) BatchGetItem(ctx context.Context, s tenancy.Scope, in *wire.BatchGetItemInput) (*wire.BatchGetItemOutput, error) {
	return run(l, ctx, s, in, l.next.BatchGetItem)
}

// BatchWriteItem implements Backend.
func (l *Limited) BatchWriteItem(ctx context.Context, s tenancy.Scope, in *wire.BatchWriteItemInput) (*wire.BatchWriteItemOutput, error) {
	return run(l, ctx, s, in, l.next.BatchWriteItem)
}

// TransactWriteItems implements Backend.
func (l *Limited) TransactWriteItems(ctx context.Context, s tenancy.Scope, in *wire.TransactWriteItemsInput) (*wire.TransactWriteItemsOutput, error) {
	return run(l, ctx, s, in, l.next.TransactWriteItems)
}

// TransactGetItems implements Backend.
func (l *Limited) TransactGetItems(ctx context.Context, s tenancy.Scope, in *wire.TransactGetItemsInput) (*wire.TransactGetItemsOutput, error) {
	return run(l, ctx, s, in, l.next.TransactGetItems)
}

// UpdateTimeToLive implements Backend.
func (l *Limited) UpdateTimeToLive(ctx context.Context, s tenancy.Scope, in *wire.UpdateTimeToLiveInput) (*wire.UpdateTimeToLiveOutput, error) {
	return run(l, ctx, s, in, l.next.UpdateTimeToLive)
}

// DescribeTimeToLive implements Backend.
func (l *Limited) DescribeTimeToLive(ctx context.Context, s tenancy.Scope, in *wire.DescribeTimeToLiveInput) (*wire.DescribeTimeToLiveOutput, error) {
	return run(l, ctx, s, in, l.next.DescribeTimeToLive)
}

// TagResource implements Backend.
func (l *Limited) TagResource(ctx context.Context, s tenancy.Scope, in *wire.TagResourceInput) (*wire.EmptyOutput, error) {
	return run(l, ctx, s, in, l.next.TagResource)
}

// UntagResource implements Backend.
func (l *Limited) UntagResource(ctx context.Context, s tenancy.Scope, in *wire.UntagResourceInput) (*wire.EmptyOutput, error) {
	return run(l, ctx, s, in, l.next.UntagResource)
}

// ListTagsOfResource implements Backend.
func (l *Limited) ListTagsOfResource(ctx context.Context, s tenancy.Scope, in *wire.ListTagsOfResourceInput) (*wire.ListTagsOfResourceOutput, error) {
	return run(l, ctx, s, in, l.next.ListTagsOfResource)
}

// DescribeEndpoints implements Backend.
func (l *Limited) DescribeEndpoints(ctx context.Context, s tenancy.Scope, in *wire.DescribeEndpointsInput) (*wire.DescribeEndpointsOutput, error) {
	return run(l, ctx, s, in, l.next.DescribeEndpoints)
}

// DescribeLimits implements Backend.
func (l *Limited) DescribeLimits(ctx context.Context, s tenancy.Scope, in *wire.DescribeLimitsInput) (*wire.DescribeLimitsOutput, error) {
	return run(l, ctx, s, in, l.next.DescribeLimits)
}
