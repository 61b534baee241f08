package server

import (
	"context"

	"github.com/tenantdb/tenantdb/internal/apierr"
	"github.com/tenantdb/tenantdb/internal/tenancy"
	"github.com/tenantdb/tenantdb/internal/wire"
)

// unimplemented answers every operation with UnknownOperationException;
// test backends embed it and override what they need.
type unimplemented struct{}

var _ Backend = unimplemented{}

func unknownOp(op string) error {
	return apierr.New(apierr.UnknownOperation, "Unknown operation %s", op)
}

func (unimplemented) CreateTable(context.Context, tenancy.Scope, *wire.CreateTableInput) (*wire.CreateTableOutput, error) {
	return nil, unknownOp("CreateTable")
}
func (unimplemented) DescribeTable(context.Context, tenancy.Scope, *wire.DescribeTableInput) (*wire.DescribeTableOutput, error) {
	return nil, unknownOp("DescribeTable")
}
func (unimplemented) ListTables(context.Context, tenancy.Scope, *wire.ListTablesInput) (*wire.ListTablesOutput, error) {
	return nil, unknownOp("ListTables")
}
func (unimplemented) DeleteTable(context.Context, tenancy.Scope, *wire.DeleteTableInput) (*wire.DeleteTableOutput, error) {
	return nil, unknownOp("DeleteTable")
}
func (unimplemented) UpdateTable(context.Context, tenancy.Scope, *wire.UpdateTableInput) (*wire.UpdateTableOutput, error) {
	return nil, unknownOp("UpdateTable")
}
func (unimplemented) PutItem(context.Context, tenancy.Scope, *wire.PutItemInput) (*wire.PutItemOutput, error) {
	return nil, unknownOp("PutItem")
}
func (unimplemented) GetItem(context.Context, tenancy.Scope, *wire.GetItemInput) (*wire.GetItemOutput, error) {
	return nil, unknownOp("GetItem")
}
func (unimplemented) UpdateItem(context.Context, tenancy.Scope, *wire.UpdateItemInput) (*wire.UpdateItemOutput, error) {
	return nil, unknownOp("UpdateItem")
}
func (unimplemented) DeleteItem(context.Context, tenancy.Scope, *wire.DeleteItemInput) (*wire.DeleteItemOutput, error) {
	return nil, unknownOp("DeleteItem")
}
func (unimplemented) Query(context.Context, tenancy.Scope, *wire.QueryInput) (*wire.QueryOutput, error) {
	return nil, unknownOp("Query")
}
func (unimplemented) Scan(context.Context, tenancy.Scope, *wire.ScanInput) (*wire.ScanOutput, error) {
	return nil, unknownOp("Scan")
}
func (unimplemented) BatchGetItem(context.Context, tenancy.Scope, *wire.BatchGetItemInput) (*wire.BatchGetItemOutput, error) {
	return nil, unknownOp("BatchGetItem")
}
func (unimplemented) BatchWriteItem(context.Context, tenancy.Scope, *wire.BatchWriteItemInput) (*wire.BatchWriteItemOutput, error) {
	return nil, unknownOp("BatchWriteItem")
}
func (unimplemented) TransactWriteItems(context.Context, tenancy.Scope, *wire.TransactWriteItemsInput) (*wire.TransactWriteItemsOutput, error) {
	return nil, unknownOp("TransactWriteItems")
}
func (unimplemented) TransactGetItems(context.Context, tenancy.Scope, *wire.TransactGetItemsInput) (*wire.TransactGetItemsOutput, error) {
	return nil, unknownOp("TransactGetItems")
}
func (unimplemented) UpdateTimeToLive(context.Context, tenancy.Scope, *wire.UpdateTimeToLiveInput) (*wire.UpdateTimeToLiveOutput, error) {
	return nil, unknownOp("UpdateTimeToLive")
}
func (unimplemented) DescribeTimeToLive(context.Context, tenancy.Scope, *wire.DescribeTimeToLiveInput) (*wire.DescribeTimeToLiveOutput, error) {
	return nil, unknownOp("DescribeTimeToLive")
}
func (unimplemented) TagResource(context.Context, tenancy.Scope, *wire.TagResourceInput) (*wire.EmptyOutput, error) {
	return nil, unknownOp("TagResource")
}
func (unimplemented) UntagResource(context.Context, tenancy.Scope, *wire.UntagResourceInput) (*wire.EmptyOutput, error) {
	return nil, unknownOp("UntagResource")
}
func (unimplemented) ListTagsOfResource(context.Context, tenancy.Scope, *wire.ListTagsOfResourceInput) (*wire.ListTagsOfResourceOutput, error) {
	return nil, unknownOp("ListTagsOfResource")
}
func (unimplemented) DescribeEndpoints(context.Context, tenancy.Scope, *wire.DescribeEndpointsInput) (*wire.DescribeEndpointsOutput, error) {
	return nil, unknownOp("DescribeEndpoints")
}
func (unimplemented) DescribeLimits(context.Context, tenancy.Scope, *wire.DescribeLimitsInput) (*wire.DescribeLimitsOutput, error) {
	return nil, unknownOp("DescribeLimits")
}
