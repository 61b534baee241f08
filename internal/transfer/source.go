package transfer

import (
	"context"
	"time"

	"github.com/tenantdb/tenantdb/internal/apierr"
	"github.com/tenantdb/tenantdb/internal/attr"
	"github.com/tenantdb/tenantdb/internal/engine"
	"github.com/tenantdb/tenantdb/internal/tenancy"
	"github.com/tenantdb/tenantdb/internal/wire"
)

// Source is what exports read and what describes the tables: the
// embedded engine (EngineSource: one storage snapshot) or a gateway's
// remote backend (strongly consistent reads of the caller's collections,
// wired by the node). Both resolve tables with the caller's Scope, as a
// Scan does; this package never decides who sees what.
type Source interface {
	DescribeTable(context.Context, tenancy.Scope, *wire.DescribeTableInput) (*wire.DescribeTableOutput, error)
	DescribeTimeToLive(context.Context, tenancy.Scope, *wire.DescribeTimeToLiveInput) (*wire.DescribeTimeToLiveOutput, error)
	ListTagsOfResource(context.Context, tenancy.Scope, *wire.ListTagsOfResourceInput) (*wire.ListTagsOfResourceOutput, error)
	// TableKeys returns the key attribute names of a table (partition
	// key, then sort key if any).
	TableKeys(ctx context.Context, sc tenancy.Scope, name string) ([]string, error)
	// View resolves tables (all the scope sees when empty) and opens
	// them for reading.
	View(ctx context.Context, sc tenancy.Scope, tables []string) (View, error)
	// PastTime returns nil if table's items can be read as of at, else
	// an InvalidExportTime error saying why.
	PastTime(ctx context.Context, sc tenancy.Scope, table string, at time.Time) error
}

// View reads the items of the tables a Source resolved.
type View interface {
	// Tables returns the tables' names, in the order resolved.
	Tables() []string
	// Items calls fn with every item of table i in the scope's
	// namespace; fn's error stops it and is returned.
	Items(ctx context.Context, i int, fn func(attr.Item) error) error
	// ItemsAt is Items as of the past time at (checked by PastTime).
	ItemsAt(ctx context.Context, i int, at time.Time, fn func(attr.Item) error) error
	Close() error
}

// EngineSource is the embedded engine as a Source: a View is one
// engine.Snapshot, and a past time is read from the table's change log
// (history.go).
func EngineSource(e *engine.Engine) Source { return engineSource{e} }

type engineSource struct{ *engine.Engine }

func (e engineSource) View(ctx context.Context, sc tenancy.Scope, tables []string) (View, error) {
	sn, err := e.Snapshot(ctx, sc, tables)
	if err != nil {
		return nil, err
	}
	return engineView{sn}, nil
}

// PastTime checks the table's change-log coverage of at.
func (e engineSource) PastTime(ctx context.Context, sc tenancy.Scope, table string, at time.Time) error {
	since, ok, err := e.LogCoverage(ctx, sc, table)
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

type engineView struct{ *engine.Snapshot }

func (v engineView) Tables() []string {
	ts := v.Snapshot.Tables()
	out := make([]string, len(ts))
	for i, t := range ts {
		out[i] = t.Name
	}
	return out
}

func (v engineView) ItemsAt(ctx context.Context, i int, at time.Time, fn func(attr.Item) error) error {
	return historyError(v.Tables()[i], at, v.Snapshot.ItemsAt(ctx, i, at, fn))
}
