package remote

import (
	"context"

	"github.com/tenantdb/tenantdb/internal/apierr"
	"github.com/tenantdb/tenantdb/internal/tenancy"
	"github.com/tenantdb/tenantdb/internal/wire"
)

// The DynamoDB Streams operations read tenantdb's change log, which only
// the embedded engine keeps so far; on this backend they are unknown
// operations, as before the log existed.

func errNoStreams(op string) error {
	return apierr.New(apierr.UnknownOperation, "Unknown operation %s: DynamoDB Streams are not available with the remote backend yet", op)
}

// ListStreams is not available on this backend.
func (b *Backend) ListStreams(ctx context.Context, s tenancy.Scope, _ *wire.ListStreamsInput) (*wire.ListStreamsOutput, error) {
	if err := check(ctx, s); err != nil {
		return nil, err
	}
	return nil, errNoStreams("ListStreams")
}

// DescribeStream is not available on this backend.
func (b *Backend) DescribeStream(ctx context.Context, s tenancy.Scope, _ *wire.DescribeStreamInput) (*wire.DescribeStreamOutput, error) {
	if err := check(ctx, s); err != nil {
		return nil, err
	}
	return nil, errNoStreams("DescribeStream")
}

// GetShardIterator is not available on this backend.
func (b *Backend) GetShardIterator(ctx context.Context, s tenancy.Scope, _ *wire.GetShardIteratorInput) (*wire.GetShardIteratorOutput, error) {
	if err := check(ctx, s); err != nil {
		return nil, err
	}
	return nil, errNoStreams("GetShardIterator")
}

// GetRecords is not available on this backend.
func (b *Backend) GetRecords(ctx context.Context, s tenancy.Scope, _ *wire.GetRecordsInput) (*wire.GetRecordsOutput, error) {
	if err := check(ctx, s); err != nil {
		return nil, err
	}
	return nil, errNoStreams("GetRecords")
}
