package engine

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/tenantdb/tenantdb/internal/apierr"
	"github.com/tenantdb/tenantdb/internal/attr"
	"github.com/tenantdb/tenantdb/internal/keyspace"
	"github.com/tenantdb/tenantdb/internal/resolve"
	"github.com/tenantdb/tenantdb/internal/schema"
	"github.com/tenantdb/tenantdb/internal/storage"
	"github.com/tenantdb/tenantdb/internal/tenancy"
	"github.com/tenantdb/tenantdb/internal/wire"
)

// On-demand backups (CreateBackup, DescribeBackup, ListBackups,
// DeleteBackup, RestoreTableFromBackup), per tenant environment.
//
// A backup is the caller's view of a table — on a shared table, the
// tenant's own items only; on its own table, the whole table — copied from
// one storage snapshot (consistent), with the table's definition (keys,
// indexes, billing, TTL and stream settings). It belongs to the tenant
// environment that took it and lives in that namespace's key range
// (keyspace.Backup), so only it can list, describe, delete or restore
// it, a restore goes into a table of its own namespace, and deleting the
// tenant deletes its backups. A backup ARN names the table and the
// backup's id; it grants nothing: the id is looked up in the caller's own
// namespace, and one the caller has not taken is BackupNotFound, audited
// as a denial.

// backupIDLen is the length of a backup id: 14 digits of creation time
// (ms) and 8 hex digits, as DynamoDB's ("01489602797149-73d8d5bc").
const backupIDLen = 14 + 1 + 8

// backupMeta is a backup's descriptor.
type backupMeta struct {
	ID      string        `json:"id"`
	Name    string        `json:"name"`
	Table   *schema.Table `json:"table"` // the definition when the backup was taken
	Created time.Time     `json:"created"`
	Status  string        `json:"status"` // CREATING or AVAILABLE
	Items   int64         `json:"items"`
	Bytes   int64         `json:"bytes"`
	// TableItems and TableBytes are the table's statistics (the caller's
	// view) when the backup was taken.
	TableItems int64 `json:"table_items"`
	TableBytes int64 `json:"table_bytes"`
}

// backupValue encodes item for a backup, stored at physical key pk, and
// backupItem decodes it: sealed under the tenant's data key like every
// stored value (values.go), so a backup is unreadable once the tenant's
// key is destroyed (crypto-shredding).
//
// NB: every item written to a backup goes through backupValue and every
// one read back through backupItem.
func (e *Engine) backupValue(pk []byte, item attr.Item) ([]byte, error) {
	return e.vals.encode(pk, item)
}

func (e *Engine) backupItem(pk, v []byte) (attr.Item, error) {
	it, err := e.vals.decode(pk, v)
	if err != nil {
		return nil, apierr.Wrap(apierr.Internal, err, "decoding a backed-up item")
	}
	return it, nil
}

// backupARN returns the ARN of backup id of the table named table.
func (e *Engine) backupARN(table, id string) string {
	return e.tableARN(table) + "/backup/" + id
}

// parseBackupARN returns the table name and backup id a backup ARN
// names. Errors: ValidationException.
func (e *Engine) parseBackupARN(arn string) (table, id string, err error) {
	if arn == "" {
		return "", "", apierr.Validationf("1 validation error detected: Value null at 'backupArn' failed to satisfy constraint: Member must not be null")
	}
	if len(arn) < 37 || len(arn) > 1024 {
		return "", "", apierr.Validationf("1 validation error detected: Value '%s' at 'backupArn' failed to satisfy constraint: Member must have length between 37 and 1024", apierr.Clip(arn))
	}
	rest, ok := strings.CutPrefix(arn, "arn:aws:dynamodb:")
	var region, account string
	if ok {
		parts := strings.SplitN(rest, ":", 3)
		if ok = len(parts) == 3; ok {
			region, account, rest = parts[0], parts[1], parts[2]
		}
	}
	if ok {
		rest, ok = strings.CutPrefix(rest, "table/")
	}
	if ok {
		table, id, ok = strings.Cut(rest, "/backup/")
	}
	if !ok || schema.ValidateTableName(table) != nil || !validBackupID(id) {
		return "", "", apierr.Validationf("Invalid BackupArn: %s", apierr.Clip(arn))
	}
	if region != e.opts.Region || account != e.opts.Account {
		return "", "", backupNotFound(arn)
	}
	return table, id, nil
}

func validBackupID(id string) bool {
	if len(id) != backupIDLen || id[14] != '-' {
		return false
	}
	for i, c := range []byte(id) {
		switch {
		case i == 14:
		case i < 14 && c >= '0' && c <= '9':
		case i > 14 && (c >= '0' && c <= '9' || c >= 'a' && c <= 'f'):
		default:
			return false
		}
	}
	return true
}

// backupNotFound is the error for a backup ARN the caller cannot reach.
//
// NB: a denial, audited in the caller's own log, for every such ARN,
// whether or not another tenant has that backup (see openStream).
func backupNotFound(arn string) error {
	err := apierr.New(apierr.BackupNotFound, "Backup not found: %s", apierr.Clip(arn))
	err.Denial = true
	return err
}

// tenantOnly refuses the operator: backups hold table data, which it has
// no access to.
func tenantOnly(s tenancy.Scope) error {
	if s.Tenant().IsZero() {
		return apierr.New(apierr.AccessDenied, "The operator credential has no access to table data; use a tenant credential")
	}
	return nil
}

// openBackup reads the descriptor of the backup arn names in the scope's
// namespace.
func (e *Engine) openBackup(ctx context.Context, s tenancy.Scope, arn string) (*backupMeta, error) {
	table, id, err := e.parseBackupARN(arn)
	if err != nil {
		return nil, err
	}
	if err := e.backupAllowed(ctx, s, table); err != nil {
		return nil, err
	}
	m, err := e.readBackup(resolve.Namespace(s), id)
	if err != nil {
		return nil, err
	}
	if m == nil || m.Table.Name != table {
		return nil, backupNotFound(arn)
	}
	return m, nil
}

// backupAllowed refuses a backup of a table outside a narrowed
// credential's policy (AccessDenied, as for the table itself), whether or
// not the table still exists.
func (e *Engine) backupAllowed(ctx context.Context, s tenancy.Scope, table string) error {
	if _, err := e.res.Lookup(ctx, s, table); apierr.Is(err, apierr.AccessDenied) {
		return err
	}
	return nil
}

func (e *Engine) readBackup(ns []byte, id string) (*backupMeta, error) {
	v, err := e.db.Get(keyspace.Backup(ns, id))
	if errors.Is(err, storage.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, apierr.Wrap(apierr.Internal, err, "reading backup")
	}
	var m backupMeta
	if err := json.Unmarshal(v, &m); err != nil || m.Table == nil {
		return nil, apierr.Wrap(apierr.Internal, err, "corrupt backup descriptor")
	}
	return &m, nil
}

func putBackup(b *storage.Batch, ns []byte, m *backupMeta) error {
	v, err := json.Marshal(m)
	if err != nil {
		return apierr.Wrap(apierr.Internal, err, "encoding backup descriptor")
	}
	b.Set(keyspace.Backup(ns, m.ID), v)
	return nil
}

// checkBackupName validates a BackupName as DynamoDB does.
func checkBackupName(name string) error {
	if name == "" {
		return apierr.Validationf("1 validation error detected: Value null at 'backupName' failed to satisfy constraint: Member must not be null")
	}
	if len(name) < 3 || len(name) > 255 {
		return apierr.Validationf("1 validation error detected: Value '%s' at 'backupName' failed to satisfy constraint: Member must have length between 3 and 255", apierr.Clip(name))
	}
	for _, c := range []byte(name) {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '.' || c == '-') {
			return apierr.Validationf("1 validation error detected: Value '%s' at 'backupName' failed to satisfy constraint: Member must satisfy regular expression pattern: [a-zA-Z0-9_.-]+", apierr.Clip(name))
		}
	}
	return nil
}

// backupFlush is how many items one batch of a backup holds.
const backupFlush = 1000

// CreateBackup backs up the caller's view of a table: on a shared table
// the tenant environment's own items, on its own table the whole table,
// from one consistent snapshot, with the table's definition. The copy
// is charged to the tenant as reads of the copied bytes (4 KB units).
// Errors: ValidationException, TableNotFoundException,
// AccessDeniedException (the operator; a credential narrowed to other
// tables).
func (e *Engine) CreateBackup(ctx context.Context, s tenancy.Scope, in *wire.CreateBackupInput) (*wire.CreateBackupOutput, error) {
	if err := check(ctx, s); err != nil {
		return nil, err
	}
	if err := schema.ValidateTableName(in.TableName); err != nil {
		return nil, err
	}
	if err := checkBackupName(in.BackupName); err != nil {
		return nil, err
	}
	h, err := e.open(ctx, s, in.TableName)
	if err != nil {
		if apierr.Is(err, apierr.ResourceNotFound) {
			return nil, apierr.New(apierr.TableNotFound, "Table not found: %s", apierr.Clip(in.TableName))
		}
		return nil, err
	}
	defer h.close()
	snap := h.db.NewSnapshot()
	defer snap.Close()
	stats, err := e.statsFor(ctx, h.Target)
	if err != nil {
		return nil, err
	}
	now := e.opts.Now()
	var tag [4]byte
	_, _ = rand.Read(tag[:])
	m := &backupMeta{ID: fmt.Sprintf("%014d-%08x", now.UnixMilli(), binary.BigEndian.Uint32(tag[:])), Name: in.BackupName,
		Table: h.Table, Created: now, Status: "CREATING", TableItems: stats[0][0], TableBytes: stats[0][1]}
	if err := e.writeBackup(snap, h, m); err != nil {
		return nil, err
	}
	arn := e.backupARN(m.Table.Name, m.ID)
	size := m.Bytes
	out := &wire.CreateBackupOutput{BackupDetails: &wire.BackupDetails{BackupArn: arn, BackupName: m.Name, BackupSizeBytes: &size,
		BackupStatus: m.Status, BackupType: "USER", BackupCreationDateTime: epoch(m.Created)}}
	out.U = wire.Usage{ReadUnits: max(1, math.Ceil(float64(m.Bytes)/4096)), Table: m.Table.Name}
	return out, nil
}

// writeBackup copies h's items in snap into backup m, marked as being
// written until its descriptor says AVAILABLE (crash: abortBackups).
func (e *Engine) writeBackup(snap *storage.Snapshot, h *handle, m *backupMeta) error {
	ns := h.Namespace
	b := e.db.NewBatch()
	defer func() { b.Close() }()
	if err := putBackup(b, ns, m); err != nil {
		return err
	}
	b.Set(keyspace.BackupOpen(ns, m.ID), nil)
	if err := e.db.Apply(b); err != nil {
		return apierr.Wrap(apierr.Internal, err, "writing backup")
	}
	p := keyspace.Items(ns, h.Table.ID)
	it := snap.NewIter(p, keyspace.PrefixEnd(p))
	defer it.Close()
	b = e.db.NewBatch()
	for ok := it.First(); ok; ok = it.Next() {
		item, err := h.vals.decode(it.Key(), it.Value())
		if err != nil {
			return apierr.Wrap(apierr.Internal, err, "decoding item")
		}
		bk := keyspace.BackupItem(ns, m.ID, uint64(m.Items))
		v, err := e.backupValue(bk, item)
		if err != nil {
			return err
		}
		b.Set(bk, v)
		m.Items++
		m.Bytes += int64(attr.ItemSize(item))
		if m.Items%backupFlush == 0 {
			// NB: not synced: the final batch is, and the WAL is ordered.
			if err := e.db.ApplyNoSync(b); err != nil {
				return apierr.Wrap(apierr.Internal, err, "writing backup")
			}
			b.Close()
			b = e.db.NewBatch()
		}
	}
	if err := it.Error(); err != nil {
		return apierr.Wrap(apierr.Internal, err, "reading items")
	}
	m.Status = "AVAILABLE"
	if err := putBackup(b, ns, m); err != nil {
		return err
	}
	b.Delete(keyspace.BackupOpen(ns, m.ID))
	if err := e.db.Apply(b); err != nil {
		return apierr.Wrap(apierr.Internal, err, "writing backup")
	}
	return nil
}

// abortBackups deletes every backup the process died while writing.
func (e *Engine) abortBackups() error {
	lo, hi := keyspace.BackupsOpen()
	it := e.db.NewIter(lo, hi)
	b := e.db.NewBatch()
	defer b.Close()
	p := len(keyspace.System(keyspace.SysBackupsOpen))
	for ok := it.First(); ok; ok = it.Next() {
		k := it.Key()
		if len(k) < p+backupIDLen {
			continue
		}
		ns, id := k[p:len(k)-backupIDLen], string(k[len(k)-backupIDLen:])
		ilo, ihi := keyspace.BackupItems(ns, id)
		b.DeleteRange(ilo, ihi)
		b.Delete(keyspace.Backup(ns, id))
		b.Delete(k)
	}
	if err := it.Close(); err != nil {
		return apierr.Wrap(apierr.Internal, err, "listing backups")
	}
	if b.Len() == 0 {
		return nil
	}
	if err := e.db.Apply(b); err != nil {
		return apierr.Wrap(apierr.Internal, err, "deleting unfinished backups")
	}
	return nil
}

// describeBackup is the BackupDescription of m.
func (e *Engine) describeBackup(m *backupMeta) *wire.BackupDescription {
	t := m.Table
	size := m.Bytes
	d := &wire.BackupDescription{
		BackupDetails: &wire.BackupDetails{BackupArn: e.backupARN(t.Name, m.ID), BackupName: m.Name, BackupSizeBytes: &size,
			BackupStatus: m.Status, BackupType: "USER", BackupCreationDateTime: epoch(m.Created)},
		SourceTableDetails: &wire.SourceTableDetails{TableName: t.Name, TableId: t.UUID, TableArn: e.tableARN(t.Name),
			TableSizeBytes: m.TableBytes, KeySchema: keySchema(t.Hash, t.Range), TableCreationDateTime: epoch(t.Created),
			ProvisionedThroughput: &wire.ProvisionedThroughput{ReadCapacityUnits: i64(t.ReadCapacity), WriteCapacityUnits: i64(t.WriteCapacity)},
			ItemCount:             m.TableItems, BillingMode: t.BillingMode},
	}
	d.SourceTableFeatureDetails = sourceTableFeatures(t)
	return d
}

// DescribeBackup describes one of the caller's backups. Errors:
// ValidationException, BackupNotFoundException (also for another
// tenant's backup: audited as a denial), AccessDeniedException (the
// operator).
func (e *Engine) DescribeBackup(ctx context.Context, s tenancy.Scope, in *wire.DescribeBackupInput) (*wire.DescribeBackupOutput, error) {
	if err := check(ctx, s); err != nil {
		return nil, err
	}
	if err := tenantOnly(s); err != nil {
		return nil, err
	}
	m, err := e.openBackup(ctx, s, in.BackupArn)
	if err != nil {
		return nil, err
	}
	return &wire.DescribeBackupOutput{BackupDescription: e.describeBackup(m)}, nil
}

// DeleteBackup deletes one of the caller's backups. Errors as
// DescribeBackup, and BackupInUseException (still being written).
func (e *Engine) DeleteBackup(ctx context.Context, s tenancy.Scope, in *wire.DeleteBackupInput) (*wire.DeleteBackupOutput, error) {
	if err := check(ctx, s); err != nil {
		return nil, err
	}
	if err := tenantOnly(s); err != nil {
		return nil, err
	}
	m, err := e.openBackup(ctx, s, in.BackupArn)
	if err != nil {
		return nil, err
	}
	if m.Status != "AVAILABLE" {
		return nil, apierr.New(apierr.BackupInUse, "Backup is being created: %s", apierr.Clip(in.BackupArn))
	}
	ns := resolve.Namespace(s)
	b := e.db.NewBatch()
	defer b.Close()
	lo, hi := keyspace.BackupItems(ns, m.ID)
	b.DeleteRange(lo, hi)
	b.Delete(keyspace.Backup(ns, m.ID))
	if err := e.db.Apply(b); err != nil {
		return nil, apierr.Wrap(apierr.Internal, err, "deleting backup")
	}
	d := e.describeBackup(m)
	d.BackupDetails.BackupStatus = "DELETED"
	return &wire.DeleteBackupOutput{BackupDescription: d}, nil
}

// ListBackups lists the caller's backups (of one table, in a time range,
// of a type), oldest first, paged by ExclusiveStartBackupArn. Another
// tenant's backups are never listed or counted: they are in its range.
// Errors: ValidationException, AccessDeniedException (the operator).
func (e *Engine) ListBackups(ctx context.Context, s tenancy.Scope, in *wire.ListBackupsInput) (*wire.ListBackupsOutput, error) {
	if err := check(ctx, s); err != nil {
		return nil, err
	}
	if err := tenantOnly(s); err != nil {
		return nil, err
	}
	limit, err := pageLimit(in.Limit, 100)
	if err != nil {
		return nil, err
	}
	if in.TableName != "" {
		if err := schema.ValidateTableName(in.TableName); err != nil {
			return nil, err
		}
	}
	none, err := BackupTypeFilter(in.BackupType)
	if err != nil {
		return nil, err
	}
	if none {
		return &wire.ListBackupsOutput{BackupSummaries: []wire.BackupSummary{}}, nil
	}
	var after string
	if in.ExclusiveStartBackupArn != "" {
		if _, after, err = e.parseBackupARN(in.ExclusiveStartBackupArn); err != nil {
			return nil, err
		}
	}
	ns := resolve.Namespace(s)
	lo, hi := keyspace.Backups(ns)
	if after != "" {
		lo = append(keyspace.Backup(ns, after), 0)
	}
	it := e.db.NewIter(lo, hi)
	defer it.Close()
	allowed := func(table string) bool { return e.backupAllowed(ctx, s, table) == nil }
	return FilterBackupSummaries(in, limit, allowed, func(yield func(wire.BackupSummary, error) bool) {
		for ok := it.First(); ok; ok = it.Next() {
			var m backupMeta
			if err := json.Unmarshal(it.Value(), &m); err != nil || m.Table == nil {
				yield(wire.BackupSummary{}, apierr.Wrap(apierr.Internal, err, "corrupt backup descriptor"))
				return
			}
			if !yield(wire.BackupSummary{
				TableName: m.Table.Name, TableId: m.Table.UUID, TableArn: e.tableARN(m.Table.Name),
				BackupArn: e.backupARN(m.Table.Name, m.ID), BackupName: m.Name, BackupCreationDateTime: epoch(m.Created),
				BackupStatus: m.Status, BackupType: "USER", BackupSizeBytes: m.Bytes,
			}, nil) {
				return
			}
		}
		if err := it.Error(); err != nil {
			yield(wire.BackupSummary{}, apierr.Wrap(apierr.Internal, err, "listing backups"))
		}
	})
}

// RestoreTableFromBackup restores one of the caller's backups into a new
// table of the caller's namespace, with the backup's keys, indexes and
// billing and DynamoDB's overrides (no stream, no TTL, as DynamoDB's). The load is charged
// to the tenant as writes. Errors: ValidationException,
// BackupNotFoundException, BackupInUseException,
// TableAlreadyExistsException, LimitExceededException,
// AccessDeniedException.
func (e *Engine) RestoreTableFromBackup(ctx context.Context, s tenancy.Scope, in *wire.RestoreTableFromBackupInput) (*wire.RestoreTableFromBackupOutput, error) {
	if err := check(ctx, s); err != nil {
		return nil, err
	}
	if err := tenantOnly(s); err != nil {
		return nil, err
	}
	if err := schema.ValidateTableName(in.TargetTableName); err != nil {
		return nil, err
	}
	m, err := e.openBackup(ctx, s, in.BackupArn)
	if err != nil {
		return nil, err
	}
	if m.Status != "AVAILABLE" {
		return nil, apierr.New(apierr.BackupInUse, "Backup is being created: %s", apierr.Clip(in.BackupArn))
	}
	ns := resolve.Namespace(s)
	snap := e.db.NewSnapshot()
	defer snap.Close()
	r := restoreSpec{src: m.Table, target: in.TargetTableName,
		summary: wire.RestoreSummary{SourceBackupArn: e.backupARN(m.Table.Name, m.ID), SourceTableArn: e.tableARN(m.Table.Name), RestoreDateTime: epoch(m.Created)},
		billing: in.BillingModeOverride, pt: in.ProvisionedThroughputOverride, gsi: in.GlobalSecondaryIndexOverride, lsi: in.LocalSecondaryIndexOverride,
		sse: in.SSESpecificationOverride, onDemand: in.OnDemandThroughputOverride,
		items: func(put func(attr.Item) error) error {
			lo, hi := keyspace.BackupItems(ns, m.ID)
			it := snap.NewIter(lo, hi)
			defer it.Close()
			for ok := it.First(); ok; ok = it.Next() {
				item, err := e.backupItem(it.Key(), it.Value())
				if err != nil {
					return err
				}
				if err := put(item); err != nil {
					return err
				}
			}
			if err := it.Error(); err != nil {
				return apierr.Wrap(apierr.Internal, err, "reading backup")
			}
			return nil
		}}
	d, units, err := e.restore(ctx, s, r)
	if err != nil {
		return nil, err
	}
	out := &wire.RestoreTableFromBackupOutput{TableDescription: d}
	out.U = wire.Usage{WriteUnits: units, Table: d.TableName}
	return out, nil
}

// sourceTableFeatures is a backup's SourceTableFeatureDetails of t: its
// indexes (not those being deleted), stream and TTL settings.
func sourceTableFeatures(t *schema.Table) *wire.SourceTableFeatureDetails {
	f := &wire.SourceTableFeatureDetails{}
	for _, ix := range t.Indexes {
		if ix.Status == "DELETING" {
			continue
		}
		ks := keySchema(ix.Hash, ix.Range)
		if ix.Local {
			f.LocalSecondaryIndexes = append(f.LocalSecondaryIndexes, wire.LocalSecondaryIndexInfo{IndexName: ix.Name, KeySchema: ks, Projection: projectionOf(ix)})
			continue
		}
		g := wire.GlobalSecondaryIndexInfo{IndexName: ix.Name, KeySchema: ks, Projection: projectionOf(ix)}
		if t.BillingMode == "PROVISIONED" {
			g.ProvisionedThroughput = &wire.ProvisionedThroughput{ReadCapacityUnits: i64(ix.ReadCapacity), WriteCapacityUnits: i64(ix.WriteCapacity)}
		}
		f.GlobalSecondaryIndexes = append(f.GlobalSecondaryIndexes, g)
	}
	if streamEnabled(t) {
		spec := *t.Stream
		f.StreamDescription = &spec
	}
	if t.TTLAttribute != "" {
		status := "DISABLED"
		if t.TTLEnabled {
			status = "ENABLED"
		}
		f.TimeToLiveDescription = &wire.TimeToLiveDescription{AttributeName: t.TTLAttribute, TimeToLiveStatus: status}
	}
	return f
}
