package remote

import (
	"context"
	"encoding/binary"
	"errors"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/tenantdb/tenantdb/internal/apierr"
	"github.com/tenantdb/tenantdb/internal/attr"
	"github.com/tenantdb/tenantdb/internal/engine"
	"github.com/tenantdb/tenantdb/internal/resolve"
	"github.com/tenantdb/tenantdb/internal/schema"
	"github.com/tenantdb/tenantdb/internal/tenancy"
	"github.com/tenantdb/tenantdb/internal/wire"
)

// RestoreTableFromBackup (see backup.go, backupjob.go). The new table is
// a tenant table of the caller's namespace, made from the backup's
// definition with DynamoDB's overrides (engine.RestoreInput, validated
// as CreateTable), without stream and TTL as DynamoDB's; it is CREATING
// until every item of the backup is written into it through the
// ordinary physical layout (index entries, versions), then ACTIVE.
// The copy's state is in the new table's registry entry (rs*
// attributes), and the backup is pinned meanwhile (its bkrs set holds
// the table's id: DeleteBackup answers BackupInUse).

// Restore attributes of the new table's registry entry (and, rsBackup
// and rsName, of its job's marker).
const (
	rsBackup = "rsbk"   // B: the source backup's bid (8 bytes)
	rsName   = "rsname" // S: the new table's name
	rsItems  = "rsn"    // N: items written
	rsBytes  = "rsb"    // N: their size
	rsLast   = "rslast" // B: the last backup sort key written (absent: from the start)
)

// RestoreTableFromBackup restores one of the caller's backups into a new
// table of the caller's namespace and answers when every item is in it.
// A gateway that ends meanwhile leaves the table CREATING; any gateway
// finishes the restore (backupjob.go). Charged to the tenant as the
// engine's read and write units of the copy. Errors: ValidationException,
// BackupNotFoundException, BackupInUseException,
// TableAlreadyExistsException, LimitExceededException,
// AccessDeniedException.
func (b *Backend) RestoreTableFromBackup(ctx context.Context, s tenancy.Scope, in *wire.RestoreTableFromBackupInput) (*wire.RestoreTableFromBackupOutput, error) {
	if err := check(ctx, s); err != nil {
		return nil, err
	}
	if err := engine.TenantOnly(s); err != nil {
		return nil, err
	}
	if err := schema.ValidateTableName(in.TargetTableName); err != nil {
		return nil, err
	}
	m, err := b.openBackup(ctx, s, in.BackupArn)
	if err != nil {
		return nil, err
	}
	if m.status != stAvailable {
		return nil, apierr.New(apierr.BackupInUse, "Backup is being created: %s", apierr.Clip(in.BackupArn))
	}
	t, err := engine.BuildTable(engine.RestoreInput(m.table, in))
	if err != nil {
		return nil, err
	}
	resolve.ApplyRestoredIsolation(t, m.table)
	if len(t.Indexes) > b.opts.IndexSlots {
		return nil, apierr.New(apierr.LimitExceeded, "The remote backend serves at most %d secondary indexes per table (the engine table's index slots)", b.opts.IndexSlots)
	}
	if err := b.res.MayCreate(s, t.Name); err != nil {
		return nil, err
	}
	j, err := b.createRestored(ctx, s, t, rsSource{bid: m.bid, backup: m})
	if err != nil {
		return nil, err
	}
	u, c, err := b.runRestoreCopy(ctx, j)
	if err != nil {
		return nil, err
	}
	d := b.describe(c)
	d.RestoreSummary = &wire.RestoreSummary{SourceBackupArn: b.backupARN(m.table.Name, m.id), SourceTableArn: b.res.TableARN(m.table.Name),
		RestoreDateTime: epochOf(m.created)}
	out := &wire.RestoreTableFromBackupOutput{TableDescription: d}
	u.Table = c.Name
	out.U = u
	return out, nil
}

// rsSource is where a restore's items come from: a backup (bid), or,
// for a point-in-time restore (pitr.go), the caller's collection of
// table srcID in a scratch engine table restored to time at.
type rsSource struct {
	bid     uint64
	backup  *backupMeta // the backup (createRestored only)
	scratch string
	srcNS   []byte // the source collection's namespace (the Target's)
	srcID   uint64
	at      int64 // Unix ms
	tenant  string
}

// attrs are the source's attributes of the job's marker and entry.
func (src rsSource) attrs(name string) map[string]types.AttributeValue {
	m := map[string]types.AttributeValue{rsName: &types.AttributeValueMemberS{Value: name}}
	if src.bid != 0 {
		m[rsBackup] = &types.AttributeValueMemberB{Value: binary.BigEndian.AppendUint64(nil, src.bid)}
	}
	if src.scratch != "" {
		m[rsScratch] = &types.AttributeValueMemberS{Value: src.scratch}
		m[rsSrc], m[rsAt] = num64(int64(src.srcID)), num64(src.at)
		m[rsSrcNS] = &types.AttributeValueMemberB{Value: src.srcNS}
		m[rsTenant] = &types.AttributeValueMemberS{Value: src.tenant}
	}
	return m
}

// rsSourceOf reads a restore's source and new table's name from its
// marker or entry (ok false: neither a backup nor a scratch table).
func rsSourceOf(it map[string]types.AttributeValue) (src rsSource, name string, ok bool) {
	namev, _ := it[rsName].(*types.AttributeValueMemberS)
	if namev == nil {
		return src, "", false
	}
	if v, _ := it[rsBackup].(*types.AttributeValueMemberB); v != nil && len(v.Value) == 8 {
		src.bid = binary.BigEndian.Uint64(v.Value)
	}
	if v, _ := it[rsScratch].(*types.AttributeValueMemberS); v != nil {
		src.scratch, src.srcID, src.at = v.Value, uint64(num64Attr(it, rsSrc)), num64Attr(it, rsAt)
		if v, _ := it[rsTenant].(*types.AttributeValueMemberS); v != nil {
			src.tenant = v.Value
		}
		if v, _ := it[rsSrcNS].(*types.AttributeValueMemberB); v != nil {
			src.srcNS = v.Value
		}
	}
	return src, namev.Value, src.bid != 0 || src.scratch != ""
}

// createRestored admits t, allocates its id and writes, in this order,
// the restore's marker, the backup's pin (a restore from a backup), the
// new collection's registry entry (the copy's state and lease) and the
// definition (CREATING), so that a gateway ending between any two leaves
// a job that is finished or cleaned up (backupjob.go).
func (b *Backend) createRestored(ctx context.Context, s tenancy.Scope, t *schema.Table, src rsSource) (*bkJob, error) {
	b.ddl.Lock()
	defer b.ddl.Unlock()
	if err := b.res.AdmitCreate(ctx, s, t); err != nil {
		if apierr.Is(err, apierr.ResourceInUse) {
			return nil, apierr.New(apierr.TableAlreadyExists, "Table already exists: %s", apierr.Clip(t.Name))
		}
		return nil, err
	}
	var err error
	if t.ID, err = b.nextTableID(ctx); err != nil {
		return nil, err
	}
	ns := resolve.Namespace(s)
	if err := b.register(ctx, ns, 0); err != nil { // the namespace's definitions
		return nil, err
	}
	t.Created = b.opts.Now()
	t.Status = "CREATING"
	if t.BillingMode == "PAY_PER_REQUEST" {
		t.OnDemandSince = t.Created
	}
	for _, ix := range t.Indexes {
		ix.Created = t.Created
	}
	n, err := b.defaultShards(ctx, resolve.TenantPrefix(s), t.Name)
	if err != nil {
		return nil, err
	}
	j := newJob(jobRestore, ns, t.ID)
	if src.srcID != 0 && src.scratch == "" {
		src.scratch = b.scratchName(t.ID) // a point-in-time restore (pitr.go)
	}
	if err := b.putMarker(ctx, j, src.attrs(t.Name)); err != nil {
		return nil, err
	}
	fail := func(err error) (*bkJob, error) {
		if derr := b.dropRestore(context.WithoutCancel(ctx), j, src, t.Name, false); derr != nil {
			b.log.Warn("undoing a failed restore", "err", derr)
		} else if derr := b.dropMarker(context.WithoutCancel(ctx), j); derr != nil {
			b.log.Warn("undoing a failed restore", "err", derr)
		}
		return nil, err
	}
	if m := src.backup; m != nil {
		if err := b.pinBackup(ctx, m, t.ID, true); err != nil {
			if apierr.Is(err, apierr.ConditionalCheckFailed) {
				err = apierr.New(apierr.BackupInUse, "Backup is being deleted: %s", apierr.Clip(b.backupARN(m.table.Name, m.id)))
			}
			return fail(err)
		}
	}
	entry := j.entryKey()
	if n > 1 {
		entry["shards"] = num(n)
	}
	for k, v := range src.attrs(t.Name) {
		entry[k] = v
	}
	entry[rsItems], entry[rsBytes] = num(0), num(0)
	entry[jobOwner] = &types.AttributeValueMemberB{Value: j.me}
	entry[jobBeat] = num64(time.Now().UnixMilli())
	if _, err := b.db.PutItem(ctx, &dynamodb.PutItemInput{TableName: &b.table, Item: entry,
		ConditionExpression: aws.String("attribute_not_exists(#p)"), ExpressionAttributeNames: map[string]string{"#p": attrPK}}); err != nil {
		return fail(engineErr(err, strip))
	}
	if err := b.putDef(ctx, t, ns, nil); err != nil {
		if apierr.Is(err, apierr.ConditionalCheckFailed) {
			// NB: a name being deleted stays ResourceInUse (nameTaken).
			err = apierr.New(apierr.TableAlreadyExists, "Table already exists: %s", apierr.Clip(t.Name))
			if out, gerr := b.db.GetItem(ctx, &dynamodb.GetItemInput{TableName: &b.table, Key: defKey(t, ns), ConsistentRead: aws.Bool(true)}); gerr == nil {
				if _, gone := out.Item[attrDropped]; gone {
					err = b.nameTaken(ctx, t, ns)
				}
			}
		}
		return fail(err)
	}
	b.res.Publish(t)
	return j, nil
}

// pinBackup adds (or removes) table id to m's set of restores under way;
// adding requires the backup to be AVAILABLE.
func (b *Backend) pinBackup(ctx context.Context, m *backupMeta, id uint64, add bool) error {
	in := &dynamodb.UpdateItemInput{TableName: &b.table, Key: regKey(regSK(m.ns, m.bid)),
		UpdateExpression:          aws.String("DELETE #rs :t"),
		ConditionExpression:       aws.String("attribute_exists(#p)"),
		ExpressionAttributeNames:  map[string]string{"#rs": bkRest, "#p": attrPK},
		ExpressionAttributeValues: map[string]types.AttributeValue{":t": &types.AttributeValueMemberSS{Value: []string{uitoa(id)}}},
	}
	if add {
		in.UpdateExpression = aws.String("ADD #rs :t")
		in.ConditionExpression = aws.String("#st = :av AND #id = :id")
		in.ExpressionAttributeNames = map[string]string{"#rs": bkRest, "#st": bkStatus, "#id": bkID}
		in.ExpressionAttributeValues[":av"] = &types.AttributeValueMemberS{Value: stAvailable}
		in.ExpressionAttributeValues[":id"] = &types.AttributeValueMemberS{Value: m.id}
	}
	_, err := b.db.UpdateItem(ctx, in)
	if err != nil && !add && apierr.Is(engineErr(err, strip), apierr.ConditionalCheckFailed) {
		return nil // the backup is gone (its tenant deleted)
	}
	return engineErr(err, strip)
}

// restoredDef reads the definition of table name in namespace ns if it
// is table id (nil: gone, or the name is another table's now).
func (b *Backend) restoredDef(ctx context.Context, ns []byte, name string, id uint64) (*schema.Table, map[string]types.AttributeValue, error) {
	key := map[string]types.AttributeValue{
		attrPK: &types.AttributeValueMemberS{Value: defPK(ns)},
		attrSK: &types.AttributeValueMemberB{Value: []byte(name)},
	}
	out, err := b.db.GetItem(ctx, &dynamodb.GetItemInput{TableName: &b.table, Key: key, ConsistentRead: aws.Bool(true)})
	if err != nil {
		return nil, nil, engineErr(err, strip)
	}
	d, ok := out.Item["def"].(*types.AttributeValueMemberB)
	if !ok {
		return nil, nil, nil
	}
	t, err := schema.Decode(d.Value)
	if err != nil || t.ID != id {
		return nil, nil, err
	}
	return t, out.Item, nil
}

// runRestoreCopy runs restore job j (whose lease it holds) to its end:
// the source's items into the new table, then the table ACTIVE. The
// source is a backup's collection, or (pitr.go) the caller's collection
// in a scratch engine table restored to a time, made first and deleted
// once copied. It returns the engine units it consumed and the table's
// definition. On an error its lease is released (another gateway resumes
// the job).
func (b *Backend) runRestoreCopy(ctx context.Context, j *bkJob) (u wire.Usage, _ *schema.Table, err error) {
	b.bk.running.Store(string(j.markerSK()), true)
	defer b.bk.running.Delete(string(j.markerSK()))
	it, err := b.readEntry(ctx, j)
	if err != nil {
		return u, nil, err
	}
	src, name, ok := rsSourceOf(it)
	if it == nil || !ok {
		return u, nil, errJobGone
	}
	defer func() {
		switch {
		case errors.Is(err, errJobGone):
			b.cleanUpGone(ctx, j, src.attrs(name))
		case err != nil:
			b.release(ctx, j)
		}
	}()
	var last []byte
	if v, ok := it[rsLast].(*types.AttributeValueMemberB); ok {
		last = v.Value
	}
	items, size, pos := num64Attr(it, rsItems), num64Attr(it, rsBytes), int(num64Attr(it, rsPos))
	_, copied := it[rsCopied]
	// The partitions read, in order, and the engine table they are in.
	table, pks := b.table, []string{backupPK(j.ns, src.bid)}
	if src.scratch != "" && !copied {
		if pks, err = b.prepareScratch(ctx, j, src, name); err != nil {
			return u, nil, err
		}
		table = src.scratch
	}
	for !copied {
		t, _, err := b.restoredDef(ctx, j.ns, name, j.id)
		if err != nil {
			return u, nil, err
		}
		if t == nil {
			// NB: the table was deleted while it was restored.
			if err := b.dropRestore(ctx, j, src, name, true); err != nil {
				return u, nil, err
			}
			return u, nil, errors.Join(errJobGone, b.dropMarker(ctx, j))
		}
		if pos >= len(pks) {
			break
		}
		lay, err := b.layoutOf(ctx, j.ns, t.ID)
		if err != nil {
			return u, nil, err
		}
		p := placeOf(resolve.Background(t, j.ns), lay)
		r0 := u.ReadUnits
		raws, next, err := b.readPageOf(ctx, table, pks[pos], last, &u.ReadUnits)
		j.spend(u.ReadUnits-r0, 0)
		if err != nil {
			return u, nil, err
		}
		puts := make([]map[string]types.AttributeValue, 0, len(raws))
		for _, raw := range raws {
			item := strip(raw)
			if item == nil {
				continue
			}
			m, err := p.physItem(item)
			if err != nil {
				// An index override whose key is too large for the
				// engine: the item stays out, as CreateTable's
				// validation cannot see it.
				b.log.Warn("restoring a table: an item does not fit the restored table", "table", t.ID, "err", err)
				continue
			}
			puts = append(puts, m)
			items++
			size += int64(attr.ItemSize(item))
		}
		w, err := b.putAll(ctx, puts)
		u.WriteUnits += w
		j.spend(0, w)
		if err != nil {
			return u, nil, err
		}
		if last = next; last == nil {
			pos++
		}
		set := "#n = :n, #sz = :sz, #pos = :pos"
		names := map[string]string{"#n": rsItems, "#sz": rsBytes, "#last": rsLast, "#pos": rsPos}
		values := map[string]types.AttributeValue{":n": num64(items), ":sz": num64(size), ":pos": num(pos)}
		remove := "#last"
		if last != nil {
			set += ", #last = :last"
			values[":last"] = &types.AttributeValueMemberB{Value: last}
			remove = ""
		}
		if err := b.jobSave(ctx, j, set, remove, names, values); err != nil {
			return u, nil, err
		}
	}
	if src.scratch != "" {
		// NB: recorded before the scratch table goes, so that a gateway
		// resuming the job does not restore it again.
		if !copied {
			if err := b.jobSave(ctx, j, "#cp = :t", "", map[string]string{"#cp": rsCopied},
				map[string]types.AttributeValue{":t": &types.AttributeValueMemberBOOL{Value: true}}); err != nil {
				return u, nil, err
			}
		}
		if err := b.dropScratch(ctx, src.scratch); err != nil {
			return u, nil, err
		}
	}
	t, _, err := b.restoredDef(ctx, j.ns, name, j.id)
	if err != nil {
		return u, nil, err
	}
	if t == nil {
		if err := b.dropRestore(ctx, j, src, name, true); err != nil {
			return u, nil, err
		}
		return u, nil, errors.Join(errJobGone, b.dropMarker(ctx, j))
	}
	c, err := b.finishRestore(ctx, j, t, src, items)
	return u, c, err
}

// finishRestore makes restored table t ACTIVE, unpins the backup and
// ends job j.
func (b *Backend) finishRestore(ctx context.Context, j *bkJob, t *schema.Table, src rsSource, items int64) (*schema.Table, error) {
	for {
		c := t.Clone()
		c.Status = "ACTIVE"
		err := b.putDef(ctx, c, j.ns, t)
		if err == nil {
			b.res.Publish(c)
			t = c
			break
		}
		if !apierr.Is(err, apierr.ConditionalCheckFailed) {
			return nil, err
		}
		// Changed meanwhile (tags, settings): again on what it is now.
		cur, _, rerr := b.restoredDef(ctx, j.ns, t.Name, j.id)
		if rerr != nil {
			return nil, rerr
		}
		if cur == nil {
			return nil, errJobGone
		}
		if cur.Status != "CREATING" {
			t = cur
			break
		}
		t = cur
	}
	if src.bid != 0 {
		if err := b.pinBackup(ctx, &backupMeta{ns: j.ns, bid: src.bid}, j.id, false); err != nil {
			return nil, err
		}
	}
	if err := b.jobSave(ctx, j, "", rsState,
		map[string]string{"#bk": rsBackup, "#name": rsName, "#n": rsItems, "#sz": rsBytes, "#last": rsLast,
			"#scr": rsScratch, "#src": rsSrc, "#sns": rsSrcNS, "#at": rsAt, "#ten": rsTenant, "#pos": rsPos, "#cp": rsCopied}, nil); err != nil {
		return nil, err
	}
	if src.scratch != "" {
		b.pitrEvent(j, src, t.Name, "done", items, "")
	}
	return t, b.dropMarker(ctx, j)
}

// rsState is the REMOVE list of a restore's state in its entry (the
// names as finishRestore and dropRestore map them), the lease included.
const rsState = "#bk, #name, #n, #sz, #last, #scr, #src, #sns, #at, #ten, #pos, #cp, #own, #beat"

// dropRestore undoes restore job j from src into table name: the
// definition if it is still the restore's (CREATING), the items written
// when purge (the table is deleted otherwise, or its tenant), the
// backup's pin or the scratch table, and the entry's restore state.
// Idempotent.
func (b *Backend) dropRestore(ctx context.Context, j *bkJob, src rsSource, name string, purge bool) error {
	t, item, err := b.restoredDef(ctx, j.ns, name, j.id)
	if err != nil {
		return err
	}
	if t != nil && t.Status == "CREATING" {
		_, err := b.db.DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: &b.table, Key: physKeyOf(item),
			ConditionExpression:       aws.String("#d = :d"),
			ExpressionAttributeNames:  map[string]string{"#d": "def"},
			ExpressionAttributeValues: map[string]types.AttributeValue{":d": item["def"]},
		})
		if err != nil && !apierr.Is(engineErr(err, strip), apierr.ConditionalCheckFailed) {
			return engineErr(err, strip)
		}
		b.res.Unpublish(t)
		purge = true
	}
	it, err := b.readEntry(ctx, j)
	if err != nil {
		return err
	}
	if purge && it != nil {
		p := place{base: collBase(j.ns, j.id), lay: layoutFrom(it)}
		for _, pk := range p.shardPKs() {
			if err := b.deleteCollection(ctx, pk); err != nil {
				return err
			}
		}
	}
	if src.bid != 0 {
		if err := b.pinBackup(ctx, &backupMeta{ns: j.ns, bid: src.bid}, j.id, false); err != nil {
			return err
		}
	}
	if src.scratch != "" {
		if err := b.dropScratch(ctx, src.scratch); err != nil {
			return err
		}
	}
	if it != nil {
		_, err := b.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{TableName: &b.table, Key: j.entryKey(),
			UpdateExpression:    aws.String("REMOVE " + rsState),
			ConditionExpression: aws.String("attribute_exists(#p)"),
			ExpressionAttributeNames: map[string]string{"#bk": rsBackup, "#name": rsName, "#n": rsItems, "#sz": rsBytes, "#last": rsLast,
				"#scr": rsScratch, "#src": rsSrc, "#sns": rsSrcNS, "#at": rsAt, "#ten": rsTenant, "#pos": rsPos, "#cp": rsCopied,
				"#own": jobOwner, "#beat": jobBeat, "#p": attrPK},
		})
		if err != nil && !apierr.Is(engineErr(err, strip), apierr.ConditionalCheckFailed) {
			return engineErr(err, strip)
		}
	}
	return nil
}
