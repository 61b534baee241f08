package remote

import (
	"bytes"
	"context"
	"encoding/binary"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/tenantdb/tenantdb/internal/apierr"
	"github.com/tenantdb/tenantdb/internal/attr"
	"github.com/tenantdb/tenantdb/internal/engine"
	"github.com/tenantdb/tenantdb/internal/resolve"
	"github.com/tenantdb/tenantdb/internal/tenancy"
)

// Exports and imports on a gateway (see DESIGN.md, "Exports and
// imports"). The operations are served by package transfer, installed
// by the node (SetTransfers), as on the embedded engine: an import
// writes through the server's operation handler with the caller's
// Scope, and an export reads the caller's collections with ExportView,
// strongly consistent Query pages of every engine partition of each
// (all shards; the pages a backup copy reads, readPageN and
// shardOrder) — not one snapshot: a write made while the export runs
// may or may not be in it, as for backups.

// Transfers serves the export and import operations (the backend's
// embedded engine.TransferOps runs them).
type Transfers = engine.Transfers

// TableKeys returns the names of the key attributes (partition key, then
// sort key if any) of table name as scope s resolves it for data access.
func (b *Backend) TableKeys(ctx context.Context, s tenancy.Scope, name string) ([]string, error) {
	if err := check(ctx, s); err != nil {
		return nil, err
	}
	tg, err := b.res.Open(ctx, s, name)
	if err != nil {
		return nil, err
	}
	return tg.Table.KeyNames(), nil
}

// ExportView is what an export reads of some of a scope's tables: the
// scope's collection of each, resolved as a Scan resolves it.
type ExportView struct {
	b   *Backend
	tgs []resolve.Target
	// Units adds up the engine's read units the view consumed.
	Units float64
}

// ExportView resolves the tables named (all tables the scope sees when
// names is empty). Errors: those of Scan's table resolution
// (ResourceNotFound, AccessDenied).
func (b *Backend) ExportView(ctx context.Context, s tenancy.Scope, names []string) (*ExportView, error) {
	if err := check(ctx, s); err != nil {
		return nil, err
	}
	if len(names) == 0 {
		if s.Tenant().IsZero() {
			return nil, apierr.New(apierr.AccessDenied, "The operator credential has no access to table data; use a tenant credential")
		}
		var err error
		if names, err = b.res.Visible(ctx, s); err != nil {
			return nil, err
		}
	}
	v := &ExportView{b: b}
	for _, name := range names {
		tg, err := b.res.Open(ctx, s, name)
		if err != nil {
			return nil, err
		}
		v.tgs = append(v.tgs, tg)
	}
	return v, nil
}

// Tables returns the names of the view's tables, in the order named.
func (v *ExportView) Tables() []string {
	out := make([]string, len(v.tgs))
	for i, tg := range v.tgs {
		out[i] = tg.Table.Name
	}
	return out
}

// Items calls fn with every item of table i's collection: each engine
// partition (shard) read with strongly consistent Query pages. During a
// change of the shard count the shards items leave are read first and an
// item met twice is given once (its logical sort key is the same in
// every shard); if the shard count changes while the items are read, an
// item may have been missed, and Items fails saying so.
func (v *ExportView) Items(ctx context.Context, i int, fn func(attr.Item) error) error {
	b, tg := v.b, v.tgs[i]
	lay, err := b.layoutOf(ctx, tg.Namespace, tg.Table.ID)
	if err != nil {
		return err
	}
	p := placeOf(tg, lay)
	order := shardOrder(p)
	var seen map[string]bool
	if lay.moving() {
		seen = map[string]bool{}
	}
	for pos := 0; pos < len(order)/2; pos++ {
		part := p.part(int(binary.BigEndian.Uint16(order[2*pos:])))
		var after []byte
		for {
			raws, last, err := b.readPageN(ctx, b.table, part, after, 0, &v.Units)
			if err != nil {
				return err
			}
			for _, raw := range raws {
				if seen != nil {
					sk, _ := raw[attrSK].(*types.AttributeValueMemberB)
					if sk == nil || seen[string(sk.Value)] {
						continue
					}
					seen[string(sk.Value)] = true
				}
				item := strip(raw)
				if item == nil {
					continue
				}
				if err := fn(item); err != nil {
					return err
				}
			}
			if last == nil {
				break
			}
			after = last
		}
	}
	now, err := b.layoutOf(ctx, tg.Namespace, tg.Table.ID)
	if err != nil {
		return err
	}
	if !bytes.Equal(layKey(now), layKey(lay)) {
		return apierr.New(apierr.Internal, "table %s's shard count changed while it was exported; run the export again", apierr.Clip(tg.Table.Name))
	}
	return nil
}

// ItemsAt refuses (PastExport says why).
func (v *ExportView) ItemsAt(_ context.Context, i int, at time.Time, _ func(attr.Item) error) error {
	return errPastExport(v.tgs[i].Table.Name, at)
}

// Close releases nothing: the view holds no engine resource.
func (v *ExportView) Close() error { return nil }

// PastExport answers whether table can be exported as of the past time
// at: not on a gateway (InvalidExportTime). The engine keeps no change
// log a gateway could undo; a table's point-in-time recovery (pitr.go)
// restores a whole engine table into a scratch table, which exports do
// not do yet.
func (b *Backend) PastExport(_ context.Context, _ tenancy.Scope, table string, at time.Time) error {
	return errPastExport(table, at)
}

func errPastExport(table string, at time.Time) error {
	return apierr.New(apierr.InvalidExportTime, "ExportTime %s is in the past: a gateway exports only the current items of table %s (it keeps no change log to read a past state from; restore the table to that time with RestoreTableToPointInTime and export the restored table)",
		at.UTC().Format(time.RFC3339), apierr.Clip(table))
}
