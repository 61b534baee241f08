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

// checkHistory refuses early an export of table at a time its change log
// does not cover (the export itself checks again).
func (s *Service) checkHistory(ctx context.Context, sc tenancy.Scope, table string, at time.Time) error {
	since, ok, err := s.o.Engine.LogCoverage(ctx, sc, table)
	switch {
	case err != nil:
		return err
	case !ok:
		return apierr.New(apierr.InvalidExportTime, "table %s keeps no change-log history with old images to export a past time from: enable its stream with NEW_AND_OLD_IMAGES (or OLD_IMAGE), or have point-in-time recovery hold its log", apierr.Clip(table))
	case at.Before(since):
		return apierr.New(apierr.InvalidExportTime, "table %s's change-log history starts at %s; %s is before it", apierr.Clip(table), since.UTC().Format(time.RFC3339Nano), at.UTC().Format(time.RFC3339Nano))
	}
	return nil
}
