package engine

import (
	"github.com/tenantdb/tenantdb/internal/apierr"
	"github.com/tenantdb/tenantdb/internal/schema"
	"github.com/tenantdb/tenantdb/internal/tenancy"
	"github.com/tenantdb/tenantdb/internal/wire"
	"iter"
)

// What the remote backend's backups (internal/remote/backup.go) share
// with these, so that both backends validate backup requests, word their
// refusals and build a restored table alike.

// CheckBackupName validates a BackupName as DynamoDB does. Errors:
// ValidationException.
func CheckBackupName(name string) error { return checkBackupName(name) }

// ValidBackupID reports whether id has the form of a backup id (14
// digits of creation time, '-', 8 hex digits).
func ValidBackupID(id string) bool { return validBackupID(id) }

// BackupNotFound is the error for a backup ARN the caller cannot reach:
// BackupNotFoundException, a denial audited in the caller's own log,
// alike whether or not another tenant has that backup.
func BackupNotFound(arn string) error { return backupNotFound(arn) }

// TenantOnly refuses the operator, which has no access to table data:
// AccessDeniedException.
func TenantOnly(s tenancy.Scope) error { return tenantOnly(s) }

// BackupPageLimit validates ListBackups' Limit (default and at most 100).
func BackupPageLimit(l *int64) (int, error) { return pageLimit(l, 100) }

// BackupTypeFilter validates ListBackups' BackupType; none reports a
// type that no on-demand (USER) backup has.
func BackupTypeFilter(t string) (none bool, err error) {
	switch t {
	case "", "USER", "ALL":
		return false, nil
	case "SYSTEM", "AWS_BACKUP":
		return true, nil
	}
	return false, enumErr(t, "backupType", "USER, SYSTEM, AWS_BACKUP, ALL")
}

// FilterBackupSummaries makes ListBackups' page out of a namespace's
// backups in id order (creation first), from the one after
// ExclusiveStartBackupArn: those of in.TableName (if set), created in
// in's time range (lower bound included, upper excluded), whose table
// the caller may see (allowed), up to limit, with LastEvaluatedBackupArn
// set when one more follows. A backup's error ends the listing with it.
// Both backends page through it.
func FilterBackupSummaries(in *wire.ListBackupsInput, limit int, allowed func(table string) bool, backups iter.Seq2[wire.BackupSummary, error]) (*wire.ListBackupsOutput, error) {
	out := &wire.ListBackupsOutput{BackupSummaries: []wire.BackupSummary{}}
	for sum, err := range backups {
		if err != nil {
			return nil, err
		}
		if in.TableName != "" && sum.TableName != in.TableName || !allowed(sum.TableName) {
			continue
		}
		at := sum.BackupCreationDateTime
		if in.TimeRangeLowerBound != nil && at < *in.TimeRangeLowerBound || in.TimeRangeUpperBound != nil && at >= *in.TimeRangeUpperBound {
			continue
		}
		if len(out.BackupSummaries) == limit {
			out.LastEvaluatedBackupArn = out.BackupSummaries[limit-1].BackupArn
			return out, nil
		}
		out.BackupSummaries = append(out.BackupSummaries, sum)
	}
	return out, nil
}

// RestoreInput is the CreateTable request that makes the table a
// restore of a backup of src creates: src's keys, indexes and billing,
// with in's overrides (target name, billing mode, throughput, indexes,
// SSE, on-demand throughput). As DynamoDB's, the restored table has no
// stream and no TTL.
func RestoreInput(src *schema.Table, in *wire.RestoreTableFromBackupInput) *wire.CreateTableInput {
	return restoreInput(restoreSpec{src: src, target: in.TargetTableName,
		billing: in.BillingModeOverride, pt: in.ProvisionedThroughputOverride, gsi: in.GlobalSecondaryIndexOverride,
		lsi: in.LocalSecondaryIndexOverride, sse: in.SSESpecificationOverride, onDemand: in.OnDemandThroughputOverride})
}

// SourceTableFeatures is a backup's SourceTableFeatureDetails of t: its
// indexes, stream and TTL settings.
func SourceTableFeatures(t *schema.Table) *wire.SourceTableFeatureDetails {
	return sourceTableFeatures(t)
}

// PITRRequest validates a RestoreTableToPointInTime request and returns
// its source table's name (tableARNPrefix + name is the caller's ARN of
// it) and whether it asks for the latest restorable time.
func PITRRequest(in *wire.RestoreTableToPointInTimeInput, tableARNPrefix string) (src string, latest bool, err error) {
	return pitrRequest(in, tableARNPrefix)
}

// PITRSpec validates an UpdateContinuousBackups request and returns
// whether it turns point-in-time recovery on and its window in days
// (DefaultRecoveryDays unless given; 1 to MaxRecoveryDays).
func PITRSpec(in *wire.UpdateContinuousBackupsInput) (enabled bool, days int64, err error) {
	spec := in.PointInTimeRecoverySpecification
	if spec == nil {
		return false, 0, apierr.Validationf("1 validation error detected: Value null at 'pointInTimeRecoverySpecification' failed to satisfy constraint: Member must not be null")
	}
	if spec.PointInTimeRecoveryEnabled == nil {
		return false, 0, apierr.Validationf("1 validation error detected: Value null at 'pointInTimeRecoverySpecification.pointInTimeRecoveryEnabled' failed to satisfy constraint: Member must not be null")
	}
	days = DefaultRecoveryDays
	if spec.RecoveryPeriodInDays != nil {
		if !*spec.PointInTimeRecoveryEnabled {
			return false, 0, apierr.Validationf("RecoveryPeriodInDays can only be specified when PointInTimeRecoveryEnabled is true")
		}
		days = *spec.RecoveryPeriodInDays
		if days < 1 || days > MaxRecoveryDays {
			return false, 0, apierr.Validationf("1 validation error detected: Value '%d' at 'pointInTimeRecoverySpecification.recoveryPeriodInDays' failed to satisfy constraint: Member must have value between 1 and %d", days, MaxRecoveryDays)
		}
	}
	return *spec.PointInTimeRecoveryEnabled, days, nil
}
