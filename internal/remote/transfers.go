package remote

import (
	"context"

	"github.com/tenantdb/tenantdb/internal/apierr"
	"github.com/tenantdb/tenantdb/internal/tenancy"
	"github.com/tenantdb/tenantdb/internal/wire"
)

// The export and import operations read a consistent snapshot of the
// embedded store (internal/transfer); over a remote engine there is none
// to read, so they are refused with a message saying so.

func errNoTransfers(op string) error {
	return apierr.New(apierr.Validation, "%s is not available with the remote backend: exports and imports need the embedded engine", op)
}

// ExportTableToPointInTime is refused (see errNoTransfers).
func (b *Backend) ExportTableToPointInTime(context.Context, tenancy.Scope, *wire.ExportTableToPointInTimeInput) (*wire.ExportTableToPointInTimeOutput, error) {
	return nil, errNoTransfers("ExportTableToPointInTime")
}

// DescribeExport is refused (see errNoTransfers).
func (b *Backend) DescribeExport(context.Context, tenancy.Scope, *wire.DescribeExportInput) (*wire.DescribeExportOutput, error) {
	return nil, errNoTransfers("DescribeExport")
}

// ListExports is refused (see errNoTransfers).
func (b *Backend) ListExports(context.Context, tenancy.Scope, *wire.ListExportsInput) (*wire.ListExportsOutput, error) {
	return nil, errNoTransfers("ListExports")
}

// ImportTable is refused (see errNoTransfers).
func (b *Backend) ImportTable(context.Context, tenancy.Scope, *wire.ImportTableInput) (*wire.ImportTableOutput, error) {
	return nil, errNoTransfers("ImportTable")
}

// DescribeImport is refused (see errNoTransfers).
func (b *Backend) DescribeImport(context.Context, tenancy.Scope, *wire.DescribeImportInput) (*wire.DescribeImportOutput, error) {
	return nil, errNoTransfers("DescribeImport")
}

// ListImports is refused (see errNoTransfers).
func (b *Backend) ListImports(context.Context, tenancy.Scope, *wire.ListImportsInput) (*wire.ListImportsOutput, error) {
	return nil, errNoTransfers("ListImports")
}
