package transfer

import (
	"context"
	"errors"
	"time"

	"github.com/tenantdb/tenantdb/internal/apierr"
	"github.com/tenantdb/tenantdb/internal/engine"
	"github.com/tenantdb/tenantdb/internal/tenancy"
)

// historyError maps the engine's history errors of an export of table
// at `at` to InvalidExportTime.
func historyError(table string, at time.Time, err error) error {
	switch {
	case errors.Is(err, engine.ErrHistoryTrimmed):
		return apierr.New(apierr.InvalidExportTime, "table %s's change log no longer holds the changes since %s (retention trimmed them)", apierr.Clip(table), at.UTC().Format(time.RFC3339Nano))
	case errors.Is(err, engine.ErrHistoryIncomplete):
		return apierr.New(apierr.InvalidExportTime, "table %s's change log lacks the old image of a change after %s", apierr.Clip(table), at.UTC().Format(time.RFC3339Nano))
	}
	return err
}

// checkHistory refuses early an export of table at a time the source
// cannot read (the export itself checks again).
func (s *Service) checkHistory(ctx context.Context, sc tenancy.Scope, table string, at time.Time) error {
	return s.o.Source.PastTime(ctx, sc, table, at)
}
