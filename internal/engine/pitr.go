package engine

import (
	"context"
	"errors"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/tenantdb/tenantdb/internal/apierr"
	"github.com/tenantdb/tenantdb/internal/attr"
	"github.com/tenantdb/tenantdb/internal/schema"
	"github.com/tenantdb/tenantdb/internal/tenancy"
	"github.com/tenantdb/tenantdb/internal/wire"
)

// Point-in-time recovery (UpdateContinuousBackups,
// DescribeContinuousBackups, RestoreTableToPointInTime), per tenant
// environment and table.
//
// Enabling it makes the tenant environment a consumer ("pitr") of the
// table's change log (RetainLog) whose retention is the recovery window:
// every later change is recorded with its old and new images and kept
// for the window. A restore to time T reads, from one storage snapshot,
// the caller's current items and the log's records made after T; the
// first such record of each key holds, as its old image, the item as it
// was at T (absent if the record is an INSERT). So the state at T is the
// current items with every key changed since T replaced by that old image
// — exactly what a consistent read at T returned. (The state at T is the
// state after every change recorded at or before T, to the millisecond.)
//
// On a shared table this is the tenant's own view: its records and items
// are in its own namespace. The restore goes into a new table of the
// caller's namespace (see restore.go).

// pitrConsumer is the log consumer of point-in-time recovery.
const pitrConsumer = "pitr"

// DefaultRecoveryDays is the recovery window when UpdateContinuousBackups
// does not say; MaxRecoveryDays is DynamoDB's limit.
const (
	DefaultRecoveryDays = 7
	MaxRecoveryDays     = 35
)

// pitrOf returns the caller's point-in-time recovery consumer of t, if
// enabled.
func pitrOf(s tenancy.Scope, t *schema.Table) (schema.LogConsumer, bool) {
	i, ok := slices.BinarySearchFunc(t.LogConsumers, schema.LogConsumer{Tenant: s.Tenant(), Env: s.Env(), Name: pitrConsumer}, compareConsumers)
	if !ok {
		return schema.LogConsumer{}, false
	}
	return t.LogConsumers[i], true
}

// restoreWindow returns the earliest and latest restorable times of c, a
// point-in-time recovery consumer, at now; ok is false before the window
// opens (Since not yet set).
func restoreWindow(c schema.LogConsumer, now time.Time) (earliest, latest time.Time, ok bool) {
	if c.Since.IsZero() {
		return time.Time{}, time.Time{}, false
	}
	earliest = c.Since
	if w := now.Add(-c.Retention); w.After(earliest) {
		earliest = w
	}
	// NB: whole seconds inside the window: every change after the
	// earliest second is in the log with its old image.
	earliest = earliest.Truncate(time.Second).Add(time.Second)
	latest = now.Truncate(time.Millisecond)
	if latest.Before(earliest) {
		latest = earliest
	}
	return earliest, latest, true
}

func (e *Engine) continuousBackups(s tenancy.Scope, t *schema.Table) *wire.ContinuousBackupsDescription {
	d := &wire.ContinuousBackupsDescription{ContinuousBackupsStatus: "ENABLED",
		PointInTimeRecoveryDescription: &wire.PointInTimeRecoveryDescription{PointInTimeRecoveryStatus: "DISABLED"}}
	c, ok := pitrOf(s, t)
	if !ok {
		return d
	}
	p := d.PointInTimeRecoveryDescription
	p.PointInTimeRecoveryStatus = "ENABLED"
	p.RecoveryPeriodInDays = int64(c.Retention / (24 * time.Hour))
	if lo, hi, ok := restoreWindow(c, e.opts.Now()); ok {
		p.EarliestRestorableDateTime, p.LatestRestorableDateTime = epoch(lo), epoch(hi)
	}
	return d
}

// openForBackup resolves a table for a backup or recovery operation of
// scope s: TableNotFound rather than ResourceNotFound, as DynamoDB.
func (e *Engine) openForBackup(ctx context.Context, s tenancy.Scope, name string) (*handle, error) {
	h, err := e.open(ctx, s, name)
	if apierr.Is(err, apierr.ResourceNotFound) {
		return nil, apierr.New(apierr.TableNotFound, "Table not found: %s", apierr.Clip(name))
	}
	return h, err
}

// UpdateContinuousBackups turns point-in-time recovery of the caller's
// view of a table on (with a window of RecoveryPeriodInDays, 1 to 35,
// default 7) or off. Errors: ValidationException, TableNotFoundException,
// AccessDeniedException (the operator; roles without DDL).
func (e *Engine) UpdateContinuousBackups(ctx context.Context, s tenancy.Scope, in *wire.UpdateContinuousBackupsInput) (*wire.UpdateContinuousBackupsOutput, error) {
	if err := check(ctx, s); err != nil {
		return nil, err
	}
	if err := schema.ValidateTableName(in.TableName); err != nil {
		return nil, err
	}
	enabled, days, err := PITRSpec(in)
	if err != nil {
		return nil, err
	}
	h0, err := e.openForBackup(ctx, s, in.TableName)
	if err != nil {
		return nil, err
	}
	h0.close()
	if enabled {
		err = e.retainLog(ctx, s, in.TableName, pitrConsumer, time.Duration(days)*24*time.Hour, true)
	} else {
		err = e.ReleaseLog(ctx, s, in.TableName, pitrConsumer)
	}
	if err != nil {
		return nil, err
	}
	h, err := e.openForBackup(ctx, s, in.TableName)
	if err != nil {
		return nil, err
	}
	defer h.close()
	return &wire.UpdateContinuousBackupsOutput{ContinuousBackupsDescription: e.continuousBackups(s, h.Table)}, nil
}

// DescribeContinuousBackups describes point-in-time recovery of the
// caller's view of a table. Errors: ValidationException,
// TableNotFoundException, AccessDeniedException (the operator).
func (e *Engine) DescribeContinuousBackups(ctx context.Context, s tenancy.Scope, in *wire.DescribeContinuousBackupsInput) (*wire.DescribeContinuousBackupsOutput, error) {
	if err := check(ctx, s); err != nil {
		return nil, err
	}
	if err := schema.ValidateTableName(in.TableName); err != nil {
		return nil, err
	}
	h, err := e.openForBackup(ctx, s, in.TableName)
	if err != nil {
		return nil, err
	}
	defer h.close()
	return &wire.DescribeContinuousBackupsOutput{ContinuousBackupsDescription: e.continuousBackups(s, h.Table)}, nil
}

// RestoreTableToPointInTime restores the caller's view of a table as it
// was at RestoreDateTime (or the latest restorable time) into a new table
// of the caller's namespace. Errors: ValidationException,
// TableNotFoundException, PointInTimeRecoveryUnavailableException,
// InvalidRestoreTimeException, TableAlreadyExistsException,
// AccessDeniedException.
func (e *Engine) RestoreTableToPointInTime(ctx context.Context, s tenancy.Scope, in *wire.RestoreTableToPointInTimeInput) (*wire.RestoreTableToPointInTimeOutput, error) {
	if err := check(ctx, s); err != nil {
		return nil, err
	}
	if err := tenantOnly(s); err != nil {
		return nil, err
	}
	src, latest, err := pitrRequest(in, e.tableARN(""))
	if err != nil {
		return nil, err
	}
	h, err := e.openForBackup(ctx, s, src)
	if err != nil {
		return nil, err
	}
	defer h.close()
	c, ok := pitrOf(s, h.Table)
	if !ok {
		return nil, apierr.New(apierr.PointInTimeRecoveryUnavailable, "Point in time recovery is not enabled for table '%s'", apierr.Clip(src))
	}
	// NB: the window is read before the snapshot is taken: the latest
	// restorable time is not after the snapshot.
	lo, hi, ok := restoreWindow(c, e.opts.Now())
	snap := h.db.NewSnapshot()
	defer snap.Close()
	if !ok {
		return nil, apierr.New(apierr.PointInTimeRecoveryUnavailable, "Point in time recovery for table '%s' is still being enabled", apierr.Clip(src))
	}
	at := hi
	if !latest {
		at = time.UnixMilli(int64(math.Round(*in.RestoreDateTime * 1000)))
		if at.Before(lo) || at.After(hi.Add(time.Second)) {
			return nil, apierr.New(apierr.InvalidRestoreTime, "Invalid restore time: restore time must be between %s and %s",
				lo.UTC().Format(time.RFC3339), hi.UTC().Format(time.RFC3339))
		}
	}

	// The state at `at` (history.go).
	past, err := e.stateAt(snap, h, at, nil)
	switch {
	case errors.Is(err, ErrHistoryTrimmed):
		return nil, apierr.New(apierr.InvalidRestoreTime, "Invalid restore time: the change log no longer reaches back to it")
	case errors.Is(err, ErrHistoryIncomplete):
		// NB: cannot happen after Since (the consumer widens the
		// capture); refuse rather than restore a wrong state.
		return nil, apierr.New(apierr.PointInTimeRecoveryUnavailable, "The change log of table '%s' lacks the images to restore to that time", apierr.Clip(src))
	case err != nil:
		return nil, apierr.Wrap(apierr.Internal, err, "reading the change log")
	}
	t := h.Table
	r := restoreSpec{src: t, target: in.TargetTableName,
		summary: wire.RestoreSummary{SourceTableArn: e.tableARN(t.Name), RestoreDateTime: epoch(at)},
		billing: in.BillingModeOverride, pt: in.ProvisionedThroughputOverride, gsi: in.GlobalSecondaryIndexOverride, lsi: in.LocalSecondaryIndexOverride,
		sse: in.SSESpecificationOverride, onDemand: in.OnDemandThroughputOverride,
		items: func(put func(attr.Item) error) error {
			return itemsAt(ctx, snap, h, past, put)
		}}
	d, units, err := e.restore(ctx, s, r)
	if err != nil {
		return nil, err
	}
	out := &wire.RestoreTableToPointInTimeOutput{TableDescription: d}
	out.U = wire.Usage{WriteUnits: units, Table: d.TableName}
	return out, nil
}

// pitrRequest validates a RestoreTableToPointInTime request as DynamoDB
// does and returns its source table's name (tableARNPrefix + name is the
// caller's ARN of it) and whether it asks for the latest restorable time.
func pitrRequest(in *wire.RestoreTableToPointInTimeInput, tableARNPrefix string) (src string, latest bool, err error) {
	src = in.SourceTableName
	switch {
	case src != "" && in.SourceTableArn != "":
		return "", false, apierr.Validationf("Only one of SourceTableArn or SourceTableName can be specified")
	case in.SourceTableArn != "":
		name, ok := strings.CutPrefix(in.SourceTableArn, tableARNPrefix)
		if !ok || strings.Contains(name, "/") {
			return "", false, apierr.New(apierr.TableNotFound, "Table not found: %s", apierr.Clip(in.SourceTableArn))
		}
		src = name
	case src == "":
		return "", false, apierr.Validationf("Either SourceTableArn or SourceTableName must be specified")
	}
	if err := schema.ValidateTableName(src); err != nil {
		return "", false, err
	}
	if err := schema.ValidateTableName(in.TargetTableName); err != nil {
		return "", false, err
	}
	latest = in.UseLatestRestorableTime != nil && *in.UseLatestRestorableTime
	if latest == (in.RestoreDateTime != nil) {
		return "", false, apierr.Validationf("Exactly one of RestoreDateTime or UseLatestRestorableTime must be specified")
	}
	return src, latest, nil
}
