package engine

import (
	"context"
	"encoding/json"

	"github.com/tenantdb/tenantdb/internal/apierr"
	"github.com/tenantdb/tenantdb/internal/attr"
	"github.com/tenantdb/tenantdb/internal/keyspace"
	"github.com/tenantdb/tenantdb/internal/resolve"
	"github.com/tenantdb/tenantdb/internal/schema"
	"github.com/tenantdb/tenantdb/internal/tenancy"
	"github.com/tenantdb/tenantdb/internal/wire"
)

// Restores (RestoreTableFromBackup, RestoreTableToPointInTime) create a
// new table in the caller's own namespace — a tenant table, whatever the
// source was — from a source definition with DynamoDB's overrides, load
// the items through the ordinary write path (so indexes and counters are
// maintained as for any write), and then make the table ACTIVE.
//
// NB: as DynamoDB's, a restored table has no stream and no TTL: the
// source's settings are in the backup's SourceTableFeatureDetails, and
// DynamoDB's documentation lists "Stream settings" and "Time to Live
// (TTL) settings" among what must be set up by hand on a restored table.
//
// Crash safety: the new definition is written together with a restore
// marker (s rst/<table>); the marker goes in the batch that finishes the
// restore. A marker found at Open means the process died mid-restore: the
// table is dropped, so a restore is all or nothing. The caller's request
// did not succeed then, and may be retried.

// restoreSpec is one restore.
type restoreSpec struct {
	src     *schema.Table // the definition restored (keys, indexes, billing, TTL, stream)
	target  string
	summary wire.RestoreSummary
	// The overrides of the request.
	billing  string
	pt       *wire.ProvisionedThroughput
	gsi      []wire.GlobalSecondaryIndex // nil: the source's
	lsi      []wire.LocalSecondaryIndex  // nil: the source's
	sse      json.RawMessage
	onDemand json.RawMessage
	// items calls put with every item to restore.
	items func(put func(attr.Item) error) error
}

// restoreChunk is how many items one restore batch writes.
const restoreChunk = 100

// restore runs r for scope s and returns the new table's description and
// the write units it consumed.
func (e *Engine) restore(ctx context.Context, s tenancy.Scope, r restoreSpec) (*wire.TableDescription, float64, error) {
	in := restoreInput(r)
	t, err := e.buildTable(in)
	if err != nil {
		return nil, 0, err
	}
	resolve.ApplyRestoredIsolation(t, r.src)
	if err := e.res.MayCreate(s, r.target); err != nil {
		return nil, 0, err
	}
	if t, err = e.createRestored(ctx, s, t); err != nil {
		return nil, 0, err
	}
	h := &handle{Target: resolve.Target{Table: t, Namespace: resolve.Namespace(s), Scope: s}, vals: e.vals}
	if h.db, h.release, err = e.storeFor(ctx, s, t); err != nil {
		e.abandonRestore(t)
		return nil, 0, err
	}
	defer h.close()
	var units float64
	var chunk []*itemWrite
	flush := func() error {
		if len(chunk) == 0 {
			return nil
		}
		err := e.locked(chunk, nil, func() error { return e.commit(chunk, nil) })
		for _, w := range chunk {
			units += w.cost.total()
		}
		chunk = chunk[:0]
		return err
	}
	err = r.items(func(it attr.Item) error {
		if err := t.ValidateItemKeys(it); err != nil {
			return err
		}
		key := attr.Item{t.Hash.Name: it[t.Hash.Name]}
		if t.Range.Name != "" {
			key[t.Range.Name] = it[t.Range.Name]
		}
		w := newWrite(h, key)
		w.put, w.new = true, it
		if chunk = append(chunk, w); len(chunk) == restoreChunk {
			return flush()
		}
		return nil
	})
	if err == nil {
		err = flush()
	}
	if err != nil {
		e.abandonRestore(t)
		return nil, 0, err
	}
	c, err := e.finishRestore(t)
	if err != nil {
		e.abandonRestore(t)
		return nil, 0, err
	}
	tg := resolve.Target{Table: c, Namespace: h.Namespace, Scope: s}
	st, err := e.statsFor(ctx, tg)
	if err != nil {
		return nil, 0, err
	}
	d := e.describe(c, st)
	sum := r.summary
	d.RestoreSummary = &sum
	return d, units, nil
}

// restoreInput is the CreateTable request that makes r's table.
func restoreInput(r restoreSpec) *wire.CreateTableInput {
	src := r.src
	in := &wire.CreateTableInput{
		TableName:          r.target,
		KeySchema:          keySchema(src.Hash, src.Range),
		BillingMode:        src.BillingMode,
		TableClass:         src.TableClass,
		SSESpecification:   r.sse,
		OnDemandThroughput: r.onDemand,
	}
	if src.BillingMode == "PROVISIONED" {
		in.ProvisionedThroughput = &wire.ProvisionedThroughput{ReadCapacityUnits: i64(src.ReadCapacity), WriteCapacityUnits: i64(src.WriteCapacity)}
	}
	if r.billing != "" {
		in.BillingMode = r.billing
		if r.billing == "PAY_PER_REQUEST" {
			in.ProvisionedThroughput = nil
		}
	}
	if r.pt != nil {
		in.ProvisionedThroughput = r.pt
	}
	in.GlobalSecondaryIndexes, in.LocalSecondaryIndexes = r.gsi, r.lsi
	for _, ix := range src.Indexes {
		if ix.Status == "DELETING" {
			continue
		}
		ks := keySchema(ix.Hash, ix.Range)
		switch {
		case ix.Local && r.lsi == nil:
			in.LocalSecondaryIndexes = append(in.LocalSecondaryIndexes, wire.LocalSecondaryIndex{IndexName: ix.Name, KeySchema: ks, Projection: projectionOf(ix)})
		case !ix.Local && r.gsi == nil:
			g := wire.GlobalSecondaryIndex{IndexName: ix.Name, KeySchema: ks, Projection: projectionOf(ix)}
			if in.ProvisionedThroughput != nil {
				g.ProvisionedThroughput = &wire.ProvisionedThroughput{ReadCapacityUnits: i64(max(ix.ReadCapacity, 1)), WriteCapacityUnits: i64(max(ix.WriteCapacity, 1))}
			}
			in.GlobalSecondaryIndexes = append(in.GlobalSecondaryIndexes, g)
		}
	}
	if len(in.GlobalSecondaryIndexes) == 0 {
		in.GlobalSecondaryIndexes = nil // an empty override: no GSI
	}
	if len(in.LocalSecondaryIndexes) == 0 {
		in.LocalSecondaryIndexes = nil
	}
	// The attribute definitions the key schemas use (an override may drop
	// an index, and DynamoDB refuses unused definitions).
	used := map[string]bool{}
	for _, k := range in.KeySchema {
		used[k.AttributeName] = true
	}
	for _, g := range in.GlobalSecondaryIndexes {
		for _, k := range g.KeySchema {
			used[k.AttributeName] = true
		}
	}
	for _, l := range in.LocalSecondaryIndexes {
		for _, k := range l.KeySchema {
			used[k.AttributeName] = true
		}
	}
	for _, d := range src.AttrDefs {
		if used[d.AttributeName] {
			in.AttributeDefinitions = append(in.AttributeDefinitions, d)
		}
	}
	return in
}

func i64(n int64) *int64 { return &n }

// createRestored admits and persists t, a restore's new table, with its
// restore marker, and publishes it.
func (e *Engine) createRestored(ctx context.Context, s tenancy.Scope, t *schema.Table) (*schema.Table, error) {
	e.ddl.Lock()
	defer e.ddl.Unlock()
	if err := e.res.AdmitCreate(ctx, s, t); err != nil {
		if apierr.Is(err, apierr.ResourceInUse) {
			return nil, apierr.New(apierr.TableAlreadyExists, "Table already exists: %s", apierr.Clip(t.Name))
		}
		return nil, err
	}
	var err error
	if t.ID, err = e.nextTableID(); err != nil {
		return nil, err
	}
	t.Created = e.opts.Now()
	t.Status = "CREATING" // DescribeTable says so while the items load
	if t.BillingMode == "PAY_PER_REQUEST" {
		t.OnDemandSince = t.Created
	}
	for _, ix := range t.Indexes {
		ix.Created = t.Created
	}
	v, err := schema.Encode(t)
	if err != nil {
		return nil, err
	}
	b := e.db.NewBatch()
	defer b.Close()
	if err := saveTable(b, t); err != nil {
		return nil, err
	}
	b.Set(keyspace.RestoreOpen(t.ID), v)
	if err := e.db.Apply(b); err != nil {
		return nil, apierr.Wrap(apierr.Internal, err, "saving table definition")
	}
	e.res.Publish(t)
	return t, nil
}

// finishRestore makes the restored table t ACTIVE and ends its restore,
// in one batch.
func (e *Engine) finishRestore(t *schema.Table) (*schema.Table, error) {
	e.ddl.Lock()
	defer e.ddl.Unlock()
	cur, err := e.res.Current(t)
	if err != nil {
		return nil, err
	}
	c := cur.Clone()
	c.Status = "ACTIVE"
	b := e.db.NewBatch()
	defer b.Close()
	if err := saveTable(b, c); err != nil {
		return nil, err
	}
	b.Delete(keyspace.RestoreOpen(c.ID))
	if err := e.db.Apply(b); err != nil {
		return nil, apierr.Wrap(apierr.Internal, err, "saving table definition")
	}
	e.res.Publish(c)
	e.locks.barrier() // NB: writers see the ACTIVE definition from now on
	return c, nil
}

// abandonRestore drops the restored table t after a failed restore.
func (e *Engine) abandonRestore(t *schema.Table) {
	e.ddl.Lock()
	defer e.ddl.Unlock()
	rec := dropRecord{Table: t.ID, Isolate: t.Isolation}
	v, err := json.Marshal(rec)
	if err == nil {
		b := e.db.NewBatch()
		b.Delete(tableDefKey(t))
		b.Delete(keyspace.RestoreOpen(t.ID))
		b.Set(dropKey(t.ID, 0), v)
		err = e.db.Apply(b)
		b.Close()
	}
	if err != nil {
		e.log.Error("engine: abandoning a restore", "table", t.Name, "err", err)
		return
	}
	e.res.Unpublish(t)
	e.locks.barrier()
	if err := e.drop(rec); err != nil {
		e.log.Error("engine: dropping an abandoned restore", "table", t.Name, "err", err)
	}
}

// abortRestores turns every restore the process died in into a pending
// drop of its table (runDrops then removes the data). REQUIRES: before
// the resolver loads definitions.
func (e *Engine) abortRestores() error {
	lo, hi := keyspace.RestoresOpen()
	it := e.db.NewIter(lo, hi)
	b := e.db.NewBatch()
	defer b.Close()
	for ok := it.First(); ok; ok = it.Next() {
		t, err := schema.Decode(it.Value())
		if err != nil {
			it.Close()
			return err
		}
		v, err := json.Marshal(dropRecord{Table: t.ID, Isolate: t.Isolation})
		if err != nil {
			it.Close()
			return apierr.Wrap(apierr.Internal, err, "encoding drop record")
		}
		b.Delete(tableDefKey(t))
		b.Delete(it.Key())
		b.Set(dropKey(t.ID, 0), v)
	}
	if err := it.Close(); err != nil {
		return apierr.Wrap(apierr.Internal, err, "listing restores")
	}
	if b.Len() == 0 {
		return nil
	}
	if err := e.db.Apply(b); err != nil {
		return apierr.Wrap(apierr.Internal, err, "aborting restores")
	}
	return nil
}
