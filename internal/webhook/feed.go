package webhook

import (
	"context"
	"time"

	"github.com/tenantdb/tenantdb/internal/apierr"
	"github.com/tenantdb/tenantdb/internal/changelog"
	"github.com/tenantdb/tenantdb/internal/tenancy"
)

// Feed is a table's change log as delivery reads it, with positions that
// are opaque text of the feed's own: the embedded engine's is a
// changelog.Cursor (Options.Log, through cursorFeed); a gateway's
// (internal/remote) a position in every shard of the engine table's
// DynamoDB stream, which run in parallel and split. A subscription stores
// its position as the feed wrote it and shows it as its cursor.
type Feed interface {
	// Retain makes table keep its changes for consumer (both images);
	// Release lets them go. Errors: ResourceNotFound for a table the
	// scope does not see; Validation where the backend cannot follow it.
	Retain(ctx context.Context, s tenancy.Scope, table, consumer string) error
	Release(ctx context.Context, s tenancy.Scope, table, consumer string) error
	// Follow returns up to limit changes after position from ("": the
	// oldest retained), in commit order per item key; next is the
	// position after them (and after whatever it read and skipped),
	// caughtUp that nothing more is committed now, and after(i) the
	// position just after entries[i] (a delivery cut short before
	// entries[i+1]). Errors: TrimmedDataAccess (the changes after from
	// are gone), ResourceNotFound (the table is gone).
	Follow(ctx context.Context, s tenancy.Scope, table, from string, limit int) (entries []changelog.Entry, next string, caughtUp bool, after func(i int) string, err error)
	// Wait returns when a change after from may have committed (or ctx
	// ends).
	Wait(ctx context.Context, s tenancy.Scope, table, from string) error
	// Start returns the position of the first change committed at or
	// after t. Errors: Validation or TrimmedDataAccess for a time the
	// log no longer holds.
	Start(ctx context.Context, s tenancy.Scope, table string, t time.Time) (string, error)
	// Seek returns where a replay from `from` starts — a record's
	// SequenceNumber (that record and the changes after it) or a position
	// as the feed prints it — given the current position cur. Errors:
	// Validation for anything else.
	Seek(ctx context.Context, s tenancy.Scope, table, cur, from string) (string, error)
}

// cursorFeed is the Feed of a Log with changelog.Cursor positions (the
// embedded engine's change log).
type cursorFeed struct{ l Log }

var _ Feed = cursorFeed{}

func parseCursor(s string) changelog.Cursor {
	c, err := changelog.ParseCursor(s)
	if err != nil {
		return changelog.Cursor{}
	}
	return c
}

func (f cursorFeed) Retain(ctx context.Context, s tenancy.Scope, table, consumer string) error {
	return f.l.RetainLog(ctx, s, table, consumer)
}

func (f cursorFeed) Release(ctx context.Context, s tenancy.Scope, table, consumer string) error {
	return f.l.ReleaseLog(ctx, s, table, consumer)
}

func (f cursorFeed) Follow(ctx context.Context, s tenancy.Scope, table, from string, limit int) ([]changelog.Entry, string, bool, func(int) string, error) {
	page, err := f.l.FollowLog(ctx, s, table, parseCursor(from), limit)
	if err != nil {
		return nil, "", false, nil, err
	}
	es := page.Entries
	return es, page.Next.String(), page.CaughtUp, func(i int) string { return es[i].Next.String() }, nil
}

func (f cursorFeed) Wait(ctx context.Context, s tenancy.Scope, table, from string) error {
	return f.l.WaitLog(ctx, s, table, parseCursor(from))
}

func (f cursorFeed) Start(ctx context.Context, s tenancy.Scope, table string, t time.Time) (string, error) {
	c, err := f.l.LogCursorAt(ctx, s, table, t)
	return c.String(), err
}

func (f cursorFeed) Seek(ctx context.Context, s tenancy.Scope, table, cur, from string) (string, error) {
	_, c, seq, kind := parseFromKind(from)
	switch kind {
	case 2:
		if seq.Seq == 0 {
			return "", apierr.Validationf("from: sequence number %s names no record", apierr.Clip(from))
		}
		cc := parseCursor(cur)
		return changelog.Cursor{Stream: cc.Stream, Shard: seq.Shard, Seq: seq.Seq - 1}.String(), nil
	case 3:
		return c.String(), nil
	}
	return "", errBadFrom(from)
}

func errBadFrom(from string) error {
	return apierr.Validationf("from must be an RFC 3339 time (2026-01-02T15:04:05Z), a record's SequenceNumber or a cursor, not %q", apierr.Clip(from))
}
