package remote

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/tenantdb/tenantdb/internal/apierr"
	"github.com/tenantdb/tenantdb/internal/engine"
	"github.com/tenantdb/tenantdb/internal/resolve"
	"github.com/tenantdb/tenantdb/internal/schema"
	"github.com/tenantdb/tenantdb/internal/tenancy"
	"github.com/tenantdb/tenantdb/internal/wire"
)

// On-demand backups (CreateBackup, DescribeBackup, ListBackups,
// DeleteBackup, RestoreTableFromBackup) of the caller's view of a table,
// built from Query, BatchWriteItem and conditional writes only (see
// DESIGN.md, "Backups"). A backup is a collection of the caller's own
// namespace, registered like a table's:
//
//	registry entry  pk = meta#reg           sk = ns || bid   the descriptor (bk* attributes) and the copy's progress
//	items           pk = hex(ns) "#" bid "#0"   sk = the item's sort key in its table
//
// where bid = 1<<63 | (creation ms mod 2^31)<<32 | the id's 32 random
// bits: never a table id (those count up from 1), unique in the
// namespace (the entry is created on condition that it is new). So a
// backup is found, listed and deleted only through the caller's
// namespace (resolve.Namespace: another tenant's ARN names no entry of
// the caller's and is BackupNotFound, an audited denial), and deleting
// the tenant deletes its backups with its other collections
// (DropTenant). Point-in-time recovery is the engine's, cut to the
// caller's collection (pitr.go).

// Descriptor attributes of a backup's registry entry.
const (
	bkID     = "bkid"   // S: the backup id (the ARN's last part)
	bkName   = "bkname" // S
	bkDef    = "bkdef"  // B: the source table's definition (schema.Encode)
	bkAt     = "bkat"   // N: creation time, Unix ms
	bkStatus = "bkst"   // S: CREATING, AVAILABLE, DELETING
	bkItems  = "bkn"    // N: items copied
	bkBytes  = "bkb"    // N: their size
	bkOrder  = "bkord"  // B: the source shards, in the order they are read (2 bytes each)
	bkLay    = "bklay"  // B: the source layout when the order was made (shards, from)
	bkPos    = "bkpos"  // N: index into bkOrder of the shard being read
	bkLast   = "bklast" // B: the last sort key copied in that shard (absent: its start)
	bkRest   = "bkrs"   // SS: ids of tables being restored from the backup (DeleteBackup waits)
	jobOwner = "own"    // B: the lease holder of a running copy (backupjob.go)
	jobBeat  = "beat"   // N: its last progress, Unix ms (0: released)
)

// Backup statuses.
const (
	stCreating  = "CREATING"
	stAvailable = "AVAILABLE"
	stDeleting  = "DELETING"
)

// backupBid is the collection id of the backup with id (a valid backup
// id), see above.
func backupBid(id string) uint64 {
	ms, _ := strconv.ParseUint(id[:14], 10, 64)
	tag, _ := strconv.ParseUint(id[15:], 16, 32)
	return 1<<63 | (ms&(1<<31-1))<<32 | tag
}

// newBackupID returns a new backup id made at now.
func newBackupID(now time.Time) string {
	var tag [4]byte
	_, _ = rand.Read(tag[:])
	return fmt.Sprintf("%014d-%08x", now.UnixMilli(), binary.BigEndian.Uint32(tag[:]))
}

// backupPK is the partition key of backup bid's items in namespace ns.
func backupPK(ns []byte, bid uint64) string { return collBase(ns, bid) + "0" }

// backupARN is the ARN of backup id of the table named table.
func (b *Backend) backupARN(table, id string) string { return b.res.TableARN(table) + "/backup/" + id }

// parseBackupARN returns the table name and backup id a backup ARN
// names; an ARN of another region or account is BackupNotFound, as one
// of another tenant. Errors: ValidationException, BackupNotFound.
func (b *Backend) parseBackupARN(arn string) (table, id string, err error) {
	if arn == "" {
		return "", "", apierr.Validationf("1 validation error detected: Value null at 'backupArn' failed to satisfy constraint: Member must not be null")
	}
	if len(arn) < 37 || len(arn) > 1024 {
		return "", "", apierr.Validationf("1 validation error detected: Value '%s' at 'backupArn' failed to satisfy constraint: Member must have length between 37 and 1024", apierr.Clip(arn))
	}
	tarn, id, ok := strings.Cut(arn, "/backup/")
	var name string
	if ok {
		i := strings.Index(tarn, ":table/")
		ok = strings.HasPrefix(tarn, "arn:aws:dynamodb:") && i > 0 && strings.Count(tarn[:i], ":") == 4
		if ok {
			name = tarn[i+len(":table/"):]
		}
	}
	if !ok || schema.ValidateTableName(name) != nil || !engine.ValidBackupID(id) {
		return "", "", apierr.Validationf("Invalid BackupArn: %s", apierr.Clip(arn))
	}
	if tarn != b.res.TableARN(name) {
		return "", "", engine.BackupNotFound(arn)
	}
	return name, id, nil
}

// backupMeta is a backup's descriptor, read from its registry entry.
type backupMeta struct {
	ns      []byte
	bid     uint64
	id      string
	name    string
	table   *schema.Table
	created time.Time
	status  string
	items   int64
	bytes   int64
	restore bool // tables are being restored from it
}

func (m *backupMeta) pk() string { return backupPK(m.ns, m.bid) }

// backupFrom decodes a backup's registry entry (nil: not a backup).
func backupFrom(ns []byte, it map[string]types.AttributeValue) (*backupMeta, error) {
	id, ok := it[bkID].(*types.AttributeValueMemberS)
	if !ok {
		return nil, nil
	}
	sk, _ := it[attrSK].(*types.AttributeValueMemberB)
	d, _ := it[bkDef].(*types.AttributeValueMemberB)
	if sk == nil || d == nil || len(sk.Value) != len(ns)+8 {
		return nil, apierr.New(apierr.Internal, "corrupt backup descriptor in the engine")
	}
	t, err := schema.Decode(d.Value)
	if err != nil {
		return nil, err
	}
	m := &backupMeta{ns: ns, bid: binary.BigEndian.Uint64(sk.Value[len(ns):]), id: id.Value, table: t}
	if v, ok := it[bkName].(*types.AttributeValueMemberS); ok {
		m.name = v.Value
	}
	if v, ok := it[bkStatus].(*types.AttributeValueMemberS); ok {
		m.status = v.Value
	}
	m.created = time.UnixMilli(int64(num64Attr(it, bkAt)))
	m.items, m.bytes = num64Attr(it, bkItems), num64Attr(it, bkBytes)
	_, m.restore = it[bkRest]
	return m, nil
}

func num64Attr(it map[string]types.AttributeValue, name string) int64 {
	v, ok := it[name].(*types.AttributeValueMemberN)
	if !ok {
		return 0
	}
	n, _ := strconv.ParseInt(v.Value, 10, 64)
	return n
}

// readBackup reads the descriptor of backup id in namespace ns (nil:
// none).
func (b *Backend) readBackup(ctx context.Context, ns []byte, id string) (*backupMeta, error) {
	out, err := b.db.GetItem(ctx, &dynamodb.GetItemInput{TableName: &b.table, Key: regKey(regSK(ns, backupBid(id))), ConsistentRead: aws.Bool(true)})
	if err != nil {
		return nil, engineErr(err, strip)
	}
	m, err := backupFrom(ns, out.Item)
	if err != nil || m == nil || m.id != id {
		return nil, err
	}
	return m, nil
}

// openBackup reads the descriptor of the backup arn names in the scope's
// own namespace. Errors: ValidationException, AccessDeniedException (the
// operator; a credential narrowed to other tables), BackupNotFound (also
// for another tenant's backup: audited as a denial).
func (b *Backend) openBackup(ctx context.Context, s tenancy.Scope, arn string) (*backupMeta, error) {
	if err := check(ctx, s); err != nil {
		return nil, err
	}
	if err := engine.TenantOnly(s); err != nil {
		return nil, err
	}
	table, id, err := b.parseBackupARN(arn)
	if err != nil {
		return nil, err
	}
	if err := b.backupAllowed(ctx, s, table); err != nil {
		return nil, err
	}
	// NB: the scope's own namespace, and only it: the resolver's.
	m, err := b.readBackup(ctx, resolve.Namespace(s), id)
	if err != nil {
		return nil, err
	}
	if m == nil || m.table.Name != table || m.status == stDeleting {
		return nil, engine.BackupNotFound(arn)
	}
	return m, nil
}

// backupAllowed refuses a backup of a table outside a narrowed
// credential's policy (AccessDenied, as for the table itself), whether or
// not the table still exists.
func (b *Backend) backupAllowed(ctx context.Context, s tenancy.Scope, table string) error {
	if _, err := b.res.Lookup(ctx, s, table); apierr.Is(err, apierr.AccessDenied) {
		return err
	}
	return nil
}

// CreateBackup copies the caller's view of a table — on a shared table
// the tenant environment's own collection, on its own table the whole
// table — with its definition into a backup of the caller's namespace,
// and answers when the copy is done (AVAILABLE). A gateway that ends
// mid-copy leaves it CREATING; any gateway finishes it (backupjob.go).
// Charged to the tenant as the engine's read and write units of the copy.
// Errors: ValidationException, TableNotFoundException,
// AccessDeniedException.
func (b *Backend) CreateBackup(ctx context.Context, s tenancy.Scope, in *wire.CreateBackupInput) (*wire.CreateBackupOutput, error) {
	if err := check(ctx, s); err != nil {
		return nil, err
	}
	if err := schema.ValidateTableName(in.TableName); err != nil {
		return nil, err
	}
	if err := engine.CheckBackupName(in.BackupName); err != nil {
		return nil, err
	}
	p, err := b.open(ctx, s, in.TableName)
	if err != nil {
		if apierr.Is(err, apierr.ResourceNotFound) {
			return nil, apierr.New(apierr.TableNotFound, "Table not found: %s", apierr.Clip(in.TableName))
		}
		return nil, err
	}
	def, err := schema.Encode(p.tg.Table)
	if err != nil {
		return nil, err
	}
	ns := p.tg.Namespace
	var j *bkJob
	var id string
	for attempt := 0; ; attempt++ {
		now := b.opts.Now()
		id = newBackupID(now)
		j = newJob(jobBackup, ns, backupBid(id))
		entry := regKey(regSK(ns, j.id))
		entry[bkID] = &types.AttributeValueMemberS{Value: id}
		entry[bkName] = &types.AttributeValueMemberS{Value: in.BackupName}
		entry[bkDef] = &types.AttributeValueMemberB{Value: def}
		entry[bkAt] = num64(now.UnixMilli())
		entry[bkStatus] = &types.AttributeValueMemberS{Value: stCreating}
		entry[bkItems], entry[bkBytes], entry[bkPos] = num(0), num(0), num(0)
		entry[bkOrder] = &types.AttributeValueMemberB{Value: shardOrder(p)}
		entry[bkLay] = &types.AttributeValueMemberB{Value: layKey(p.lay)}
		entry[jobOwner] = &types.AttributeValueMemberB{Value: j.me}
		entry[jobBeat] = num64(time.Now().UnixMilli())
		// NB: the job's marker first: a gateway ending after it leaves a
		// job that any gateway finishes or cleans up (backupjob.go).
		if err := b.putMarker(ctx, j, nil); err != nil {
			return nil, err
		}
		_, err = b.db.PutItem(ctx, &dynamodb.PutItemInput{TableName: &b.table, Item: entry,
			ConditionExpression:      aws.String("attribute_not_exists(#p)"),
			ExpressionAttributeNames: map[string]string{"#p": attrPK}})
		if err == nil {
			break
		}
		_ = b.dropMarker(ctx, j)
		if !apierr.Is(engineErr(err, strip), apierr.ConditionalCheckFailed) || attempt == 3 {
			return nil, engineErr(err, strip)
		}
	}
	u, err := b.runBackupCopy(ctx, j)
	if err != nil {
		return nil, err
	}
	m, err := b.readBackup(ctx, ns, id)
	if err != nil {
		return nil, err
	}
	if m == nil {
		return nil, apierr.New(apierr.Internal, "the backup went away while it was written (its tenant is being deleted)")
	}
	d := b.describeBackup(m)
	out := &wire.CreateBackupOutput{BackupDetails: d.BackupDetails}
	u.Table = in.TableName
	out.U = u
	return out, nil
}

// describeBackup is the BackupDescription of m.
func (b *Backend) describeBackup(m *backupMeta) *wire.BackupDescription {
	t := m.table
	size := m.bytes
	rcu, wcu := t.ReadCapacity, t.WriteCapacity
	d := &wire.BackupDescription{
		BackupDetails: &wire.BackupDetails{BackupArn: b.backupARN(t.Name, m.id), BackupName: m.name, BackupSizeBytes: &size,
			BackupStatus: m.status, BackupType: "USER", BackupCreationDateTime: epochOf(m.created)},
		SourceTableDetails: &wire.SourceTableDetails{TableName: t.Name, TableId: t.UUID, TableArn: b.res.TableARN(t.Name),
			TableSizeBytes: m.bytes, KeySchema: keySchema(t.Hash, t.Range), TableCreationDateTime: epochOf(t.Created),
			ProvisionedThroughput: &wire.ProvisionedThroughput{ReadCapacityUnits: &rcu, WriteCapacityUnits: &wcu},
			ItemCount:             m.items, BillingMode: t.BillingMode},
	}
	d.SourceTableFeatureDetails = engine.SourceTableFeatures(t)
	return d
}

func epochOf(t time.Time) float64 { return float64(t.UnixNano()/1e6) / 1e3 }

// DescribeBackup describes one of the caller's backups. Errors:
// ValidationException, BackupNotFoundException (also for another
// tenant's backup: audited as a denial), AccessDeniedException.
func (b *Backend) DescribeBackup(ctx context.Context, s tenancy.Scope, in *wire.DescribeBackupInput) (*wire.DescribeBackupOutput, error) {
	m, err := b.openBackup(ctx, s, in.BackupArn)
	if err != nil {
		return nil, err
	}
	return &wire.DescribeBackupOutput{BackupDescription: b.describeBackup(m)}, nil
}

// DeleteBackup deletes one of the caller's backups: marked DELETING
// (conditionally: AVAILABLE and no restore from it under way), its items
// deleted, then its entry; a deletion cut short is finished by the
// next DeleteBackup or the tenant's deletion. Errors as DescribeBackup,
// and BackupInUseException (being created, or restored from).
func (b *Backend) DeleteBackup(ctx context.Context, s tenancy.Scope, in *wire.DeleteBackupInput) (*wire.DeleteBackupOutput, error) {
	m, err := b.openBackup(ctx, s, in.BackupArn)
	if err != nil {
		if !apierr.Is(err, apierr.BackupNotFound) {
			return nil, err
		}
		// A deletion cut short: finish it (no denial then).
		if m2, _ := b.deletingBackup(ctx, s, in.BackupArn); m2 != nil {
			return b.finishDelete(ctx, m2)
		}
		return nil, err
	}
	if m.status != stAvailable || m.restore {
		return nil, apierr.New(apierr.BackupInUse, "Backup is in use (being created, or a table is being restored from it): %s", apierr.Clip(in.BackupArn))
	}
	_, err = b.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{TableName: &b.table, Key: regKey(regSK(m.ns, m.bid)),
		UpdateExpression:          aws.String("SET #st = :del"),
		ConditionExpression:       aws.String("#st = :av AND #id = :id AND attribute_not_exists(#rs)"),
		ExpressionAttributeNames:  map[string]string{"#st": bkStatus, "#id": bkID, "#rs": bkRest},
		ExpressionAttributeValues: map[string]types.AttributeValue{":del": &types.AttributeValueMemberS{Value: stDeleting}, ":av": &types.AttributeValueMemberS{Value: stAvailable}, ":id": &types.AttributeValueMemberS{Value: m.id}},
	})
	if err != nil {
		if apierr.Is(engineErr(err, strip), apierr.ConditionalCheckFailed) {
			return nil, apierr.New(apierr.BackupInUse, "Backup is in use (being created, or a table is being restored from it): %s", apierr.Clip(in.BackupArn))
		}
		return nil, engineErr(err, strip)
	}
	return b.finishDelete(ctx, m)
}

// deletingBackup reads the backup arn names in s's namespace if its
// deletion was begun and not finished (nil otherwise).
func (b *Backend) deletingBackup(ctx context.Context, s tenancy.Scope, arn string) (*backupMeta, error) {
	table, id, err := b.parseBackupARN(arn)
	if err != nil {
		return nil, err
	}
	m, err := b.readBackup(ctx, resolve.Namespace(s), id)
	if err != nil || m == nil || m.table.Name != table || m.status != stDeleting {
		return nil, err
	}
	return m, nil
}

// finishDelete deletes the items and then the entry of m, marked
// DELETING.
func (b *Backend) finishDelete(ctx context.Context, m *backupMeta) (*wire.DeleteBackupOutput, error) {
	if err := b.deleteCollection(ctx, m.pk()); err != nil {
		return nil, err
	}
	_, err := b.db.DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: &b.table, Key: regKey(regSK(m.ns, m.bid)),
		ConditionExpression:       aws.String("#st = :del"),
		ExpressionAttributeNames:  map[string]string{"#st": bkStatus},
		ExpressionAttributeValues: map[string]types.AttributeValue{":del": &types.AttributeValueMemberS{Value: stDeleting}},
	})
	if err != nil && !apierr.Is(engineErr(err, strip), apierr.ConditionalCheckFailed) {
		return nil, engineErr(err, strip)
	}
	m.status = "DELETED"
	return &wire.DeleteBackupOutput{BackupDescription: b.describeBackup(m)}, nil
}

// ListBackups lists the caller's backups (of one table, in a time range,
// of a type), oldest first, paged by ExclusiveStartBackupArn: one Query
// of the caller's range of the registry, so another tenant's backups are
// never read, listed or counted. Errors: ValidationException,
// AccessDeniedException (the operator).
func (b *Backend) ListBackups(ctx context.Context, s tenancy.Scope, in *wire.ListBackupsInput) (*wire.ListBackupsOutput, error) {
	if err := check(ctx, s); err != nil {
		return nil, err
	}
	if err := engine.TenantOnly(s); err != nil {
		return nil, err
	}
	limit, err := engine.BackupPageLimit(in.Limit)
	if err != nil {
		return nil, err
	}
	if in.TableName != "" {
		if err := schema.ValidateTableName(in.TableName); err != nil {
			return nil, err
		}
	}
	none, err := engine.BackupTypeFilter(in.BackupType)
	if err != nil {
		return nil, err
	}
	if none {
		return &wire.ListBackupsOutput{BackupSummaries: []wire.BackupSummary{}}, nil
	}
	var after string
	if in.ExclusiveStartBackupArn != "" {
		if _, after, err = b.parseBackupARN(in.ExclusiveStartBackupArn); err != nil {
			return nil, err
		}
	}
	ms, err := b.listBackups(ctx, resolve.Namespace(s))
	if err != nil {
		return nil, err
	}
	allowed := func(table string) bool { return b.backupAllowed(ctx, s, table) == nil }
	return engine.FilterBackupSummaries(in, limit, allowed, func(yield func(wire.BackupSummary, error) bool) {
		for _, m := range ms {
			if after != "" && m.id <= after {
				continue
			}
			if !yield(wire.BackupSummary{
				TableName: m.table.Name, TableId: m.table.UUID, TableArn: b.res.TableARN(m.table.Name),
				BackupArn: b.backupARN(m.table.Name, m.id), BackupName: m.name, BackupCreationDateTime: epochOf(m.created),
				BackupStatus: m.status, BackupType: "USER", BackupSizeBytes: m.bytes,
			}, nil) {
				return
			}
		}
	})
}

// listBackups reads the backups of namespace ns (not those being
// deleted), ordered by id (creation time first).
func (b *Backend) listBackups(ctx context.Context, ns []byte) ([]*backupMeta, error) {
	in := &dynamodb.QueryInput{
		TableName:                &b.table,
		KeyConditionExpression:   aws.String("#p = :p AND begins_with(#s, :s)"),
		FilterExpression:         aws.String("attribute_exists(#id)"),
		ExpressionAttributeNames: map[string]string{"#p": attrPK, "#s": attrSK, "#id": bkID},
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":p": &types.AttributeValueMemberS{Value: regPK},
			":s": &types.AttributeValueMemberB{Value: ns},
		},
		ConsistentRead: aws.Bool(true),
	}
	var out []*backupMeta
	for {
		res, err := b.db.Query(ctx, in)
		if err != nil {
			return nil, engineErr(err, strip)
		}
		for _, it := range res.Items {
			if sk, ok := it[attrSK].(*types.AttributeValueMemberB); !ok || len(sk.Value) != len(ns)+8 {
				continue // another namespace that begins with ns
			}
			m, err := backupFrom(ns, it)
			if err != nil {
				return nil, err
			}
			if m != nil && m.status != stDeleting {
				out = append(out, m)
			}
		}
		if len(res.LastEvaluatedKey) == 0 {
			break
		}
		in.ExclusiveStartKey = res.LastEvaluatedKey
	}
	sort.Slice(out, func(i, j int) bool { return out[i].id < out[j].id })
	return out, nil
}

// openForBackup resolves a table for a backup operation of s:
// TableNotFound rather than ResourceNotFound, as DynamoDB; the operator
// is refused.
func (b *Backend) openForBackup(ctx context.Context, s tenancy.Scope, name string) (resolve.Target, error) {
	if err := check(ctx, s); err != nil {
		return resolve.Target{}, err
	}
	tg, err := b.res.Open(ctx, s, name)
	if apierr.Is(err, apierr.ResourceNotFound) {
		return resolve.Target{}, apierr.New(apierr.TableNotFound, "Table not found: %s", apierr.Clip(name))
	}
	return tg, err
}

// continuousOff is the description of a table without point-in-time
// recovery (pitr.go): on-demand backups are available.
func continuousOff() *wire.ContinuousBackupsDescription {
	return &wire.ContinuousBackupsDescription{ContinuousBackupsStatus: "ENABLED",
		PointInTimeRecoveryDescription: &wire.PointInTimeRecoveryDescription{PointInTimeRecoveryStatus: "DISABLED"}}
}
