package engine

import (
	"context"

	"github.com/tenantdb/tenantdb/internal/apierr"
	"github.com/tenantdb/tenantdb/internal/tenancy"
	"github.com/tenantdb/tenantdb/internal/wire"
)

// Transfers serves the export and import operations. They are built on
// the engine (a Snapshot to export from, the ordinary write path to
// import through) rather than inside it; package transfer implements
// this, and the node hands it to the engine with SetTransfers.
type Transfers interface {
	ExportTableToPointInTime(context.Context, tenancy.Scope, *wire.ExportTableToPointInTimeInput) (*wire.ExportTableToPointInTimeOutput, error)
	DescribeExport(context.Context, tenancy.Scope, *wire.DescribeExportInput) (*wire.DescribeExportOutput, error)
	ListExports(context.Context, tenancy.Scope, *wire.ListExportsInput) (*wire.ListExportsOutput, error)
	ImportTable(context.Context, tenancy.Scope, *wire.ImportTableInput) (*wire.ImportTableOutput, error)
	DescribeImport(context.Context, tenancy.Scope, *wire.DescribeImportInput) (*wire.DescribeImportOutput, error)
	ListImports(context.Context, tenancy.Scope, *wire.ListImportsInput) (*wire.ListImportsOutput, error)
}

// SetTransfers installs the service of the export and import operations.
// Call it before serving; without it they are refused.
func (e *Engine) SetTransfers(t Transfers) { e.transfers = t }

func (e *Engine) transfer(ctx context.Context, s tenancy.Scope, op string) (Transfers, error) {
	if err := check(ctx, s); err != nil {
		return nil, err
	}
	if e.transfers == nil {
		return nil, apierr.New(apierr.Validation, "%s is not available: this server has no export root (start it with --export-root DIR or TENANTDB_EXPORT_ROOT)", op)
	}
	return e.transfers, nil
}

// ExportTableToPointInTime runs the installed Transfers' operation.
func (e *Engine) ExportTableToPointInTime(ctx context.Context, s tenancy.Scope, in *wire.ExportTableToPointInTimeInput) (*wire.ExportTableToPointInTimeOutput, error) {
	t, err := e.transfer(ctx, s, "ExportTableToPointInTime")
	if err != nil {
		return nil, err
	}
	return t.ExportTableToPointInTime(ctx, s, in)
}

// DescribeExport runs the installed Transfers' operation.
func (e *Engine) DescribeExport(ctx context.Context, s tenancy.Scope, in *wire.DescribeExportInput) (*wire.DescribeExportOutput, error) {
	t, err := e.transfer(ctx, s, "DescribeExport")
	if err != nil {
		return nil, err
	}
	return t.DescribeExport(ctx, s, in)
}

// ListExports runs the installed Transfers' operation.
func (e *Engine) ListExports(ctx context.Context, s tenancy.Scope, in *wire.ListExportsInput) (*wire.ListExportsOutput, error) {
	t, err := e.transfer(ctx, s, "ListExports")
	if err != nil {
		return nil, err
	}
	return t.ListExports(ctx, s, in)
}

// ImportTable runs the installed Transfers' operation.
func (e *Engine) ImportTable(ctx context.Context, s tenancy.Scope, in *wire.ImportTableInput) (*wire.ImportTableOutput, error) {
	t, err := e.transfer(ctx, s, "ImportTable")
	if err != nil {
		return nil, err
	}
	return t.ImportTable(ctx, s, in)
}

// DescribeImport runs the installed Transfers' operation.
func (e *Engine) DescribeImport(ctx context.Context, s tenancy.Scope, in *wire.DescribeImportInput) (*wire.DescribeImportOutput, error) {
	t, err := e.transfer(ctx, s, "DescribeImport")
	if err != nil {
		return nil, err
	}
	return t.DescribeImport(ctx, s, in)
}

// ListImports runs the installed Transfers' operation.
func (e *Engine) ListImports(ctx context.Context, s tenancy.Scope, in *wire.ListImportsInput) (*wire.ListImportsOutput, error) {
	t, err := e.transfer(ctx, s, "ListImports")
	if err != nil {
		return nil, err
	}
	return t.ListImports(ctx, s, in)
}
