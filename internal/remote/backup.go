package remote

import (
	"context"

	"github.com/tenantdb/tenantdb/internal/apierr"
	"github.com/tenantdb/tenantdb/internal/tenancy"
	"github.com/tenantdb/tenantdb/internal/wire"
)

// Backups and point-in-time recovery read tenantdb's change log and
// snapshots of the embedded store; on this backend they are unknown
// operations for now, as the Streams operations are.

func errNoBackups(op string) error {
	return apierr.New(apierr.UnknownOperation, "Unknown operation %s: backups and point-in-time recovery are not available with the remote backend yet", op)
}

func (b *Backend) noBackups(ctx context.Context, s tenancy.Scope, op string) error {
	if err := check(ctx, s); err != nil {
		return err
	}
	return errNoBackups(op)
}

// CreateBackup is not available on this backend.
func (b *Backend) CreateBackup(ctx context.Context, s tenancy.Scope, _ *wire.CreateBackupInput) (*wire.CreateBackupOutput, error) {
	return nil, b.noBackups(ctx, s, "CreateBackup")
}

// DescribeBackup is not available on this backend.
func (b *Backend) DescribeBackup(ctx context.Context, s tenancy.Scope, _ *wire.DescribeBackupInput) (*wire.DescribeBackupOutput, error) {
	return nil, b.noBackups(ctx, s, "DescribeBackup")
}

// ListBackups is not available on this backend.
func (b *Backend) ListBackups(ctx context.Context, s tenancy.Scope, _ *wire.ListBackupsInput) (*wire.ListBackupsOutput, error) {
	return nil, b.noBackups(ctx, s, "ListBackups")
}

// DeleteBackup is not available on this backend.
func (b *Backend) DeleteBackup(ctx context.Context, s tenancy.Scope, _ *wire.DeleteBackupInput) (*wire.DeleteBackupOutput, error) {
	return nil, b.noBackups(ctx, s, "DeleteBackup")
}

// RestoreTableFromBackup is not available on this backend.
func (b *Backend) RestoreTableFromBackup(ctx context.Context, s tenancy.Scope, _ *wire.RestoreTableFromBackupInput) (*wire.RestoreTableFromBackupOutput, error) {
	return nil, b.noBackups(ctx, s, "RestoreTableFromBackup")
}

// UpdateContinuousBackups is not available on this backend.
func (b *Backend) UpdateContinuousBackups(ctx context.Context, s tenancy.Scope, _ *wire.UpdateContinuousBackupsInput) (*wire.UpdateContinuousBackupsOutput, error) {
	return nil, b.noBackups(ctx, s, "UpdateContinuousBackups")
}

// DescribeContinuousBackups is not available on this backend.
func (b *Backend) DescribeContinuousBackups(ctx context.Context, s tenancy.Scope, _ *wire.DescribeContinuousBackupsInput) (*wire.DescribeContinuousBackupsOutput, error) {
	return nil, b.noBackups(ctx, s, "DescribeContinuousBackups")
}

// RestoreTableToPointInTime is not available on this backend.
func (b *Backend) RestoreTableToPointInTime(ctx context.Context, s tenancy.Scope, _ *wire.RestoreTableToPointInTimeInput) (*wire.RestoreTableToPointInTimeOutput, error) {
	return nil, b.noBackups(ctx, s, "RestoreTableToPointInTime")
}
