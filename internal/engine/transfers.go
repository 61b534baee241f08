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

// TransferOps serves a backend's export and import operations by running
// those of the Transfers installed with SetTransfers; without one they
// are refused, saying how to have them (Missing). Both backends embed it,
// so the operations reach the one transfer service the same way.
type TransferOps struct {
	transfers Transfers
	// Missing ends the refusal's message: what turns the operations on.
	Missing string
}

// SetTransfers installs the service of the export and import operations.
// Call it before serving; without it they are refused.
func (o *TransferOps) SetTransfers(t Transfers) { o.transfers = t }

func (o *TransferOps) transfer(ctx context.Context, s tenancy.Scope, op string) (Transfers, error) {
	if err := check(ctx, s); err != nil {
		return nil, err
	}
	if o.transfers == nil {
		return nil, apierr.New(apierr.Validation, "%s is not available: %s", op, o.Missing)
	}
	return o.transfers, nil
}

// ExportTableToPointInTime runs the installed Transfers' operation.
func (o *TransferOps) ExportTableToPointInTime(ctx context.Context, s tenancy.Scope, in *wire.ExportTableToPointInTimeInput) (*wire.ExportTableToPointInTimeOutput, error) {
	t, err := o.transfer(ctx, s, "ExportTableToPointInTime")
	if err != nil {
		return nil, err
	}
	return t.ExportTableToPointInTime(ctx, s, in)
}

// DescribeExport runs the installed Transfers' operation.
func (o *TransferOps) DescribeExport(ctx context.Context, s tenancy.Scope, in *wire.DescribeExportInput) (*wire.DescribeExportOutput, error) {
	t, err := o.transfer(ctx, s, "DescribeExport")
	if err != nil {
		return nil, err
	}
	return t.DescribeExport(ctx, s, in)
}

// ListExports runs the installed Transfers' operation.
func (o *TransferOps) ListExports(ctx context.Context, s tenancy.Scope, in *wire.ListExportsInput) (*wire.ListExportsOutput, error) {
	t, err := o.transfer(ctx, s, "ListExports")
	if err != nil {
		return nil, err
	}
	return t.ListExports(ctx, s, in)
}

// ImportTable runs the installed Transfers' operation.
func (o *TransferOps) ImportTable(ctx context.Context, s tenancy.Scope, in *wire.ImportTableInput) (*wire.ImportTableOutput, error) {
	t, err := o.transfer(ctx, s, "ImportTable")
	if err != nil {
		return nil, err
	}
	return t.ImportTable(ctx, s, in)
}

// DescribeImport runs the installed Transfers' operation.
func (o *TransferOps) DescribeImport(ctx context.Context, s tenancy.Scope, in *wire.DescribeImportInput) (*wire.DescribeImportOutput, error) {
	t, err := o.transfer(ctx, s, "DescribeImport")
	if err != nil {
		return nil, err
	}
	return t.DescribeImport(ctx, s, in)
}

// ListImports runs the installed Transfers' operation.
func (o *TransferOps) ListImports(ctx context.Context, s tenancy.Scope, in *wire.ListImportsInput) (*wire.ListImportsOutput, error) {
	t, err := o.transfer(ctx, s, "ListImports")
	if err != nil {
		return nil, err
	}
	return t.ListImports(ctx, s, in)
}
