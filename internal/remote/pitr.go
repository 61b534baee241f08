package remote

import (
	"context"
	"errors"
	"math"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go"

	"github.com/tenantdb/tenantdb/internal/apierr"
	"github.com/tenantdb/tenantdb/internal/engine"
	"github.com/tenantdb/tenantdb/internal/resolve"
	"github.com/tenantdb/tenantdb/internal/schema"
	"github.com/tenantdb/tenantdb/internal/tenancy"
	"github.com/tenantdb/tenantdb/internal/wire"
)

// Point-in-time recovery of the caller's view of a logical table
// (UpdateContinuousBackups, DescribeContinuousBackups,
// RestoreTableToPointInTime), built on the engine's own point-in-time
// recovery of the whole engine table (see DESIGN.md, "Point-in-time
// recovery"):
//
//   - enabling it turns on the engine table's continuous backups (once;
//     refused with the engine's reason where it has none, as dynalite) and
//     records the enable time and period on the caller's collection's
//     registry entry (pitrSince, pitrDays), so the setting is per tenant
//     environment and table, and goes with the tenant or the table;
//   - the window is the engine's, cut to the logical enable time and the
//     period;
//   - a restore to time T restores the engine table to T into a scratch
//     engine table (scratchName), copies the caller's collection of the
//     source table out of it into the new table with the backup restore's
//     job (backuprestore.go: resumable by any gateway, CREATING until
//     done), then deletes the scratch table.

// Attributes of a collection's registry entry (the caller's view of a
// table) while its point-in-time recovery is on.
const (
	pitrSince = "pitr"  // N: when it was enabled, Unix ms
	pitrDays  = "pitrd" // N: the recovery period, days
)

// Attributes of a point-in-time restore's job (the new table's registry
// entry; rsScratch, rsSrc, rsSrcNS, rsAt and rsTenant also of its marker).
const (
	rsScratch = "rsscr" // S: the scratch engine table
	rsSrc     = "rssrc" // N: the source table's id
	rsSrcNS   = "rssns" // B: the namespace of the source collection (the caller's Target's)
	rsAt      = "rsat"  // N: the time restored to, Unix ms
	rsTenant  = "rsten" // S: the caller's tenant (for the audit records)
	rsPos     = "rspos" // N: the source partition being copied (index into the list)
	rsCopied  = "rscp"  // BOOL: every item is in the new table
)

// pitrWait is how long RestoreTableToPointInTime waits for its restore to
// end before it answers the table CREATING (the restore goes on).
const pitrWait = 30 * time.Second

// scratchName is the engine table a point-in-time restore into table id
// restores the engine table into.
func (b *Backend) scratchName(id uint64) string {
	return b.table + "-pitr-" + strconv.FormatUint(id, 10)
}

// errEnginePITR refuses point-in-time recovery the engine does not give.
func errEnginePITR(why string) error {
	return apierr.Validationf("Point-in-time recovery is not available on this engine: the remote backend builds it on the engine table's continuous backups, and %s", why)
}

// engineWindow is the engine table's point-in-time recovery.
type engineWindow struct {
	on               bool
	days             int64
	earliest, latest time.Time
}

// pitrCache keeps the engine window DescribeContinuousBackups last read,
// for pitrCacheFor: DescribeContinuousBackups is a control-plane call,
// which AWS rate-limits far below the data plane.
type pitrCache struct {
	mu    sync.Mutex
	w     engineWindow
	at    time.Time // when the read of w began (or w was made stale)
	stale bool      // this gateway changed the setting at at: read again
}

const pitrCacheFor = time.Second

// cachedEnginePITR is enginePITR, read at most once per pitrCacheFor by
// this gateway (a change of the engine's setting is seen within it).
func (b *Backend) cachedEnginePITR(ctx context.Context) (engineWindow, error) {
	b.pitr.mu.Lock()
	w, at, stale := b.pitr.w, b.pitr.at, b.pitr.stale
	b.pitr.mu.Unlock()
	if !stale && !at.IsZero() && time.Since(at) < pitrCacheFor {
		return w, nil
	}
	return b.enginePITR(ctx)
}

// enginePITR reads the engine table's continuous backups (and caches
// them). Errors: the engine's refusal, as errEnginePITR.
func (b *Backend) enginePITR(ctx context.Context) (engineWindow, error) {
	start := time.Now()
	out, err := b.db.DescribeContinuousBackups(ctx, &dynamodb.DescribeContinuousBackupsInput{TableName: &b.table})
	if err != nil {
		return engineWindow{}, enginePITRErr(err)
	}
	var w engineWindow
	if d := out.ContinuousBackupsDescription; d != nil && d.PointInTimeRecoveryDescription != nil {
		p := d.PointInTimeRecoveryDescription
		w.on = p.PointInTimeRecoveryStatus == types.PointInTimeRecoveryStatusEnabled
		w.days = int64(aws.ToInt32(p.RecoveryPeriodInDays))
		if p.EarliestRestorableDateTime != nil {
			w.earliest = *p.EarliestRestorableDateTime
		}
		if p.LatestRestorableDateTime != nil {
			w.latest = *p.LatestRestorableDateTime
		}
	}
	b.pitr.mu.Lock()
	if start.After(b.pitr.at) {
		b.pitr.w, b.pitr.at, b.pitr.stale = w, start, false
	}
	b.pitr.mu.Unlock()
	return w, nil
}

// enginePITRErr words the engine's refusal of a continuous backups call:
// an engine without them (UnknownOperation, a validation error) is
// errEnginePITR; others are the engine's errors.
func enginePITRErr(err error) error {
	var ae smithy.APIError
	if errors.As(err, &ae) {
		switch ae.ErrorCode() {
		case "UnknownOperationException", "ValidationException", "AccessDeniedException", "ContinuousBackupsUnavailableException":
			return errEnginePITR("the engine refused: " + apierr.Clip(ae.ErrorCode()+": "+ae.ErrorMessage()))
		}
	}
	return engineErr(err, strip)
}

// ensureEnginePITR turns the engine table's point-in-time recovery on,
// with a period of at least days, if it is not.
func (b *Backend) ensureEnginePITR(ctx context.Context, days int64) error {
	w, err := b.enginePITR(ctx)
	if err != nil {
		return err
	}
	if w.on && (w.days == 0 || w.days >= days) {
		return nil
	}
	spec := &types.PointInTimeRecoverySpecification{PointInTimeRecoveryEnabled: aws.Bool(true), RecoveryPeriodInDays: aws.Int32(int32(max(days, w.days)))}
	out, err := b.db.UpdateContinuousBackups(ctx, &dynamodb.UpdateContinuousBackupsInput{TableName: &b.table, PointInTimeRecoverySpecification: spec})
	if err != nil {
		return enginePITRErr(err)
	}
	if d := out.ContinuousBackupsDescription; d == nil || d.PointInTimeRecoveryDescription == nil ||
		d.PointInTimeRecoveryDescription.PointInTimeRecoveryStatus != types.PointInTimeRecoveryStatusEnabled {
		return errEnginePITR("the engine did not enable them")
	}
	b.log.Info("enabled point-in-time recovery of the engine table", "table", b.table, "days", aws.ToInt32(spec.RecoveryPeriodInDays))
	b.pitr.mu.Lock()
	// NB: a read begun before the change may not be kept.
	b.pitr.at, b.pitr.stale = time.Now(), true
	b.pitr.mu.Unlock()
	return nil
}

// pitrSetting is the caller's point-in-time recovery of a table.
type pitrSetting struct {
	on    bool
	since time.Time
	days  int64
}

// readPITR reads tg's setting from its collection's registry entry.
func (b *Backend) readPITR(ctx context.Context, tg resolve.Target) (pitrSetting, error) {
	if tg.Namespace == nil {
		return pitrSetting{}, nil // the operator holds no items
	}
	out, err := b.db.GetItem(ctx, &dynamodb.GetItemInput{TableName: &b.table, Key: regKey(regSK(tg.Namespace, tg.Table.ID)), ConsistentRead: aws.Bool(true)})
	if err != nil {
		return pitrSetting{}, engineErr(err, strip)
	}
	if _, ok := out.Item[pitrSince]; !ok {
		return pitrSetting{}, nil
	}
	return pitrSetting{on: true, since: time.UnixMilli(num64Attr(out.Item, pitrSince)), days: num64Attr(out.Item, pitrDays)}, nil
}

// window is the restorable window of setting p over engine window w at
// now; ok is false before it opens (or with the engine's off).
func (p pitrSetting) window(w engineWindow, now time.Time) (earliest, latest time.Time, ok bool) {
	if !p.on || !w.on || w.earliest.IsZero() {
		return time.Time{}, time.Time{}, false
	}
	// NB: whole seconds inside the window, as the embedded server's:
	// the first second after the enable time.
	earliest = p.since.Truncate(time.Second).Add(time.Second)
	if p.days > 0 {
		if lo := now.Add(-time.Duration(p.days) * 24 * time.Hour); lo.After(earliest) {
			earliest = lo
		}
	}
	if w.earliest.After(earliest) {
		earliest = w.earliest
	}
	latest = now.Truncate(time.Millisecond)
	if !w.latest.IsZero() && w.latest.Before(latest) {
		latest = w.latest
	}
	if latest.Before(earliest) {
		return earliest, latest, false
	}
	return earliest, latest, true
}

// describePITR is the ContinuousBackupsDescription of tg for its
// caller.
func (b *Backend) describePITR(ctx context.Context, tg resolve.Target) (*wire.ContinuousBackupsDescription, error) {
	d := continuousOff()
	p, err := b.readPITR(ctx, tg)
	if err != nil || !p.on {
		return d, err
	}
	w, err := b.cachedEnginePITR(ctx)
	if err != nil {
		return nil, err
	}
	if !w.on {
		// NB: the engine's was turned off (by its operator): nothing is
		// restorable, and saying ENABLED would not be true.
		return d, nil
	}
	r := d.PointInTimeRecoveryDescription
	r.PointInTimeRecoveryStatus = "ENABLED"
	r.RecoveryPeriodInDays = p.days
	if lo, hi, ok := p.window(w, b.opts.Now()); ok {
		r.EarliestRestorableDateTime, r.LatestRestorableDateTime = epochOf(lo), epochOf(hi)
	}
	return d, nil
}

// setPITR records (on) or removes the caller's point-in-time recovery of
// tg, on its collection's registry entry.
func (b *Backend) setPITR(ctx context.Context, tg resolve.Target, on bool, days int64) error {
	if on {
		if _, err := b.registerColl(ctx, tg); err != nil { // the entry, with its layout
			return err
		}
		_, err := b.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{TableName: &b.table, Key: regKey(regSK(tg.Namespace, tg.Table.ID)),
			UpdateExpression:          aws.String("SET #s = if_not_exists(#s, :now), #d = :d"),
			ConditionExpression:       aws.String("attribute_exists(#p)"),
			ExpressionAttributeNames:  map[string]string{"#s": pitrSince, "#d": pitrDays, "#p": attrPK},
			ExpressionAttributeValues: map[string]types.AttributeValue{":now": num64(b.opts.Now().UnixMilli()), ":d": num64(days)},
		})
		return engineErr(err, strip)
	}
	_, err := b.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{TableName: &b.table, Key: regKey(regSK(tg.Namespace, tg.Table.ID)),
		UpdateExpression:         aws.String("REMOVE #s, #d"),
		ConditionExpression:      aws.String("attribute_exists(#p)"),
		ExpressionAttributeNames: map[string]string{"#s": pitrSince, "#d": pitrDays, "#p": attrPK},
	})
	if err != nil && apierr.Is(engineErr(err, strip), apierr.ConditionalCheckFailed) {
		return nil // never written to, never enabled
	}
	return engineErr(err, strip)
}

// UpdateContinuousBackups turns point-in-time recovery of the caller's
// view of a table on (with a window of RecoveryPeriodInDays, 1 to 35,
// default 7; the engine table's is turned on first) or off (the engine
// table's stays on: DESIGN.md). Errors: ValidationException (also: the
// engine has no point-in-time recovery), TableNotFoundException,
// AccessDeniedException (the operator).
func (b *Backend) UpdateContinuousBackups(ctx context.Context, s tenancy.Scope, in *wire.UpdateContinuousBackupsInput) (*wire.UpdateContinuousBackupsOutput, error) {
	if err := check(ctx, s); err != nil {
		return nil, err
	}
	if err := schema.ValidateTableName(in.TableName); err != nil {
		return nil, err
	}
	enabled, days, err := engine.PITRSpec(in)
	if err != nil {
		return nil, err
	}
	tg, err := b.openForBackup(ctx, s, in.TableName)
	if err != nil {
		return nil, err
	}
	if err := engine.TenantOnly(s); err != nil {
		return nil, err
	}
	if enabled {
		if err := b.ensureEnginePITR(ctx, days); err != nil {
			return nil, err
		}
	}
	if err := b.setPITR(ctx, tg, enabled, days); err != nil {
		return nil, err
	}
	d, err := b.describePITR(ctx, tg)
	if err != nil {
		return nil, err
	}
	return &wire.UpdateContinuousBackupsOutput{ContinuousBackupsDescription: d}, nil
}

// DescribeContinuousBackups describes point-in-time recovery of the
// caller's view of a table: ENABLED with the window the engine's and the
// caller's setting leave, or DISABLED. Errors: ValidationException,
// TableNotFoundException, AccessDeniedException.
func (b *Backend) DescribeContinuousBackups(ctx context.Context, s tenancy.Scope, in *wire.DescribeContinuousBackupsInput) (*wire.DescribeContinuousBackupsOutput, error) {
	if err := check(ctx, s); err != nil {
		return nil, err
	}
	if err := schema.ValidateTableName(in.TableName); err != nil {
		return nil, err
	}
	tg, err := b.openForBackup(ctx, s, in.TableName)
	if err != nil {
		return nil, err
	}
	d, err := b.describePITR(ctx, tg)
	if err != nil {
		return nil, err
	}
	return &wire.DescribeContinuousBackupsOutput{ContinuousBackupsDescription: d}, nil
}

// RestoreTableToPointInTime restores the caller's view of a table as it
// was at RestoreDateTime (or the latest restorable time) into a new table
// of the caller's namespace: the engine table restored to that time into
// a scratch engine table, the caller's collection copied out of it, the
// scratch table deleted. It answers when the table is ACTIVE, or after
// pitrWait with the table CREATING (the restore goes on; any gateway
// finishes it if this one ends). Charged to the tenant as the copy's
// engine units until it answers. Errors: ValidationException,
// TableNotFoundException, PointInTimeRecoveryUnavailableException,
// InvalidRestoreTimeException, TableAlreadyExistsException,
// LimitExceededException, AccessDeniedException.
func (b *Backend) RestoreTableToPointInTime(ctx context.Context, s tenancy.Scope, in *wire.RestoreTableToPointInTimeInput) (*wire.RestoreTableToPointInTimeOutput, error) {
	if err := check(ctx, s); err != nil {
		return nil, err
	}
	if err := engine.TenantOnly(s); err != nil {
		return nil, err
	}
	src, latest, err := engine.PITRRequest(in, b.res.TableARN(""))
	if err != nil {
		return nil, err
	}
	tg, err := b.openForBackup(ctx, s, src)
	if err != nil {
		return nil, err
	}
	p, err := b.readPITR(ctx, tg)
	if err != nil {
		return nil, err
	}
	if !p.on {
		return nil, apierr.New(apierr.PointInTimeRecoveryUnavailable, "Point in time recovery is not enabled for table '%s'", apierr.Clip(src))
	}
	w, err := b.enginePITR(ctx)
	if err != nil {
		return nil, err
	}
	if !w.on {
		return nil, apierr.New(apierr.PointInTimeRecoveryUnavailable, "Point in time recovery for table '%s' is unavailable: the engine table's continuous backups were turned off", apierr.Clip(src))
	}
	lo, hi, ok := p.window(w, b.opts.Now())
	if !ok {
		return nil, apierr.New(apierr.PointInTimeRecoveryUnavailable, "Point in time recovery for table '%s' is still being enabled", apierr.Clip(src))
	}
	at := hi
	if !latest {
		at = time.UnixMilli(int64(math.Round(*in.RestoreDateTime * 1000)))
		if at.Before(lo) || at.After(hi) {
			return nil, apierr.New(apierr.InvalidRestoreTime, "Invalid restore time: restore time must be between %s and %s",
				lo.UTC().Format(time.RFC3339), hi.UTC().Format(time.RFC3339))
		}
	}
	t, err := engine.BuildTable(engine.RestoreInput(tg.Table, &wire.RestoreTableFromBackupInput{TargetTableName: in.TargetTableName,
		BillingModeOverride: in.BillingModeOverride, GlobalSecondaryIndexOverride: in.GlobalSecondaryIndexOverride,
		LocalSecondaryIndexOverride: in.LocalSecondaryIndexOverride, ProvisionedThroughputOverride: in.ProvisionedThroughputOverride,
		OnDemandThroughputOverride: in.OnDemandThroughputOverride, SSESpecificationOverride: in.SSESpecificationOverride}))
	if err != nil {
		return nil, err
	}
	resolve.ApplyRestoredIsolation(t, tg.Table)
	if len(t.Indexes) > b.opts.IndexSlots {
		return nil, apierr.New(apierr.LimitExceeded, "The remote backend serves at most %d secondary indexes per table (the engine table's index slots)", b.opts.IndexSlots)
	}
	if err := b.res.MayCreate(s, t.Name); err != nil {
		return nil, err
	}
	rs := rsSource{srcNS: tg.Namespace, srcID: tg.Table.ID, at: at.UnixMilli(), tenant: s.Tenant().String()}
	j, err := b.createRestored(ctx, s, t, rs)
	if err != nil {
		return nil, err
	}
	rs.scratch = b.scratchName(t.ID)
	b.pitrEvent(j, rs, t.Name, "started", 0, s.KeyID())
	j.meter = &jobMeter{}
	type result struct {
		c   *schema.Table
		err error
	}
	done := make(chan result, 1)
	go func() {
		// NB: the gateway's context, not the request's: the restore
		// goes on when the request answers or its client goes away.
		_, c, err := b.runRestoreCopy(b.bg, j)
		done <- result{c, err}
	}()
	summary := &wire.RestoreSummary{SourceTableArn: b.res.TableARN(tg.Table.Name), RestoreDateTime: epochOf(at)}
	var d *wire.TableDescription
	timer := time.NewTimer(b.pitrWait())
	defer timer.Stop()
	select {
	case r := <-done:
		if r.err != nil {
			var ae *apierr.Error
			if errors.As(r.err, &ae) {
				return nil, ae // the engine's refusal (the job is over)
			}
			return nil, r.err
		}
		d = b.describe(r.c)
	case <-timer.C:
		d = b.describe(t)
		summary.RestoreInProgress = true
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	d.RestoreSummary = summary
	out := &wire.RestoreTableToPointInTimeOutput{TableDescription: d}
	out.U.ReadUnits, out.U.WriteUnits = j.meter.take()
	out.U.Table = t.Name
	return out, nil
}

// pitrWaitFor is how long a RestoreTableToPointInTime request waits
// (Options.PITRWait, default pitrWait).
func (b *Backend) pitrWait() time.Duration {
	if b.opts.PITRWait > 0 {
		return b.opts.PITRWait
	}
	return pitrWait
}

// prepareScratch makes the scratch table of point-in-time restore j
// (the engine table restored to src.at), waits until it is ACTIVE —
// renewing j's lease meanwhile: on AWS this takes minutes to hours — and
// returns the partitions of the caller's collection of the source table
// in it (the shards of its layout at that time), in the order to copy.
// An engine that refuses the restore for good (the time left its window)
// ends the job: the new table is dropped (errJobGone).
func (b *Backend) prepareScratch(ctx context.Context, j *bkJob, src rsSource, name string) ([]string, error) {
	// NB: the lease is checked just before the engine is asked: a runner
	// that lost it does not make a scratch table another runner deletes.
	refused, err := b.restoreScratch(ctx, src.scratch, src.at, func(ctx context.Context) error { return b.jobSave(ctx, j, "", "", nil, nil) })
	if err != nil {
		return nil, err
	}
	if refused != nil {
		b.log.Warn("point-in-time restore refused by the engine; the restored table is dropped", "table", name, "err", refused)
		b.pitrEvent(j, src, name, "cancelled", 0, "")
		if derr := b.dropRestore(ctx, j, src, name, true); derr != nil {
			return nil, derr
		}
		return nil, errors.Join(errPITRRefused(refused), b.dropMarker(ctx, j))
	}
	return b.scratchPartitions(ctx, src)
}

// restoreScratch makes scratch, the engine table restored to time at
// (Unix ms), unless it exists, and waits until it is ACTIVE; renew is
// called just before the engine is asked and while it restores (a job's
// lease: on AWS this takes minutes to hours). refused is the engine's
// refusal of the time (InvalidRestoreTime, PointInTimeRecoveryUnavailable:
// the time left its window).
func (b *Backend) restoreScratch(ctx context.Context, scratch string, at int64, renew func(context.Context) error) (refused smithy.APIError, err error) {
	asked := false
	wait := 200 * time.Millisecond
	for {
		out, err := b.db.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: &scratch})
		var nf *types.ResourceNotFoundException
		switch {
		case err == nil && out.Table.TableStatus == types.TableStatusActive:
			return nil, nil
		case err == nil:
		case !errors.As(err, &nf):
			return nil, engineErr(err, strip)
		case !asked:
			if err := renew(ctx); err != nil {
				return nil, err
			}
			_, err := b.db.RestoreTableToPointInTime(ctx, &dynamodb.RestoreTableToPointInTimeInput{
				SourceTableName: &b.table, TargetTableName: &scratch,
				RestoreDateTime:     aws.Time(time.UnixMilli(at)),
				BillingModeOverride: types.BillingModePayPerRequest,
				// NB: none of the engine table's index slots: the copy
				// reads the base table, and the new table's entries are
				// written by the copy.
				GlobalSecondaryIndexOverride: []types.GlobalSecondaryIndex{},
			})
			var inUse *types.TableAlreadyExistsException
			if err != nil && !errors.As(err, &inUse) {
				var ae smithy.APIError
				if errors.As(err, &ae) && (ae.ErrorCode() == "InvalidRestoreTimeException" || ae.ErrorCode() == "PointInTimeRecoveryUnavailableException") {
					return ae, nil
				}
				return nil, engineErr(err, strip)
			}
			asked = true
			continue
		}
		if err := sleep(ctx, wait); err != nil {
			return nil, err
		}
		wait = min(2*wait, 5*time.Second)
		if err := renew(ctx); err != nil {
			return nil, err
		}
	}
}

// errPITRRefused is the engine's refusal of a restore to a time, in
// DynamoDB's words (it also ends the job: errJobGone).
func errPITRRefused(ae smithy.APIError) error {
	k := apierr.InvalidRestoreTime
	if ae.ErrorCode() == "PointInTimeRecoveryUnavailableException" {
		k = apierr.PointInTimeRecoveryUnavailable
	}
	return errors.Join(apierr.New(k, "The engine refused to restore its table to that time: %s", apierr.Clip(ae.ErrorMessage())), errJobGone)
}

// scratchPartitions returns the partitions of src's collection in the
// scratch table: every shard of its layout then (both layouts' during a
// change of shard count: an item moved in one transaction, so at any
// time it is in one of them).
func (b *Backend) scratchPartitions(ctx context.Context, src rsSource) ([]string, error) {
	if len(src.srcNS) == 0 {
		return nil, apierr.New(apierr.Internal, "corrupt point-in-time restore job in the engine")
	}
	out, err := b.db.GetItem(ctx, &dynamodb.GetItemInput{TableName: &src.scratch, Key: regKey(regSK(src.srcNS, src.srcID)), ConsistentRead: aws.Bool(true)})
	if err != nil {
		return nil, engineErr(err, strip)
	}
	// NB: the caller's own collection, and only it: the namespace is the
	// one the resolver's Target gave the restoring scope, the table the
	// source's.
	p := place{base: collBase(src.srcNS, src.srcID), lay: layoutFrom(out.Item)}
	return p.shardPKs(), nil
}

// dropScratch deletes a scratch table (gone already: nothing to do).
func (b *Backend) dropScratch(ctx context.Context, name string) error {
	_, err := b.db.DeleteTable(ctx, &dynamodb.DeleteTableInput{TableName: &name})
	var nf *types.ResourceNotFoundException
	if err != nil && !errors.As(err, &nf) {
		// Still CREATING (a restore the engine has not finished): the
		// job's next runner deletes it.
		return engineErr(err, strip)
	}
	return nil
}

// sweepScratch deletes the scratch tables that no restore job's marker
// names: left by a runner that had lost its lease when it asked the
// engine for one (every job writes its marker before its scratch table
// is asked for and deletes the table before the marker, so a table
// listed first and then found in no marker is no job's). Run every
// Options.JobSweep (jobsweep.go); one ListTables of the names after
// the scratch prefix and one Query of the markers.
func (b *Backend) sweepScratch(ctx context.Context) {
	prefix := b.table + "-pitr-"
	var names []string
	in := &dynamodb.ListTablesInput{ExclusiveStartTableName: aws.String(prefix)}
	for {
		out, err := b.db.ListTables(ctx, in)
		if err != nil {
			if ctx.Err() == nil {
				b.log.Debug("listing the engine's tables for scratch tables", "err", err)
			}
			return
		}
		more := out.LastEvaluatedTableName != nil
		for _, n := range out.TableNames {
			if !strings.HasPrefix(n, prefix) {
				more = false
				break
			}
			names = append(names, n)
		}
		if !more {
			break
		}
		in.ExclusiveStartTableName = out.LastEvaluatedTableName
	}
	if len(names) == 0 {
		return
	}
	named := map[string]bool{}
	q := &dynamodb.QueryInput{
		TableName:                 &b.table,
		KeyConditionExpression:    aws.String("#p = :p"),
		ExpressionAttributeNames:  map[string]string{"#p": attrPK},
		ExpressionAttributeValues: map[string]types.AttributeValue{":p": &types.AttributeValueMemberS{Value: markerPK}},
		ConsistentRead:            aws.Bool(true),
	}
	for {
		res, err := b.db.Query(ctx, q)
		if err != nil {
			return
		}
		for _, mk := range res.Items {
			if v, ok := mk[rsScratch].(*types.AttributeValueMemberS); ok {
				named[v.Value] = true
			}
		}
		if len(res.LastEvaluatedKey) == 0 {
			break
		}
		q.ExclusiveStartKey = res.LastEvaluatedKey
	}
	for _, n := range names {
		if named[n] {
			continue
		}
		b.log.Warn("deleting a scratch table no point-in-time restore names", "table", n)
		if err := b.dropScratch(ctx, n); err != nil && ctx.Err() == nil {
			b.log.Warn("deleting a scratch table", "table", n, "err", err)
		}
	}
}

// pitrEvent reports phase of point-in-time restore j (from src into the
// caller's table name) to the audit log of the caller's tenant.
func (b *Backend) pitrEvent(j *bkJob, src rsSource, name, phase string, items int64, by string) {
	ev := JobEvent{Kind: "pitr-restore", Phase: phase, Table: name, By: by,
		Detail: "restored_to=" + time.UnixMilli(src.at).UTC().Format(time.RFC3339Nano) + " items=" + strconv.FormatInt(items, 10)}
	ev.Tenant, _ = tenancy.ParseTenantID(src.tenant)
	b.emitJob(ev)
}
