package server

import (
	"context"
	"fmt"
	"sort"

	"github.com/tenantdb/tenantdb/internal/apierr"
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

// unknownOp is the error for an operation the backend does not provide.
func unknownOp(op string) error {
	return apierr.New(apierr.UnknownOperation, "Unknown operation %s", op)
}

// method returns impl's method for op with exactly the Backend signature,
// or nil.
func method(impl any, op string) any {
	switch op {
	case "CreateTable":
		if m, ok := impl.(interface {
			CreateTable(context.Context, tenancy.Scope, *wire.CreateTableInput) (*wire.CreateTableOutput, error)
		}); ok {
			return m.CreateTable
		}
	case "DescribeTable":
		if m, ok := impl.(interface {
			DescribeTable(context.Context, tenancy.Scope, *wire.DescribeTableInput) (*wire.DescribeTableOutput, error)
		}); ok {
			return m.DescribeTable
		}
	case "ListTables":
		if m, ok := impl.(interface {
			ListTables(context.Context, tenancy.Scope, *wire.ListTablesInput) (*wire.ListTablesOutput, error)
		}); ok {
			return m.ListTables
		}
	case "DeleteTable":
		if m, ok := impl.(interface {
			DeleteTable(context.Context, tenancy.Scope, *wire.DeleteTableInput) (*wire.DeleteTableOutput, error)
		}); ok {
			return m.DeleteTable
		}
	case "UpdateTable":
		if m, ok := impl.(interface {
			UpdateTable(context.Context, tenancy.Scope, *wire.UpdateTableInput) (*wire.UpdateTableOutput, error)
		}); ok {
			return m.UpdateTable
		}
	case "PutItem":
		if m, ok := impl.(interface {
			PutItem(context.Context, tenancy.Scope, *wire.PutItemInput) (*wire.PutItemOutput, error)
		}); ok {
			return m.PutItem
		}
	case "GetItem":
		if m, ok := impl.(interface {
			GetItem(context.Context, tenancy.Scope, *wire.GetItemInput) (*wire.GetItemOutput, error)
		}); ok {
			return m.GetItem
		}
	case "UpdateItem":
		if m, ok := impl.(interface {
			UpdateItem(context.Context, tenancy.Scope, *wire.UpdateItemInput) (*wire.UpdateItemOutput, error)
		}); ok {
			return m.UpdateItem
		}
	case "DeleteItem":
		if m, ok := impl.(interface {
			DeleteItem(context.Context, tenancy.Scope, *wire.DeleteItemInput) (*wire.DeleteItemOutput, error)
		}); ok {
			return m.DeleteItem
		}
	case "Query":
		if m, ok := impl.(interface {
			Query(context.Context, tenancy.Scope, *wire.QueryInput) (*wire.QueryOutput, error)
		}); ok {
			return m.Query
		}
	case "Scan":
		if m, ok := impl.(interface {
			Scan(context.Context, tenancy.Scope, *wire.ScanInput) (*wire.ScanOutput, error)
		}); ok {
			return m.Scan
		}
	case "BatchGetItem":
		if m, ok := impl.(interface {
			BatchGetItem(context.Context, tenancy.Scope, *wire.BatchGetItemInput) (*wire.BatchGetItemOutput, error)
		}); ok {
			return m.BatchGetItem
		}
	case "BatchWriteItem":
		if m, ok := impl.(interface {
			BatchWriteItem(context.Context, tenancy.Scope, *wire.BatchWriteItemInput) (*wire.BatchWriteItemOutput, error)
		}); ok {
			return m.BatchWriteItem
		}
	case "TransactWriteItems":
		if m, ok := impl.(interface {
			TransactWriteItems(context.Context, tenancy.Scope, *wire.TransactWriteItemsInput) (*wire.TransactWriteItemsOutput, error)
		}); ok {
			return m.TransactWriteItems
		}
	case "TransactGetItems":
		if m, ok := impl.(interface {
			TransactGetItems(context.Context, tenancy.Scope, *wire.TransactGetItemsInput) (*wire.TransactGetItemsOutput, error)
		}); ok {
			return m.TransactGetItems
		}
	case "UpdateTimeToLive":
		if m, ok := impl.(interface {
			UpdateTimeToLive(context.Context, tenancy.Scope, *wire.UpdateTimeToLiveInput) (*wire.UpdateTimeToLiveOutput, error)
		}); ok {
			return m.UpdateTimeToLive
		}
	case "DescribeTimeToLive":
		if m, ok := impl.(interface {
			DescribeTimeToLive(context.Context, tenancy.Scope, *wire.DescribeTimeToLiveInput) (*wire.DescribeTimeToLiveOutput, error)
		}); ok {
			return m.DescribeTimeToLive
		}
	case "TagResource":
		if m, ok := impl.(interface {
			TagResource(context.Context, tenancy.Scope, *wire.TagResourceInput) (*wire.EmptyOutput, error)
		}); ok {
			return m.TagResource
		}
	case "UntagResource":
		if m, ok := impl.(interface {
			UntagResource(context.Context, tenancy.Scope, *wire.UntagResourceInput) (*wire.EmptyOutput, error)
		}); ok {
			return m.UntagResource
		}
	case "ListTagsOfResource":
		if m, ok := impl.(interface {
			ListTagsOfResource(context.Context, tenancy.Scope, *wire.ListTagsOfResourceInput) (*wire.ListTagsOfResourceOutput, error)
		}); ok {
			return m.ListTagsOfResource
		}
	case "DescribeEndpoints":
		if m, ok := impl.(interface {
			DescribeEndpoints(context.Context, tenancy.Scope, *wire.DescribeEndpointsInput) (*wire.DescribeEndpointsOutput, error)
		}); ok {
			return m.DescribeEndpoints
		}
	case "DescribeLimits":
		if m, ok := impl.(interface {
			DescribeLimits(context.Context, tenancy.Scope, *wire.DescribeLimitsInput) (*wire.DescribeLimitsOutput, error)
		}); ok {
			return m.DescribeLimits
		}
	}
	return nil
}

// Missing returns the operations, sorted, for which impl lacks a method
// with the Backend signature.
func Missing(impl any) []string {
	var out []string
	for op := range dispatch {
		if method(impl, op) == nil {
			out = append(out, op)
		}
	}
	sort.Strings(out)
	return out
}

// Partial returns a Backend over impl, which may implement any subset of
// Backend's methods; the others answer UnknownOperationException, as for
// an operation tenantdb does not serve. It lets the server run while the
// engine's operations land one by one.
//
// NB: temporary. Once *engine.Engine implements Backend, pass it directly
// and delete Partial.
func Partial(impl any) Backend {
	if b, ok := impl.(Backend); ok {
		return b
	}
	p := &partial{methods: map[string]any{}}
	for op := range dispatch {
		if m := method(impl, op); m != nil {
			p.methods[op] = m
		}
	}
	return p
}

type partial struct{ methods map[string]any }

// invoke calls the method for op if impl has it.
func invoke[I, O any](p *partial, op string, ctx context.Context, s tenancy.Scope, in *I) (*O, error) {
	m, ok := p.methods[op]
	if !ok {
		return nil, unknownOp(op)
	}
	f, ok := m.(func(context.Context, tenancy.Scope, *I) (*O, error))
	if !ok {
		panic(fmt.Sprintf("server: method for %s has type %T", op, m))
	}
	return f(ctx, s, in)
}

func (p *partial) CreateTable(ctx context.Context, s tenancy.Scope, in *wire.CreateTableInput) (*wire.CreateTableOutput, error) {
	return invoke[wire.CreateTableInput, wire.CreateTableOutput](p, "CreateTable", ctx, s, in)
}

func (p *partial) DescribeTable(ctx context.Context, s tenancy.Scope, in *wire.DescribeTableInput) (*wire.DescribeTableOutput, error) {
	return invoke[wire.DescribeTableInput, wire.DescribeTableOutput](p, "DescribeTable", ctx, s, in)
}

func (p *partial) ListTables(ctx context.Context, s tenancy.Scope, in *wire.ListTablesInput) (*wire.ListTablesOutput, error) {
	return invoke[wire.ListTablesInput, wire.ListTablesOutput](p, "ListTables", ctx, s, in)
}

func (p *partial) DeleteTable(ctx context.Context, s tenancy.Scope, in *wire.DeleteTableInput) (*wire.DeleteTableOutput, error) {
	return invoke[wire.DeleteTableInput, wire.DeleteTableOutput](p, "DeleteTable", ctx, s, in)
}

func (p *partial) UpdateTable(ctx context.Context, s tenancy.Scope, in *wire.UpdateTableInput) (*wire.UpdateTableOutput, error) {
	return invoke[wire.UpdateTableInput, wire.UpdateTableOutput](p, "UpdateTable", ctx, s, in)
}

func (p *partial) PutItem(ctx context.Context, s tenancy.Scope, in *wire.PutItemInput) (*wire.PutItemOutput, error) {
	return invoke[wire.PutItemInput, wire.PutItemOutput](p, "PutItem", ctx, s, in)
}

func (p *partial) GetItem(ctx context.Context, s tenancy.Scope, in *wire.GetItemInput) (*wire.GetItemOutput, error) {
	return invoke[wire.GetItemInput, wire.GetItemOutput](p, "GetItem", ctx, s, in)
}

func (p *partial) UpdateItem(ctx context.Context, s tenancy.Scope, in *wire.UpdateItemInput) (*wire.UpdateItemOutput, error) {
	return invoke[wire.UpdateItemInput, wire.UpdateItemOutput](p, "UpdateItem", ctx, s, in)
}

func (p *partial) DeleteItem(ctx context.Context, s tenancy.Scope, in *wire.DeleteItemInput) (*wire.DeleteItemOutput, error) {
	return invoke[wire.DeleteItemInput, wire.DeleteItemOutput](p, "DeleteItem", ctx, s, in)
}

func (p *partial) Query(ctx context.Context, s tenancy.Scope, in *wire.QueryInput) (*wire.QueryOutput, error) {
	return invoke[wire.QueryInput, wire.QueryOutput](p, "Query", ctx, s, in)
}

func (p *partial) Scan(ctx context.Context, s tenancy.Scope, in *wire.ScanInput) (*wire.ScanOutput, error) {
	return invoke[wire.ScanInput, wire.ScanOutput](p, "Scan", ctx, s, in)
}

func (p *partial) BatchGetItem(ctx context.Context, s tenancy.Scope, in *wire.BatchGetItemInput) (*wire.BatchGetItemOutput, error) {
	return invoke[wire.BatchGetItemInput, wire.BatchGetItemOutput](p, "BatchGetItem", ctx, s, in)
}

func (p *partial) BatchWriteItem(ctx context.Context, s tenancy.Scope, in *wire.BatchWriteItemInput) (*wire.BatchWriteItemOutput, error) {
	return invoke[wire.BatchWriteItemInput, wire.BatchWriteItemOutput](p, "BatchWriteItem", ctx, s, in)
}

func (p *partial) TransactWriteItems(ctx context.Context, s tenancy.Scope, in *wire.TransactWriteItemsInput) (*wire.TransactWriteItemsOutput, error) {
	return invoke[wire.TransactWriteItemsInput, wire.TransactWriteItemsOutput](p, "TransactWriteItems", ctx, s, in)
}

func (p *partial) TransactGetItems(ctx context.Context, s tenancy.Scope, in *wire.TransactGetItemsInput) (*wire.TransactGetItemsOutput, error) {
	return invoke[wire.TransactGetItemsInput, wire.TransactGetItemsOutput](p, "TransactGetItems", ctx, s, in)
}

func (p *partial) UpdateTimeToLive(ctx context.Context, s tenancy.Scope, in *wire.UpdateTimeToLiveInput) (*wire.UpdateTimeToLiveOutput, error) {
	return invoke[wire.UpdateTimeToLiveInput, wire.UpdateTimeToLiveOutput](p, "UpdateTimeToLive", ctx, s, in)
}

func (p *partial) DescribeTimeToLive(ctx context.Context, s tenancy.Scope, in *wire.DescribeTimeToLiveInput) (*wire.DescribeTimeToLiveOutput, error) {
	return invoke[wire.DescribeTimeToLiveInput, wire.DescribeTimeToLiveOutput](p, "DescribeTimeToLive", ctx, s, in)
}

func (p *partial) TagResource(ctx context.Context, s tenancy.Scope, in *wire.TagResourceInput) (*wire.EmptyOutput, error) {
	return invoke[wire.TagResourceInput, wire.EmptyOutput](p, "TagResource", ctx, s, in)
}

func (p *partial) UntagResource(ctx context.Context, s tenancy.Scope, in *wire.UntagResourceInput) (*wire.EmptyOutput, error) {
	return invoke[wire.UntagResourceInput, wire.EmptyOutput](p, "UntagResource", ctx, s, in)
}

func (p *partial) ListTagsOfResource(ctx context.Context, s tenancy.Scope, in *wire.ListTagsOfResourceInput) (*wire.ListTagsOfResourceOutput, error) {
	return invoke[wire.ListTagsOfResourceInput, wire.ListTagsOfResourceOutput](p, "ListTagsOfResource", ctx, s, in)
}

func (p *partial) DescribeEndpoints(ctx context.Context, s tenancy.Scope, in *wire.DescribeEndpointsInput) (*wire.DescribeEndpointsOutput, error) {
	return invoke[wire.DescribeEndpointsInput, wire.DescribeEndpointsOutput](p, "DescribeEndpoints", ctx, s, in)
}

func (p *partial) DescribeLimits(ctx context.Context, s tenancy.Scope, in *wire.DescribeLimitsInput) (*wire.DescribeLimitsOutput, error) {
	return invoke[wire.DescribeLimitsInput, wire.DescribeLimitsOutput](p, "DescribeLimits", ctx, s, in)
}
