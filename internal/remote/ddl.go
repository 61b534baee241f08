package remote

import (
	"context"
	"fmt"
	"slices"
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

// notServed is the error of what the remote backend does not serve yet
// (the README's table lists it).
func notServed(what string) error {
	return apierr.Validationf("%s is not supported by the remote (dynamodb) backend yet", what)
}

// CreateTable validates the request as the embedded engine does, lets the
// resolver admit it, allocates an id from the engine and stores the
// definition with a conditional put, so that two gateways creating the
// same name race safely. Secondary indexes and streams are refused.
func (b *Backend) CreateTable(ctx context.Context, s tenancy.Scope, in *wire.CreateTableInput) (*wire.CreateTableOutput, error) {
	if err := check(ctx, s); err != nil {
		return nil, err
	}
	if err := b.res.MayCreate(s, in.TableName); err != nil {
		return nil, err
	}
	// NB: the stream is validated here and taken out of what BuildTable
	// sees (it refuses streams for backends without a change log).
	spec := in.StreamSpecification
	if spec != nil {
		if err := checkStreamSpec(spec); err != nil {
			return nil, err
		}
		cp := *in
		cp.StreamSpecification = nil
		in = &cp
	}
	t, err := engine.BuildTable(in)
	if err != nil {
		return nil, err
	}
	if len(t.Indexes) > b.opts.IndexSlots {
		return nil, apierr.New(apierr.LimitExceeded, "The remote backend serves at most %d secondary indexes per table (the engine table's index slots)", b.opts.IndexSlots)
	}
	b.ddl.Lock()
	defer b.ddl.Unlock()
	if err := b.res.AdmitCreate(ctx, s, t); err != nil {
		return nil, err
	}
	if t.ID, err = b.nextTableID(ctx); err != nil {
		return nil, err
	}
	if specEnabled(spec) {
		// NB: the stream's record is written before the definition naming
		// it; if that fails, only an unused record is left.
		if err := b.startStream(ctx, t, spec, true); err != nil {
			return nil, err
		}
	}
	if err := b.register(ctx, b.defNS(s, t), 0); err != nil {
		return nil, err
	}
	t.Created = b.opts.Now()
	if t.BillingMode == "PAY_PER_REQUEST" {
		t.OnDemandSince = t.Created
	}
	for _, ix := range t.Indexes {
		ix.Created = t.Created
	}
	if err := b.putDef(ctx, t, b.defNS(s, t), nil); err != nil {
		if apierr.Is(err, apierr.ConditionalCheckFailed) {
			return nil, b.nameTaken(ctx, t, b.defNS(s, t))
		}
		return nil, err
	}
	b.res.Publish(t)
	return &wire.CreateTableOutput{TableDescription: b.describe(t)}, nil
}

// defNS is the namespace under which table t's definition is stored: the
// owner's, as the resolver computes it (nil for a shared table).
func (b *Backend) defNS(s tenancy.Scope, t *schema.Table) []byte {
	if t.Shared() {
		return nil
	}
	return resolve.Namespace(s)
}

// putDef stores definition t, conditionally: as a new table when old is
// nil, else only if the stored definition is still old.
func (b *Backend) putDef(ctx context.Context, t *schema.Table, ns []byte, old *schema.Table) error {
	v, err := schema.Encode(t)
	if err != nil {
		return err
	}
	item := defKey(t, ns)
	item["def"] = &types.AttributeValueMemberB{Value: v}
	in := &dynamodb.PutItemInput{TableName: &b.table, Item: item}
	if old == nil {
		// NB: or in place of a tombstone left by a gateway that died
		// while it settled (tombstoneGone).
		in.ConditionExpression = aws.String("attribute_not_exists(#p) OR #x < :x")
		in.ExpressionAttributeNames = map[string]string{"#p": attrPK, "#x": attrDropped}
		in.ExpressionAttributeValues = map[string]types.AttributeValue{":x": num(int(b.tombstoneGone()))}
	} else {
		ov, err := schema.Encode(old)
		if err != nil {
			return err
		}
		in.ConditionExpression = aws.String("#d = :old")
		in.ExpressionAttributeNames = map[string]string{"#d": "def"}
		in.ExpressionAttributeValues = map[string]types.AttributeValue{":old": &types.AttributeValueMemberB{Value: ov}}
	}
	_, err = b.db.PutItem(ctx, in)
	return engineErr(err, strip)
}

// changeDef stores c in place of tg's definition and publishes it. A
// concurrent change through another gateway fails the condition and
// answers ResourceInUse, as DynamoDB does for a table being updated.
func (b *Backend) changeDef(ctx context.Context, tg resolve.Target, c *schema.Table) error {
	if err := b.putDef(ctx, c, tg.Namespace, tg.Table); err != nil {
		if apierr.Is(err, apierr.ConditionalCheckFailed) {
			return apierr.New(apierr.ResourceInUse, "Attempt to change a resource which is still in use: the table was changed concurrently: %s", c.Name)
		}
		return err
	}
	b.res.Publish(c)
	return nil
}

// DescribeTable describes a table, with the statistics of the scope's
// own items, counted by reading them (stats.go).
func (b *Backend) DescribeTable(ctx context.Context, s tenancy.Scope, in *wire.DescribeTableInput) (*wire.DescribeTableOutput, error) {
	tg, err := b.lookup(ctx, s, in.TableName)
	if err != nil {
		return nil, err
	}
	lay, err := b.layoutOf(ctx, tg.Namespace, tg.Table.ID)
	if err != nil {
		return nil, err
	}
	st, err := b.stats(ctx, placeOf(tg, lay))
	if err != nil {
		return nil, err
	}
	d := b.describe(tg.Table)
	d.ItemCount, d.TableSizeBytes = st[0][0], st[0][1]
	for _, ix := range tg.Table.Indexes {
		c := st[ix.No]
		for i := range d.GlobalSecondaryIndexes {
			if g := &d.GlobalSecondaryIndexes[i]; g.IndexName == ix.Name {
				g.ItemCount, g.IndexSizeBytes = c[0], c[1]
			}
		}
		for i := range d.LocalSecondaryIndexes {
			if l := &d.LocalSecondaryIndexes[i]; l.IndexName == ix.Name {
				l.ItemCount, l.IndexSizeBytes = c[0], c[1]
			}
		}
	}
	return &wire.DescribeTableOutput{Table: d}, nil
}

// ListTables lists the tables s sees; see resolve.Resolver.ListTables.
func (b *Backend) ListTables(ctx context.Context, s tenancy.Scope, in *wire.ListTablesInput) (*wire.ListTablesOutput, error) {
	if err := check(ctx, s); err != nil {
		return nil, err
	}
	return b.res.ListTables(ctx, s, in)
}

// DeleteTable removes the definition (conditionally, so that one of two
// racing gateways wins) after recording a drop; the items of a tenant
// table are then deleted in the background. The id is never reused, so
// items not yet deleted can never show through a new table of the name.
func (b *Backend) DeleteTable(ctx context.Context, s tenancy.Scope, in *wire.DeleteTableInput) (*wire.DeleteTableOutput, error) {
	if err := check(ctx, s); err != nil {
		return nil, err
	}
	if err := schema.ValidateTableName(in.TableName); err != nil {
		return nil, err
	}
	b.ddl.Lock()
	defer b.ddl.Unlock()
	tg, err := b.res.Lookup(ctx, s, in.TableName)
	if err != nil {
		return nil, err
	}
	t := tg.Table
	if err := b.res.CheckManage(s, t); err != nil {
		return nil, err
	}
	if t.DeletionProtection {
		return nil, apierr.New(apierr.Validation, "Resource cannot be deleted as it is currently protected against deletion. Disable deletion protection first.")
	}
	v, err := schema.Encode(t)
	if err != nil {
		return nil, err
	}
	// The drop record comes first: a gateway dying between the two writes
	// leaves a drop to finish, never unreachable items nobody knows of.
	drop := map[string]types.AttributeValue{
		attrPK: &types.AttributeValueMemberS{Value: "meta#drop"},
		attrSK: &types.AttributeValueMemberB{Value: fmt.Appendf(nil, "%020d", t.ID)},
		"def":  &types.AttributeValueMemberB{Value: v},
	}
	if tg.Namespace != nil && !t.Shared() {
		drop["ns"] = &types.AttributeValueMemberB{Value: tg.Namespace}
	}
	if _, err := b.db.PutItem(ctx, &dynamodb.PutItemInput{TableName: &b.table, Item: drop}); err != nil {
		return nil, engineErr(err, strip)
	}
	// NB: on a fleet the definition makes way for a tombstone, which
	// keeps the name from being created again until every gateway's
	// cached definition of this table has expired (Options.Settle).
	dropped := b.opts.Now().UnixMilli()
	if b.opts.Settle > 0 {
		tomb := defKey(t, tg.Namespace)
		tomb[attrDropped] = num(int(dropped))
		_, err = b.db.PutItem(ctx, &dynamodb.PutItemInput{
			TableName:                 &b.table,
			Item:                      tomb,
			ConditionExpression:       aws.String("#d = :d"),
			ExpressionAttributeNames:  map[string]string{"#d": "def"},
			ExpressionAttributeValues: map[string]types.AttributeValue{":d": &types.AttributeValueMemberB{Value: v}},
		})
	} else {
		_, err = b.db.DeleteItem(ctx, &dynamodb.DeleteItemInput{
			TableName:                 &b.table,
			Key:                       defKey(t, tg.Namespace),
			ConditionExpression:       aws.String("#d = :d"),
			ExpressionAttributeNames:  map[string]string{"#d": "def"},
			ExpressionAttributeValues: map[string]types.AttributeValue{":d": &types.AttributeValueMemberB{Value: v}},
		})
	}
	committed := time.Now()
	if err != nil {
		if apierr.Is(engineErr(err, strip), apierr.ConditionalCheckFailed) {
			b.res.Unpublish(t) // another gateway changed or deleted it: re-read on next use
			return nil, resolve.NotFound(t.Name)
		}
		return nil, engineErr(err, strip)
	}
	b.res.Unpublish(t)
	notBefore := b.keepStreams(ctx, t, tg.Namespace, time.UnixMilli(dropped)) // streamgone.go
	if !t.Shared() {
		lay, err := b.layoutOf(ctx, tg.Namespace, t.ID)
		if err != nil {
			lay = layout{n: MaxShards} // purge every shard there may be
		}
		// NB: on a fleet, after the settle: a gateway still holding the
		// definition may write until then, and its items are purged too.
		go func() {
			if d := b.opts.Settle - time.Since(committed); d > 0 {
				time.Sleep(d)
			}
			time.Sleep(time.Until(notBefore)) // a kept stream must not show the purge
			b.purge(context.WithoutCancel(ctx), placeOf(tg, lay))
		}()
	}
	if b.opts.Settle > 0 {
		b.ddl.Unlock() // NB: re-locked by the deferred Unlock's pair below
		err := b.settleDrop(ctx, t, tg.Namespace, dropped, committed)
		b.ddl.Lock()
		if err != nil {
			return nil, err
		}
	}
	return &wire.DeleteTableOutput{TableDescription: b.describe(t).Deleting()}, nil
}

// attrDropped marks a definition item as the tombstone of a dropped
// table: the time of the drop, Unix milliseconds.
const attrDropped = "dropped"

// settleDrop waits Options.Settle from committed, then removes the
// tombstone of table t (dropped at dropped), so that its name can be
// created again.
func (b *Backend) settleDrop(ctx context.Context, t *schema.Table, ns []byte, dropped int64, committed time.Time) error {
	if d := b.opts.Settle - time.Since(committed); d > 0 && !b.Alone(ctx) { // NB: no other gateway holds the definition (fleet.go)
		tm := time.NewTimer(d)
		select {
		case <-tm.C:
		case <-ctx.Done():
			tm.Stop()
			return ctx.Err()
		}
	}
	_, err := b.db.DeleteItem(context.WithoutCancel(ctx), &dynamodb.DeleteItemInput{
		TableName:                 &b.table,
		Key:                       defKey(t, ns),
		ConditionExpression:       aws.String("#x = :x"),
		ExpressionAttributeNames:  map[string]string{"#x": attrDropped},
		ExpressionAttributeValues: map[string]types.AttributeValue{":x": num(int(dropped))},
	})
	if err != nil && !apierr.Is(engineErr(err, strip), apierr.ConditionalCheckFailed) {
		return engineErr(err, strip)
	}
	return nil
}

// tombstoneGone is the drop time (Unix ms) before which a tombstone is a
// leftover of a gateway that died while it settled: CreateTable may take
// its place. The margin beyond Settle covers clock differences between
// gateways (stated in DESIGN.md).
func (b *Backend) tombstoneGone() int64 {
	return b.opts.Now().Add(-b.opts.Settle - tombstoneSkew).UnixMilli()
}

const tombstoneSkew = 10 * time.Second

// nameTaken is CreateTable's error when the definition's put failed its
// condition: the table exists, or it is still being deleted.
func (b *Backend) nameTaken(ctx context.Context, t *schema.Table, ns []byte) error {
	out, err := b.db.GetItem(ctx, &dynamodb.GetItemInput{TableName: &b.table, Key: defKey(t, ns), ConsistentRead: aws.Bool(true)})
	if err == nil {
		if _, gone := out.Item[attrDropped]; gone {
			return apierr.New(apierr.ResourceInUse, "Attempt to change a resource which is still in use: Table is being deleted: %s", t.Name)
		}
	}
	return apierr.New(apierr.ResourceInUse, "Table already exists: %s", t.Name)
}

// purge deletes the items of a dropped tenant table and then its drop
// record; with a WriteFence, twice: again fenceWait after the first,
// when no write a gateway admitted with the table's definition can still
// reach the engine (fence.go). A purge cut short by the gateway's end
// leaves the record for a later sweep (not yet written: see DESIGN.md).
func (b *Backend) purge(ctx context.Context, p place) {
	began := time.Now()
	once := func() bool {
		for _, pk := range p.shardPKs() {
			if err := b.deleteCollection(ctx, pk); err != nil {
				b.log.Warn("purging a dropped table", "table", p.tg.Table.ID, "err", err)
				return false
			}
		}
		return true
	}
	if !once() {
		return
	}
	if b.opts.WriteFence > 0 && (b.waitFence(b.bg, began) != nil || !once()) {
		return // the record stays: the fence's pass did not run
	}
	_, err := b.db.DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: &b.table, Key: map[string]types.AttributeValue{
		attrPK: &types.AttributeValueMemberS{Value: "meta#drop"},
		attrSK: &types.AttributeValueMemberB{Value: fmt.Appendf(nil, "%020d", p.tg.Table.ID)},
	}})
	if err != nil {
		b.log.Warn("forgetting a finished drop", "table", p.tg.Table.ID, "err", err)
	}
}

// UpdateTable changes billing mode, throughput (accepted and reported, as
// embedded), deletion protection and table class, validated and applied
// as the embedded engine does (engine.PlanTableUpdate), and stores the
// definition with a conditional put. Creating or deleting an index, and
// enabling a stream, are refused (not served yet); only the table's owner
// may update it.
func (b *Backend) UpdateTable(ctx context.Context, s tenancy.Scope, in *wire.UpdateTableInput) (*wire.UpdateTableOutput, error) {
	if err := check(ctx, s); err != nil {
		return nil, err
	}
	if err := schema.ValidateTableName(in.TableName); err != nil {
		return nil, err
	}
	if err := engine.CheckTableUpdate(in); err != nil {
		return nil, err
	}
	b.ddl.Lock()
	defer b.ddl.Unlock()
	tg, err := b.res.Lookup(ctx, s, in.TableName)
	if err != nil {
		return nil, err
	}
	if err := b.res.CheckManage(s, tg.Table); err != nil {
		return nil, err
	}
	plan, err := engine.PlanTableUpdate(tg.Table, in, b.opts.Now())
	if err != nil {
		return nil, err
	}
	if len(plan.Dropped) > 0 {
		return nil, notServed("Deleting a global secondary index")
	}
	c := plan.Table
	if len(c.Indexes) > b.opts.IndexSlots {
		return nil, apierr.New(apierr.LimitExceeded, "The remote backend serves at most %d secondary indexes per table (the engine table's index slots)", b.opts.IndexSlots)
	}
	var endStream, newStream uint64 // the stream disabled, or enabled, by this update
	if sp := in.StreamSpecification; sp != nil {
		if err := checkStreamSpec(sp); err != nil {
			return nil, err
		}
		switch want, enabled := *sp.StreamEnabled, specEnabled(c.Stream) && c.LatestStream != 0; {
		case want && enabled:
			return nil, apierr.Validationf("Table already has an enabled stream: %s", b.res.TableARN(c.Name))
		case !want && !enabled:
			return nil, apierr.Validationf("Table already has no enabled stream")
		case want:
			// NB: started below, once every other setting is valid.
		default:
			endStream, c.Stream = c.LatestStream, nil
		}
	}
	if err := engine.CheckSSE(in.SSESpecification); err != nil {
		return nil, err
	}
	if err := engine.ApplyTableSettings(c, in); err != nil {
		return nil, err
	}
	// NB: a stream's record is written (or its end recorded) before the
	// definition changes; a failed change undoes it.
	if sp := in.StreamSpecification; sp != nil && *sp.StreamEnabled {
		if err := b.startStream(ctx, c, sp, false); err != nil {
			return nil, err
		}
		newStream = c.LatestStream
	}
	if endStream != 0 {
		if err := b.setStreamDisabled(ctx, c.ID, endStream, b.opts.Now()); err != nil {
			return nil, err
		}
	}
	var job *ttlJob
	if len(plan.Created) > 0 {
		// NB: the job is recorded before the definition: a gateway ending
		// in between leaves a job that finds no such index and ends.
		if job, err = b.startIndexJob(ctx, c, tg.Namespace, s.Tenant(), plan.Created[0]); err != nil {
			return nil, err
		}
	}
	if err := b.changeDef(ctx, tg, c); err != nil {
		if newStream != 0 {
			b.dropStreamRec(ctx, c.ID, newStream)
		}
		if endStream != 0 {
			if derr := b.setStreamDisabled(ctx, c.ID, endStream, time.Time{}); derr != nil {
				b.log.Warn("undoing the end of a stream of a failed change", "table", c.ID, "err", derr)
			}
		}
		if job != nil {
			if derr := b.dropTTLJob(ctx, job); derr != nil {
				b.log.Warn("dropping the backfill job of a failed change", "table", c.ID, "err", derr)
			}
		}
		return nil, err
	}
	d := b.describe(c)
	if job != nil {
		b.jobEvent(job, "started", s.KeyID())
		go b.runTTLJob(b.bg, job, "")
		d.TableStatus = "UPDATING"
	}
	return &wire.UpdateTableOutput{TableDescription: d}, nil
}

// UpdateTimeToLive changes the TTL setting in the definition and syncs the
// engine's TTL copies of the table's existing items in the background
// (ttl.go): DescribeTimeToLive says ENABLING or DISABLING until that is
// done. The job is recorded before the definition changes, so that a
// gateway ending in between leaves a job that syncs to whatever the
// definition says.
func (b *Backend) UpdateTimeToLive(ctx context.Context, s tenancy.Scope, in *wire.UpdateTimeToLiveInput) (*wire.UpdateTimeToLiveOutput, error) {
	if err := check(ctx, s); err != nil {
		return nil, err
	}
	if err := schema.ValidateTableName(in.TableName); err != nil {
		return nil, err
	}
	spec := in.TimeToLiveSpecification
	if spec.AttributeName == "" {
		return nil, apierr.Validationf("1 validation error detected: Value null at 'timeToLiveSpecification.attributeName' failed to satisfy constraint: Member must not be null")
	}
	b.ddl.Lock()
	defer b.ddl.Unlock()
	tg, err := b.res.Lookup(ctx, s, in.TableName)
	if err != nil {
		return nil, err
	}
	if err := b.res.CheckManage(s, tg.Table); err != nil {
		return nil, err
	}
	t := tg.Table
	switch {
	case spec.Enabled && t.TTLEnabled:
		return nil, apierr.Validationf("TimeToLive is already enabled")
	case !spec.Enabled && !t.TTLEnabled:
		return nil, apierr.Validationf("TimeToLive is already disabled")
	case !spec.Enabled && spec.AttributeName != t.TTLAttribute:
		return nil, apierr.Validationf("TimeToLive is active on a different AttributeName: current AttributeName is %s", t.TTLAttribute)
	}
	if spec.Enabled {
		if err := b.ttlAvailable(); err != nil {
			return nil, err
		}
	}
	c := t.Clone()
	c.TTLEnabled, c.TTLAttribute = spec.Enabled, spec.AttributeName
	if !spec.Enabled {
		c.TTLAttribute = ""
	}
	job, err := b.startTTLJob(ctx, t, tg.Namespace, s.Tenant(), spec.AttributeName, spec.Enabled)
	if err != nil {
		return nil, err
	}
	if err := b.changeDef(ctx, tg, c); err != nil {
		if derr := b.dropTTLJob(ctx, job); derr != nil {
			b.log.Warn("dropping the TTL job of a failed change", "table", t.ID, "err", derr)
		}
		return nil, err
	}
	b.jobEvent(job, "started", s.KeyID())
	go b.runTTLJob(b.bg, job, "")
	return &wire.UpdateTimeToLiveOutput{TimeToLiveSpecification: spec}, nil
}

// DescribeTimeToLive reports the TTL setting of the definition, and
// DISABLING while the copies of a table whose TTL was turned off are
// being removed (the engine may still expire its items until then; one
// engine read of the table's TTL job). A table whose TTL was turned on is
// ENABLED at once, as DynamoDB reports it, while its existing items get
// their copies ("up to one hour" in DynamoDB; ttl.go).
func (b *Backend) DescribeTimeToLive(ctx context.Context, s tenancy.Scope, in *wire.DescribeTimeToLiveInput) (*wire.DescribeTimeToLiveOutput, error) {
	tg, err := b.lookup(ctx, s, in.TableName)
	if err != nil {
		return nil, err
	}
	d := wire.TimeToLiveDescription{TimeToLiveStatus: "DISABLED"}
	if tg.Table.TTLEnabled {
		d = wire.TimeToLiveDescription{TimeToLiveStatus: "ENABLED", AttributeName: tg.Table.TTLAttribute}
	}
	if !tg.Table.TTLEnabled {
		job, err := b.ttlJobOf(ctx, tg.Table.ID)
		if err != nil {
			return nil, err
		}
		if job != nil && !job.enabled {
			d = wire.TimeToLiveDescription{TimeToLiveStatus: "DISABLING", AttributeName: job.attr}
		}
	}
	return &wire.DescribeTimeToLiveOutput{TimeToLiveDescription: d}, nil
}

// TagResource adds or replaces tags in the definition.
func (b *Backend) TagResource(ctx context.Context, s tenancy.Scope, in *wire.TagResourceInput) (*wire.EmptyOutput, error) {
	if err := check(ctx, s); err != nil {
		return nil, err
	}
	if err := schema.CheckTagResource(in); err != nil {
		return nil, err
	}
	return b.retag(ctx, s, in.ResourceArn, func(c *schema.Table) error { return c.SetTags(in.Tags) })
}

// UntagResource removes tags from the definition.
func (b *Backend) UntagResource(ctx context.Context, s tenancy.Scope, in *wire.UntagResourceInput) (*wire.EmptyOutput, error) {
	if err := check(ctx, s); err != nil {
		return nil, err
	}
	if err := schema.CheckUntagResource(in); err != nil {
		return nil, err
	}
	return b.retag(ctx, s, in.ResourceArn, func(c *schema.Table) error {
		c.RemoveTags(in.TagKeys)
		return nil
	})
}

// retag changes the tags of the table arn names with change.
func (b *Backend) retag(ctx context.Context, s tenancy.Scope, arn string, change func(*schema.Table) error) (*wire.EmptyOutput, error) {
	if err := schema.CheckTaggableARN(arn); err != nil {
		return nil, err
	}
	b.ddl.Lock()
	defer b.ddl.Unlock()
	tg, err := b.res.LookupARN(ctx, s, arn)
	if err != nil {
		return nil, err
	}
	if err := b.res.CheckManage(s, tg.Table); err != nil {
		return nil, err
	}
	c := tg.Table.Clone()
	if err := change(c); err != nil {
		return nil, err
	}
	if err := b.changeDef(ctx, tg, c); err != nil {
		return nil, err
	}
	return &wire.EmptyOutput{}, nil
}

// ListTagsOfResource lists the tags of the definition.
func (b *Backend) ListTagsOfResource(ctx context.Context, s tenancy.Scope, in *wire.ListTagsOfResourceInput) (*wire.ListTagsOfResourceOutput, error) {
	if err := check(ctx, s); err != nil {
		return nil, err
	}
	if err := schema.CheckTaggableARN(in.ResourceArn); err != nil {
		return nil, err
	}
	tg, err := b.res.LookupARN(ctx, s, in.ResourceArn)
	if err != nil {
		return nil, err
	}
	return &wire.ListTagsOfResourceOutput{Tags: append([]wire.Tag{}, tg.Table.Tags...)}, nil
}

// DescribeEndpoints reports the gateway's own address.
func (b *Backend) DescribeEndpoints(ctx context.Context, s tenancy.Scope, _ *wire.DescribeEndpointsInput) (*wire.DescribeEndpointsOutput, error) {
	if err := check(ctx, s); err != nil {
		return nil, err
	}
	addr := b.opts.Endpoint
	if addr == "" {
		addr = "127.0.0.1:8000"
	}
	return &wire.DescribeEndpointsOutput{Endpoints: []wire.Endpoint{{Address: addr, CachePeriodInMinutes: 1440}}}, nil
}

// DescribeLimits reports DynamoDB's default limits, as the embedded
// engine does.
func (b *Backend) DescribeLimits(ctx context.Context, s tenancy.Scope, _ *wire.DescribeLimitsInput) (*wire.DescribeLimitsOutput, error) {
	if err := check(ctx, s); err != nil {
		return nil, err
	}
	return &wire.DescribeLimitsOutput{
		AccountMaxReadCapacityUnits:  80000,
		AccountMaxWriteCapacityUnits: 80000,
		TableMaxReadCapacityUnits:    40000,
		TableMaxWriteCapacityUnits:   40000,
	}, nil
}

func keySchema(h, r schema.KeyAttr) []wire.KeySchemaElement {
	ks := []wire.KeySchemaElement{{AttributeName: h.Name, KeyType: "HASH"}}
	if r.Name != "" {
		ks = append(ks, wire.KeySchemaElement{AttributeName: r.Name, KeyType: "RANGE"})
	}
	return ks
}

func (b *Backend) describe(t *schema.Table) *wire.TableDescription {
	ks := keySchema(t.Hash, t.Range)
	d := &wire.TableDescription{
		AttributeDefinitions:      slices.Clone(t.AttrDefs),
		TableName:                 t.Name,
		KeySchema:                 ks,
		TableStatus:               t.Status,
		CreationDateTime:          float64(t.Created.UnixNano()/1e6) / 1e3,
		ProvisionedThroughput:     &wire.ProvisionedThroughputDescription{ReadCapacityUnits: t.ReadCapacity, WriteCapacityUnits: t.WriteCapacity},
		TableArn:                  b.res.TableARN(t.Name),
		TableId:                   t.UUID,
		BillingModeSummary:        t.BillingSummary(),
		DeletionProtectionEnabled: t.DeletionProtection,
	}
	b.describeStream(t, d)
	if t.TableClass != "" {
		d.TableClassSummary = &wire.TableClassSummary{TableClass: t.TableClass}
	}
	for _, ix := range t.Indexes {
		proj := &wire.Projection{ProjectionType: ix.ProjectionType}
		if ix.ProjectionType == "INCLUDE" {
			proj.NonKeyAttributes = slices.Clone(ix.NonKey)
		}
		arn := d.TableArn + "/index/" + ix.Name
		if ix.Local {
			d.LocalSecondaryIndexes = append(d.LocalSecondaryIndexes, wire.LocalSecondaryIndexDescription{
				IndexName: ix.Name, KeySchema: keySchema(ix.Hash, ix.Range), Projection: proj, IndexArn: arn})
			continue
		}
		d.GlobalSecondaryIndexes = append(d.GlobalSecondaryIndexes, wire.GlobalSecondaryIndexDescription{
			IndexName: ix.Name, KeySchema: keySchema(ix.Hash, ix.Range), Projection: proj, IndexStatus: ix.Status,
			ProvisionedThroughput: &wire.ProvisionedThroughputDescription{ReadCapacityUnits: ix.ReadCapacity, WriteCapacityUnits: ix.WriteCapacity},
			IndexArn:              arn})
		if ix.Backfilling {
			bf := true
			d.GlobalSecondaryIndexes[len(d.GlobalSecondaryIndexes)-1].Backfilling = &bf
		}
	}
	return d
}

// lookup checks the scope and the table name and resolves the table's
// Target for a control-plane request.
func (b *Backend) lookup(ctx context.Context, s tenancy.Scope, name string) (resolve.Target, error) {
	if err := check(ctx, s); err != nil {
		return resolve.Target{}, err
	}
	if err := schema.ValidateTableName(name); err != nil {
		return resolve.Target{}, err
	}
	return b.res.Lookup(ctx, s, name)
}
