package engine

import (
	"context"
	"slices"
	"strings"
	"time"

	"github.com/tenantdb/tenantdb/internal/apierr"
	"github.com/tenantdb/tenantdb/internal/changelog"
	"github.com/tenantdb/tenantdb/internal/schema"
	"github.com/tenantdb/tenantdb/internal/tenancy"
)

// The change log for tenantdb's own consumers (webhooks, aggregates,
// point-in-time recovery, exports, moves), without the Streams API.
//
// There is one record per change, never a second log beside the
// DynamoDB stream: a table's log is the lineage of its change log
// streams (changelog.Stream), and FollowLog reads all of them as one
// sequence per namespace. While a table has consumers
// (schema.Table.LogConsumers):
//
//   - with its DynamoDB stream enabled, that stream is the log; its
//     records keep both images (the capture widens, see streamOf), and
//     the Streams API still projects them to the view type;
//   - with its stream disabled, a hidden stream (changelog.Stream.Hidden,
//     schema.Table.HiddenStream) is the log: DescribeTable, ListStreams,
//     DescribeStream, GetShardIterator and GetRecords never show it.
//
// Enabling the DynamoDB stream closes the hidden stream; disabling it
// opens a new hidden one. The switch is DDL like any other (definition
// published, lock barrier, then the old stream disabled), so a change
// committed by a writer that read the old definition lands in the old
// stream with a number above some already in the new one; FollowLog
// merges the streams by number, so nobody sees the seam.

// maxConsumerName bounds a consumer's name.
const maxConsumerName = 255

func checkConsumer(name string) error {
	if name == "" || len(name) > maxConsumerName || strings.ContainsFunc(name, func(r rune) bool { return r < 0x20 || r == 0x7f }) {
		return apierr.Validationf("Invalid change log consumer name: %q (1 to %d printable characters)", apierr.Clip(name), maxConsumerName)
	}
	return nil
}

// RetainLog makes table keep a change log with old and new images for as
// long as consumer (a stable name such as "webhook:<id>",
// "aggregate:<name>", "pitr") of the scope's tenant environment holds it,
// whether or not its DynamoDB stream is enabled. Idempotent. The
// consumer set is part of the table's definition, so it survives
// restarts; consumers of different tenants (on a shared table) never
// release each other's hold. Errors: ValidationException (name),
// ResourceNotFoundException, AccessDeniedException (the operator, a
// credential narrowed to other tables).
func (e *Engine) RetainLog(ctx context.Context, s tenancy.Scope, table, consumer string) error {
	return e.retainLog(ctx, s, table, consumer, 0, false)
}

// retainLog is RetainLog; with setRetention, the consumer's hold also
// asks for retention (0: the log's default), whether it is new or not.
func (e *Engine) retainLog(ctx context.Context, s tenancy.Scope, table, consumer string, retention time.Duration, setRetention bool) error {
	if err := check(ctx, s); err != nil {
		return err
	}
	if err := checkConsumer(consumer); err != nil {
		return err
	}
	e.ddl.Lock()
	defer e.ddl.Unlock()
	tg, err := e.res.Open(ctx, s, table)
	if err != nil {
		return err
	}
	t := tg.Table
	want := schema.LogConsumer{Tenant: s.Tenant(), Env: s.Env(), Name: consumer, Retention: retention}
	i, found := slices.BinarySearchFunc(t.LogConsumers, want, compareConsumers)
	if found && (!setRetention || t.LogConsumers[i].Retention == retention) && !t.LogConsumers[i].Since.IsZero() {
		return nil
	}
	c := t.Clone()
	if found {
		if setRetention {
			c.LogConsumers[i].Retention = retention
		}
		if c.LogConsumers[i].Since.IsZero() {
			found = false // a crash came before Since was set: set it now
		}
	} else {
		if !setRetention {
			want.Retention = 0
		}
		c.LogConsumers = slices.Insert(c.LogConsumers, i, want)
	}
	if logStream(c) == 0 {
		// NB: the descriptor is written before the definition naming it.
		if err := e.newHiddenStream(c); err != nil {
			return err
		}
	}
	if err := e.publishLog(t, c); err != nil || found {
		return err
	}
	// NB: Since is taken after publishLog's barrier: every change made
	// later is recorded with both images.
	d := c.Clone()
	d.LogConsumers[i].Since = e.opts.Now()
	return e.persist(d)
}

// ReleaseLog ends consumer's hold (of the scope's tenant environment) on
// table's change log. Idempotent. When the last consumer goes and the
// DynamoDB stream is disabled, the hidden stream is disabled too; its
// records go with retention. Errors as RetainLog.
func (e *Engine) ReleaseLog(ctx context.Context, s tenancy.Scope, table, consumer string) error {
	if err := check(ctx, s); err != nil {
		return err
	}
	if err := checkConsumer(consumer); err != nil {
		return err
	}
	e.ddl.Lock()
	defer e.ddl.Unlock()
	tg, err := e.res.Open(ctx, s, table)
	if err != nil {
		return err
	}
	t := tg.Table
	i, found := slices.BinarySearchFunc(t.LogConsumers, schema.LogConsumer{Tenant: s.Tenant(), Env: s.Env(), Name: consumer}, compareConsumers)
	if !found {
		return nil
	}
	c := t.Clone()
	c.LogConsumers = slices.Delete(c.LogConsumers, i, i+1)
	if len(c.LogConsumers) == 0 {
		c.LogConsumers = nil
		c.HiddenStream = 0
	}
	return e.publishLog(t, c)
}

// publishLog persists and publishes c, t with its log consumers changed,
// makes every writer see it, then disables the hidden stream t had if c
// has none, and moves the retention of t's streams.
// REQUIRES: e.ddl held.
func (e *Engine) publishLog(t, c *schema.Table) error {
	oldRet, newRet := t.LogRetention(), c.LogRetention()
	if newRet > oldRet {
		// NB: streams keep records longer before the definition says so:
		// a crash in between keeps too much, never too little.
		if err := e.clog.SetRetention(c.ID, newRet); err != nil {
			return apierr.Wrap(apierr.Internal, err, "setting change log retention")
		}
	}
	if err := e.persist(c); err != nil {
		return err
	}
	// NB: after the barrier every write reads c: with consumers, its
	// record keeps both images and goes to c's log stream.
	e.locks.barrier()
	if t.HiddenStream != 0 && c.HiddenStream != t.HiddenStream {
		e.endStream(c.ID, t.HiddenStream)
	}
	if newRet < oldRet {
		if err := e.clog.SetRetention(c.ID, newRet); err != nil {
			return apierr.Wrap(apierr.Internal, err, "setting change log retention")
		}
	}
	return nil
}

func compareConsumers(a, b schema.LogConsumer) int {
	if c := strings.Compare(a.Tenant.String(), b.Tenant.String()); c != 0 {
		return c
	}
	if c := strings.Compare(a.Env, b.Env); c != 0 {
		return c
	}
	return strings.Compare(a.Name, b.Name)
}

// maxFollow bounds FollowLog's limit.
const maxFollow = 10_000

// FollowLog returns up to limit changes of the scope's namespace in table
// after from, in commit order per item key (and in sequence order within
// the namespace), across shards, rollovers and stream enable/disable.
// Only the scope's own records are read: in a shared table, the tenant's
// own range. Errors: TrimmedDataAccessException (trimming deleted a
// change after from), ValidationException (limit not in 1..10,000),
// ResourceNotFoundException, AccessDeniedException (the operator).
// The entries' images may be shared with other readers: read them, never
// modify them.
func (e *Engine) FollowLog(ctx context.Context, s tenancy.Scope, table string, from changelog.Cursor, limit int) (changelog.FollowPage, error) {
	if err := check(ctx, s); err != nil {
		return changelog.FollowPage{}, err
	}
	if limit < 1 || limit > maxFollow {
		return changelog.FollowPage{}, apierr.Validationf("Change log limit %d is not between 1 and %d", limit, maxFollow)
	}
	h, err := e.openLog(ctx, s, table)
	if err != nil {
		return changelog.FollowPage{}, err
	}
	defer h.close()
	page, err := e.clog.Follow(h.db, h.Namespace, h.Table.ID, from, limit)
	if err != nil {
		return changelog.FollowPage{}, logError(err)
	}
	return page, nil
}

// WaitLog returns when a change after from may have committed in the
// scope's namespace of table, or ctx ends (it may return early; callers
// re-check with FollowLog). Errors as FollowLog, and ctx's.
func (e *Engine) WaitLog(ctx context.Context, s tenancy.Scope, table string, from changelog.Cursor) error {
	if err := check(ctx, s); err != nil {
		return err
	}
	h, err := e.openLog(ctx, s, table)
	if err != nil {
		return err
	}
	// NB: the handle is held while waiting: the channel belongs to the
	// change log's state of this open store, which an eviction would
	// forget (and the wait would then sleep until ctx ends).
	defer h.close()
	// NB: the channel is taken before looking, so a commit between the
	// look and the wait still wakes us.
	changed := e.clog.Changed(h.db, h.Namespace)
	page, err := e.clog.Follow(h.db, h.Namespace, h.Table.ID, from, 1)
	if err != nil {
		return logError(err)
	}
	if len(page.Entries) > 0 {
		return nil
	}
	select {
	case <-changed:
		return nil
	case <-e.closed:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// LogCursorAt returns the cursor of the first change of the scope's
// namespace in table at or after t (for `replay --from RFC3339`): the end
// of the log if none has been made yet. Errors:
// TrimmedDataAccessException (trimming deleted a change made at or after
// t), and as FollowLog.
func (e *Engine) LogCursorAt(ctx context.Context, s tenancy.Scope, table string, t time.Time) (changelog.Cursor, error) {
	if err := check(ctx, s); err != nil {
		return changelog.Cursor{}, err
	}
	h, err := e.openLog(ctx, s, table)
	if err != nil {
		return changelog.Cursor{}, err
	}
	defer h.close()
	c, err := e.clog.CursorAt(h.db, h.Namespace, h.Table.ID, t)
	if err != nil {
		return changelog.Cursor{}, logError(err)
	}
	return c, nil
}
