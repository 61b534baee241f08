package server

import (
	"context"

	"github.com/tenantdb/tenantdb/internal/tenancy"
	"github.com/tenantdb/tenantdb/internal/wire"
)

// Backend is what the server needs from the engine: one method per
// DynamoDB operation, each taking the tenant Scope the guard issued. The
// local engine (*engine.Engine) implements it; a remote engine, or a
// decorator that adds quotas, metering or audit around another Backend,
// can too.
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

// call runs one decoded request against a Backend.
type call func(ctx context.Context, b Backend, s tenancy.Scope, in any) (wire.Output, error)

// bind adapts a Backend method expression to a call.
func bind[I any, O wire.Output](m func(Backend, context.Context, tenancy.Scope, *I) (O, error)) call {
	return func(ctx context.Context, b Backend, s tenancy.Scope, in any) (wire.Output, error) {
		out, err := m(b, ctx, s, in.(*I))
		if err != nil {
			return nil, err
		}
		return out, nil
	}
}

// dispatch maps operation names to Backend methods. It lists exactly the
// operations of wire.Operations (TestDispatchMatchesWire).
var dispatch = map[string]call{
	"CreateTable":        bind(Backend.CreateTable),
	"DescribeTable":      bind(Backend.DescribeTable),
	"ListTables":         bind(Backend.ListTables),
	"DeleteTable":        bind(Backend.DeleteTable),
	"UpdateTable":        bind(Backend.UpdateTable),
	"PutItem":            bind(Backend.PutItem),
	"GetItem":            bind(Backend.GetItem),
	"UpdateItem":         bind(Backend.UpdateItem),
	"DeleteItem":         bind(Backend.DeleteItem),
	"Query":              bind(Backend.Query),
	"Scan":               bind(Backend.Scan),
	"BatchGetItem":       bind(Backend.BatchGetItem),
	"BatchWriteItem":     bind(Backend.BatchWriteItem),
	"TransactWriteItems": bind(Backend.TransactWriteItems),
	"TransactGetItems":   bind(Backend.TransactGetItems),
	"UpdateTimeToLive":   bind(Backend.UpdateTimeToLive),
	"DescribeTimeToLive": bind(Backend.DescribeTimeToLive),
	"TagResource":        bind(Backend.TagResource),
	"UntagResource":      bind(Backend.UntagResource),
	"ListTagsOfResource": bind(Backend.ListTagsOfResource),
	"DescribeEndpoints":  bind(Backend.DescribeEndpoints),
	"DescribeLimits":     bind(Backend.DescribeLimits),
}
