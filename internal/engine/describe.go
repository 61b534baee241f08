package engine

import (
	"context"

	"github.com/tenantdb/tenantdb/internal/apierr"
	"github.com/tenantdb/tenantdb/internal/keyspace"
	"github.com/tenantdb/tenantdb/internal/resolve"
	"github.com/tenantdb/tenantdb/internal/schema"
	"github.com/tenantdb/tenantdb/internal/wire"
)

// tableStats are one namespace's counters of a table and its indexes.
type tableStats map[uint16][2]int64 // index no (0 = table) -> {items, bytes}

// statsFor reads the counters of table tg.Table in tg's namespace: the
// resolving scope's own. The operator, which must never learn anything
// about tenant data, gets none.
func (e *Engine) statsFor(ctx context.Context, tg resolve.Target) (tableStats, error) {
	st := tableStats{}
	if tg.Scope.Tenant().IsZero() {
		return st, nil
	}
	t, ns := tg.Table, tg.Namespace
	db, release, err := e.storeFor(ctx, tg.Scope, t)
	if err != nil {
		return nil, err
	}
	defer release()
	nos := []uint16{0}
	for _, ix := range t.Indexes {
		nos = append(nos, ix.No)
	}
	for _, no := range nos {
		n, err := db.Counter(keyspace.Counter(ns, t.ID, no, counterItems))
		if err != nil {
			return nil, apierr.Wrap(apierr.Internal, err, "reading item count")
		}
		b, err := db.Counter(keyspace.Counter(ns, t.ID, no, counterBytes))
		if err != nil {
			return nil, apierr.Wrap(apierr.Internal, err, "reading table size")
		}
		st[no] = [2]int64{max(n, 0), max(b, 0)}
	}
	return st, nil
}

// tableARN returns the ARN of a table.
func (e *Engine) tableARN(name string) string { return e.res.TableARN(name) }

func keySchema(h, r schema.KeyAttr) []wire.KeySchemaElement {
	ks := []wire.KeySchemaElement{{AttributeName: h.Name, KeyType: "HASH"}}
	if r.Name != "" {
		ks = append(ks, wire.KeySchemaElement{AttributeName: r.Name, KeyType: "RANGE"})
	}
	return ks
}

func throughput(rcu, wcu int64) *wire.ProvisionedThroughputDescription {
	return &wire.ProvisionedThroughputDescription{ReadCapacityUnits: rcu, WriteCapacityUnits: wcu}
}

func projectionOf(ix *schema.Index) *wire.Projection {
	p := &wire.Projection{ProjectionType: ix.ProjectionType}
	if ix.ProjectionType == "INCLUDE" {
		p.NonKeyAttributes = append([]string(nil), ix.NonKey...)
	}
	return p
}

func epoch(t interface{ UnixNano() int64 }) float64 { return float64(t.UnixNano()/1e6) / 1e3 }

// describe returns t's description with the statistics st (nil: zeros).
func (e *Engine) describe(t *schema.Table, st tableStats) *wire.TableDescription {
	arn := e.tableARN(t.Name)
	d := &wire.TableDescription{
		AttributeDefinitions:      append([]wire.AttributeDefinition(nil), t.AttrDefs...),
		TableName:                 t.Name,
		KeySchema:                 keySchema(t.Hash, t.Range),
		TableStatus:               t.Status,
		CreationDateTime:          epoch(t.Created),
		ProvisionedThroughput:     throughput(t.ReadCapacity, t.WriteCapacity),
		TableSizeBytes:            st[0][1],
		SSEDescription:            e.sseDescription(),
		ItemCount:                 st[0][0],
		TableArn:                  arn,
		TableId:                   t.UUID,
		BillingModeSummary:        t.BillingSummary(),
		DeletionProtectionEnabled: t.DeletionProtection,
	}
	if t.TableClass != "" {
		d.TableClassSummary = &wire.TableClassSummary{TableClass: t.TableClass}
	}
	// NB: no StreamSpecification or LatestStreamArn, even for a table an
	// earlier version stored with a stream, unless Options.Streams: only
	// then are there change log streams to name.
	if e.opts.Streams {
		e.describeStream(t, d)
	}
	for _, ix := range t.Indexes {
		c := st[ix.No]
		if ix.Local {
			d.LocalSecondaryIndexes = append(d.LocalSecondaryIndexes, wire.LocalSecondaryIndexDescription{
				IndexName:      ix.Name,
				KeySchema:      keySchema(ix.Hash, ix.Range),
				Projection:     projectionOf(ix),
				IndexSizeBytes: c[1],
				ItemCount:      c[0],
				IndexArn:       arn + "/index/" + ix.Name,
			})
			continue
		}
		gd := wire.GlobalSecondaryIndexDescription{
			IndexName:             ix.Name,
			KeySchema:             keySchema(ix.Hash, ix.Range),
			Projection:            projectionOf(ix),
			IndexStatus:           ix.Status,
			ProvisionedThroughput: throughput(ix.ReadCapacity, ix.WriteCapacity),
			IndexSizeBytes:        c[1],
			ItemCount:             c[0],
			IndexArn:              arn + "/index/" + ix.Name,
		}
		if ix.Status == "CREATING" {
			bf := ix.Backfilling
			gd.Backfilling = &bf
		}
		d.GlobalSecondaryIndexes = append(d.GlobalSecondaryIndexes, gd)
	}
	return d
}
