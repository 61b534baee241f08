package dynamo

import (
	"context"
	"strings"

	"github.com/tenantdb/tenantdb/internal/partiql"
	"github.com/tenantdb/tenantdb/internal/tenancy"
	"github.com/tenantdb/tenantdb/internal/wire"
)

// Backend executes DynamoDB operations for a tenant: one method per
// operation of the table, each taking the Scope the guard issued. The
// local engine (*engine.Engine) implements it; a remote engine can too.
// The server reaches a Backend through Bind and any decorators.
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
	ExecuteStatement(context.Context, tenancy.Scope, *wire.ExecuteStatementInput) (*wire.ExecuteStatementOutput, error)
	BatchExecuteStatement(context.Context, tenancy.Scope, *wire.BatchExecuteStatementInput) (*wire.BatchExecuteStatementOutput, error)
	ExecuteTransaction(context.Context, tenancy.Scope, *wire.ExecuteTransactionInput) (*wire.ExecuteTransactionOutput, error)

	CreateBackup(context.Context, tenancy.Scope, *wire.CreateBackupInput) (*wire.CreateBackupOutput, error)
	DescribeBackup(context.Context, tenancy.Scope, *wire.DescribeBackupInput) (*wire.DescribeBackupOutput, error)
	ListBackups(context.Context, tenancy.Scope, *wire.ListBackupsInput) (*wire.ListBackupsOutput, error)
	DeleteBackup(context.Context, tenancy.Scope, *wire.DeleteBackupInput) (*wire.DeleteBackupOutput, error)
	RestoreTableFromBackup(context.Context, tenancy.Scope, *wire.RestoreTableFromBackupInput) (*wire.RestoreTableFromBackupOutput, error)
	UpdateContinuousBackups(context.Context, tenancy.Scope, *wire.UpdateContinuousBackupsInput) (*wire.UpdateContinuousBackupsOutput, error)
	DescribeContinuousBackups(context.Context, tenancy.Scope, *wire.DescribeContinuousBackupsInput) (*wire.DescribeContinuousBackupsOutput, error)
	RestoreTableToPointInTime(context.Context, tenancy.Scope, *wire.RestoreTableToPointInTimeInput) (*wire.RestoreTableToPointInTimeOutput, error)

	ListStreams(context.Context, tenancy.Scope, *wire.ListStreamsInput) (*wire.ListStreamsOutput, error)
	DescribeStream(context.Context, tenancy.Scope, *wire.DescribeStreamInput) (*wire.DescribeStreamOutput, error)
	GetShardIterator(context.Context, tenancy.Scope, *wire.GetShardIteratorInput) (*wire.GetShardIteratorOutput, error)
	GetRecords(context.Context, tenancy.Scope, *wire.GetRecordsInput) (*wire.GetRecordsOutput, error)

	ExportTableToPointInTime(context.Context, tenancy.Scope, *wire.ExportTableToPointInTimeInput) (*wire.ExportTableToPointInTimeOutput, error)
	DescribeExport(context.Context, tenancy.Scope, *wire.DescribeExportInput) (*wire.DescribeExportOutput, error)
	ListExports(context.Context, tenancy.Scope, *wire.ListExportsInput) (*wire.ListExportsOutput, error)
	ImportTable(context.Context, tenancy.Scope, *wire.ImportTableInput) (*wire.ImportTableOutput, error)
	DescribeImport(context.Context, tenancy.Scope, *wire.DescribeImportInput) (*wire.DescribeImportOutput, error)
	ListImports(context.Context, tenancy.Scope, *wire.ListImportsInput) (*wire.ListImportsOutput, error)
}

// The services whose X-Amz-Target prefixes tenantdb answers, all on the
// same endpoint.
const (
	dynamoDB        = "DynamoDB_20120810"
	dynamoDBStreams = "DynamoDBStreams_20120810"
)

// table lists every operation tenantdb serves: its service, name, class,
// the Backend method that executes it (which fixes its input type), and
// the tables whose items it touches. See the package comment.
var table = []*Op{
	define(dynamoDB, "CreateTable", tenancy.ClassDDL, Backend.CreateTable, nil),
	define(dynamoDB, "DescribeTable", tenancy.ClassMeta, Backend.DescribeTable, nil),
	define(dynamoDB, "ListTables", tenancy.ClassMeta, Backend.ListTables, nil),
	define(dynamoDB, "DeleteTable", tenancy.ClassDDL, Backend.DeleteTable, nil),
	define(dynamoDB, "UpdateTable", tenancy.ClassDDL, Backend.UpdateTable, nil),
	define(dynamoDB, "PutItem", tenancy.ClassWrite, Backend.PutItem, func(in *wire.PutItemInput) []string { return []string{in.TableName} }),
	define(dynamoDB, "GetItem", tenancy.ClassRead, Backend.GetItem, func(in *wire.GetItemInput) []string { return []string{in.TableName} }),
	define(dynamoDB, "UpdateItem", tenancy.ClassWrite, Backend.UpdateItem, func(in *wire.UpdateItemInput) []string { return []string{in.TableName} }),
	define(dynamoDB, "DeleteItem", tenancy.ClassWrite, Backend.DeleteItem, func(in *wire.DeleteItemInput) []string { return []string{in.TableName} }),
	define(dynamoDB, "Query", tenancy.ClassRead, Backend.Query, func(in *wire.QueryInput) []string { return []string{in.TableName} }),
	define(dynamoDB, "Scan", tenancy.ClassRead, Backend.Scan, func(in *wire.ScanInput) []string { return []string{in.TableName} }),
	define(dynamoDB, "BatchGetItem", tenancy.ClassRead, Backend.BatchGetItem, batchGetTables),
	define(dynamoDB, "BatchWriteItem", tenancy.ClassWrite, Backend.BatchWriteItem, batchWriteTables),
	define(dynamoDB, "TransactWriteItems", tenancy.ClassWrite, Backend.TransactWriteItems, transactWriteTables),
	define(dynamoDB, "TransactGetItems", tenancy.ClassRead, Backend.TransactGetItems, transactGetTables),
	define(dynamoDB, "UpdateTimeToLive", tenancy.ClassDDL, Backend.UpdateTimeToLive, nil),
	define(dynamoDB, "DescribeTimeToLive", tenancy.ClassMeta, Backend.DescribeTimeToLive, nil),
	define(dynamoDB, "TagResource", tenancy.ClassDDL, Backend.TagResource, nil),
	define(dynamoDB, "UntagResource", tenancy.ClassDDL, Backend.UntagResource, nil),
	define(dynamoDB, "ListTagsOfResource", tenancy.ClassMeta, Backend.ListTagsOfResource, nil),
	define(dynamoDB, "DescribeEndpoints", tenancy.ClassMeta, Backend.DescribeEndpoints, nil),
	define(dynamoDB, "DescribeLimits", tenancy.ClassMeta, Backend.DescribeLimits, nil),
	// NB: the PartiQL operations are admitted as reads; their write
	// statements are checked again as writes once parsed (Scope.Permits).
	refine(define(dynamoDB, "ExecuteStatement", tenancy.ClassRead, Backend.ExecuteStatement,
		func(in *wire.ExecuteStatementInput) []string { return statementTables(nil, in.Statement) }),
		func(in *wire.ExecuteStatementInput) tenancy.ActionClass { return statementsClass(in.Statement) }),
	refine(define(dynamoDB, "BatchExecuteStatement", tenancy.ClassRead, Backend.BatchExecuteStatement, batchStatementTables),
		func(in *wire.BatchExecuteStatementInput) tenancy.ActionClass {
			stmts := make([]string, len(in.Statements))
			for i, st := range in.Statements {
				stmts[i] = st.Statement
			}
			return statementsClass(stmts...)
		}),
	refine(define(dynamoDB, "ExecuteTransaction", tenancy.ClassRead, Backend.ExecuteTransaction, transactionTables),
		func(in *wire.ExecuteTransactionInput) tenancy.ActionClass {
			stmts := make([]string, len(in.TransactStatements))
			for i, st := range in.TransactStatements {
				stmts[i] = st.Statement
			}
			return statementsClass(stmts...)
		}),

	// Backups and point-in-time recovery act on the caller's view of a
	// table (on a shared table, the tenant's own items) and restore into
	// a new table of the caller's namespace.
	define(dynamoDB, "CreateBackup", tenancy.ClassDDL, Backend.CreateBackup, nil),
	define(dynamoDB, "DescribeBackup", tenancy.ClassMeta, Backend.DescribeBackup, nil),
	define(dynamoDB, "ListBackups", tenancy.ClassMeta, Backend.ListBackups, nil),
	define(dynamoDB, "DeleteBackup", tenancy.ClassDDL, Backend.DeleteBackup, nil),
	define(dynamoDB, "RestoreTableFromBackup", tenancy.ClassDDL, Backend.RestoreTableFromBackup, nil),
	define(dynamoDB, "UpdateContinuousBackups", tenancy.ClassDDL, Backend.UpdateContinuousBackups, nil),
	define(dynamoDB, "DescribeContinuousBackups", tenancy.ClassMeta, Backend.DescribeContinuousBackups, nil),
	define(dynamoDB, "RestoreTableToPointInTime", tenancy.ClassDDL, Backend.RestoreTableToPointInTime, nil),

	define(dynamoDBStreams, "ListStreams", tenancy.ClassMeta, Backend.ListStreams, nil),
	define(dynamoDBStreams, "DescribeStream", tenancy.ClassMeta, Backend.DescribeStream, nil),
	define(dynamoDBStreams, "GetShardIterator", tenancy.ClassRead, Backend.GetShardIterator, func(in *wire.GetShardIteratorInput) []string { return streamTable(in.StreamArn) }),
	// NB: GetRecords names its table only inside the sealed iterator, so no
	// per-table quota applies to it; its unit is charged to the tenant's
	// reads and metered against the table (wire.Usage.Table).
	define(dynamoDBStreams, "GetRecords", tenancy.ClassRead, Backend.GetRecords, func(*wire.GetRecordsInput) []string { return nil }),

	// NB: an export reads every item of a table (a read key may, as it may
	// Scan), and its request is charged to that table; an import creates
	// the table it fills (DDL, admin keys), and its items are written
	// through BatchWriteItem, admitted and metered as any.
	define(dynamoDB, "ExportTableToPointInTime", tenancy.ClassRead, Backend.ExportTableToPointInTime, func(in *wire.ExportTableToPointInTimeInput) []string { return arnTable(in.TableArn) }),
	define(dynamoDB, "DescribeExport", tenancy.ClassMeta, Backend.DescribeExport, nil),
	define(dynamoDB, "ListExports", tenancy.ClassMeta, Backend.ListExports, nil),
	define(dynamoDB, "ImportTable", tenancy.ClassDDL, Backend.ImportTable, nil),
	define(dynamoDB, "DescribeImport", tenancy.ClassMeta, Backend.DescribeImport, nil),
	define(dynamoDB, "ListImports", tenancy.ClassMeta, Backend.ListImports, nil),
}

// streamTable returns the table named in a stream ARN
// (arn:...:table/<name>/stream/<label>), or nil if there is none.
func streamTable(arn string) []string {
	_, rest, ok := strings.Cut(arn, ":table/")
	if !ok {
		return nil
	}
	name, _, ok := strings.Cut(rest, "/stream/")
	if !ok || name == "" {
		return nil
	}
	return []string{name}
}

// arnTable returns the table named in a table ARN (arn:...:table/<name>),
// or nil if there is none.
func arnTable(arn string) []string {
	_, name, ok := strings.Cut(arn, ":table/")
	if !ok || name == "" || strings.Contains(name, "/") {
		return nil
	}
	return []string{name}
}

// The tables of the multi-table operations.

// statementTables appends the table a PartiQL statement names to out,
// unless it does not parse (the backend refuses it).
func statementTables(out []string, stmt string) []string {
	st, err := partiql.Parse(stmt)
	if err != nil {
		return out
	}
	return append(out, partiql.TableOf(st))
}

// statementsClass is ClassWrite if one of the statements writes or is an
// EXISTS (a transaction's condition check, charged as a write), and
// ClassRead otherwise (statements that do not parse are refused anyway).
func statementsClass(stmts ...string) tenancy.ActionClass {
	for _, stmt := range stmts {
		if partiql.Writes(stmt) {
			return tenancy.ClassWrite
		}
	}
	return tenancy.ClassRead
}

func batchStatementTables(in *wire.BatchExecuteStatementInput) []string {
	var out []string
	for _, st := range in.Statements {
		out = statementTables(out, st.Statement)
	}
	return out
}

func transactionTables(in *wire.ExecuteTransactionInput) []string {
	var out []string
	for _, st := range in.TransactStatements {
		out = statementTables(out, st.Statement)
	}
	return out
}

func batchGetTables(in *wire.BatchGetItemInput) []string {
	out := make([]string, 0, len(in.RequestItems))
	for t := range in.RequestItems {
		out = append(out, t)
	}
	return out
}

func batchWriteTables(in *wire.BatchWriteItemInput) []string {
	out := make([]string, 0, len(in.RequestItems))
	for t := range in.RequestItems {
		out = append(out, t)
	}
	return out
}

func transactGetTables(in *wire.TransactGetItemsInput) []string {
	out := make([]string, 0, len(in.TransactItems))
	for _, it := range in.TransactItems {
		if it.Get != nil {
			out = append(out, it.Get.TableName)
		}
	}
	return out
}

func transactWriteTables(in *wire.TransactWriteItemsInput) []string {
	out := make([]string, 0, len(in.TransactItems))
	for _, it := range in.TransactItems {
		switch {
		case it.Put != nil:
			out = append(out, it.Put.TableName)
		case it.Update != nil:
			out = append(out, it.Update.TableName)
		case it.Delete != nil:
			out = append(out, it.Delete.TableName)
		case it.ConditionCheck != nil:
			out = append(out, it.ConditionCheck.TableName)
		}
	}
	return out
}
