package engine

import (
	"bytes"
	"context"
	"fmt"
	"github.com/tenantdb/tenantdb/internal/readreq"

	"github.com/tenantdb/tenantdb/internal/apierr"
	"github.com/tenantdb/tenantdb/internal/attr"
	"github.com/tenantdb/tenantdb/internal/expr"
	"github.com/tenantdb/tenantdb/internal/keyspace"
	"github.com/tenantdb/tenantdb/internal/schema"
	"github.com/tenantdb/tenantdb/internal/storage"
	"github.com/tenantdb/tenantdb/internal/wire"
)

// maxPageBytes is DynamoDB's page size: a Query or Scan stops once the data
// it has read reaches 1 MB and returns a LastEvaluatedKey.
const maxPageBytes = 1 << 20

// selectMode is a resolved Select (package readreq's rules).
type selectMode = readreq.Select

const (
	selectAll       = readreq.All       // ALL_ATTRIBUTES
	selectProjected = readreq.Projected // ALL_PROJECTED_ATTRIBUTES
	selectSpecific  = readreq.Specific  // SPECIFIC_ATTRIBUTES
	selectCount     = readreq.Count     // COUNT
)

// readSpec is one Query or Scan page, validated and resolved to a physical
// key span inside the handle's namespace.
type readSpec struct {
	h  *handle
	ix *schema.Index // nil: the base table
	// span is where the page reads. NB: it is always derived from the
	// handle's namespace and the table's (index's) prefix, and narrowed only
	// by clamping (keySpan.after/before), so nothing a request carries can
	// move it into another tenant's or table's range.
	span    keySpan
	forward bool
	limit   int // 0: none

	filter expr.Condition // nil: none
	proj   expr.Projection
	sel    selectMode
	// fetchBase reads each base item of an LSI entry: for attributes the
	// index does not project (Select ALL_ATTRIBUTES, a projection or a
	// filter naming them), as DynamoDB does.
	fetchBase bool

	consistent   bool
	capacityMode string // ReturnConsumedCapacity
}

// readResult is what reading one page found.
type readResult struct {
	items      []attr.Item
	count      int
	scanned    int
	last       attr.Item // key of the last evaluated item, if the page was cut short
	indexBytes int       // bytes of index entries read (0 for table reads)
	tableBytes int       // bytes of table items read (table reads and LSI fetches)
	tableUnits float64   // capacity of the table reads
}

// run reads one page.
func (r *readSpec) run(ctx context.Context) (*readResult, error) {
	res := &readResult{}
	if r.sel != selectCount {
		res.items = []attr.Item{}
	}
	if r.span.empty() {
		return res, nil
	}
	if !r.inNamespace() {
		return nil, apierr.New(apierr.Internal, "read span outside the scope's namespace")
	}
	// NB: one iterator is a consistent point-in-time view of the store; a
	// snapshot is needed only when the page also reads base items.
	var (
		it   *storage.Iter
		snap *storage.Snapshot
	)
	if r.fetchBase {
		snap = r.h.db.NewSnapshot()
		defer snap.Close()
		it = snap.NewIter(r.span.lo, r.span.hi)
	} else {
		it = r.h.db.NewIter(r.span.lo, r.span.hi)
	}
	defer it.Close()

	var ok bool
	if r.forward {
		ok = it.First()
	} else {
		ok = it.Last()
	}
	for ; ok; ok = r.step(it) {
		if res.scanned&255 == 255 {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
		}
		entry, err := r.h.vals.decode(it.Key(), it.Value())
		if err != nil {
			return nil, err
		}
		res.scanned++
		size := attr.ItemSize(entry)
		if r.ix != nil {
			res.indexBytes += size
		} else {
			res.tableBytes += size
		}
		full := entry
		if r.fetchBase {
			full, err = r.base(snap, entry)
			if err != nil {
				return nil, err
			}
			if full != nil {
				n := attr.ItemSize(full)
				res.tableBytes += n
				res.tableUnits += readUnits(n, r.consistent)
			}
		}
		if full != nil && r.match(full) {
			res.count++
			if r.sel != selectCount {
				res.items = append(res.items, r.output(entry, full))
			}
		}
		if (r.limit > 0 && res.scanned >= r.limit) || res.indexBytes+res.tableBytes >= maxPageBytes {
			// NB: as DynamoDB, a page that stops at Limit or at 1 MB returns
			// a LastEvaluatedKey without looking ahead.
			res.last = pageKey(r.h.Table, r.ix, entry)
			break
		}
	}
	if err := it.Error(); err != nil {
		return nil, apierr.Wrap(apierr.Internal, err, "reading items")
	}
	if r.ix == nil {
		res.tableUnits = readUnits(res.tableBytes, r.consistent)
	}
	return res, nil
}

// inNamespace reports whether the span lies inside the handle's namespace.
// NB: it holds by construction (see readSpec.span); checking it costs two
// comparisons and turns a future bug into an error instead of a leak.
func (r *readSpec) inNamespace() bool {
	ns := r.h.Namespace
	return bytes.HasPrefix(r.span.lo, ns) && bytes.Compare(r.span.hi, keyspace.PrefixEnd(ns)) <= 0
}

func (r *readSpec) step(it *storage.Iter) bool {
	if r.forward {
		return it.Next()
	}
	return it.Prev()
}

// base reads the table item of an LSI entry from the page's snapshot. A
// missing item (nil) cannot happen while entries and items are written in
// one batch; it is skipped.
func (r *readSpec) base(snap *storage.Snapshot, entry attr.Item) (attr.Item, error) {
	pk := itemKey(r.h.Table, r.h.Namespace, r.h.Table.KeyOf(entry))
	v, err := snap.Get(pk)
	if err == storage.ErrNotFound {
		return nil, nil
	}
	if err != nil {
		return nil, apierr.Wrap(apierr.Internal, err, "reading item")
	}
	return r.h.vals.decode(pk, v)
}

// match applies the filter. An evaluation error (rare: most are found when
// compiling) drops the item, as a filter that cannot be evaluated on an
// item does not match it.
func (r *readSpec) match(item attr.Item) bool {
	if r.filter == nil {
		return true
	}
	ok, err := r.filter.Eval(item)
	return err == nil && ok
}

// output returns what the page returns for an item: entry is what the
// table or index holds, full the base item when it was fetched (else entry).
func (r *readSpec) output(entry, full attr.Item) attr.Item {
	switch r.sel {
	case selectProjected:
		return entry
	case selectSpecific:
		return r.proj.Apply(full)
	}
	return full
}

// pageKey returns the LastEvaluatedKey of a page that ended at item (a table
// item or an index entry, which always holds the table's and the index's key
// attributes): exactly DynamoDB's shape, the table's key attributes plus,
// for index reads, the index's.
// NB: it is built only from the item itself, never from the request.
func pageKey(t *schema.Table, ix *schema.Index, item attr.Item) attr.Item {
	k := make(attr.Item, 4)
	for _, name := range pageKeyAttrs(t, ix) {
		if v, ok := item[name.Name]; ok {
			k[name.Name] = v
		}
	}
	return k
}

// pageKeyAttrs returns the distinct key attributes of a page token for
// reads of ix (nil: the table).
func pageKeyAttrs(t *schema.Table, ix *schema.Index) []schema.KeyAttr {
	out := make([]schema.KeyAttr, 0, 4)
	add := func(k schema.KeyAttr) {
		if k.Name == "" {
			return
		}
		for _, o := range out {
			if o.Name == k.Name {
				return
			}
		}
		out = append(out, k)
	}
	add(t.Hash)
	add(t.Range)
	if ix != nil {
		add(ix.Hash)
		add(ix.Range)
	}
	return out
}

// response builds the wire response of a page.
func (r *readSpec) response(res *readResult) *wire.QueryOutput {
	out := &wire.QueryOutput{
		Count:            res.count,
		ScannedCount:     res.scanned,
		LastEvaluatedKey: res.last,
	}
	if r.sel != selectCount {
		out.Items = res.items
	}
	var indexUnits float64
	total := res.tableUnits
	if r.ix != nil {
		indexUnits = readUnits(res.indexBytes, r.consistent)
		total += indexUnits
	}
	name := r.h.Table.Name
	out.U = wire.Usage{ReadUnits: total, Table: name}
	switch r.capacityMode {
	case "TOTAL":
		out.ConsumedCapacity = &wire.ConsumedCapacity{TableName: name, CapacityUnits: total}
	case "INDEXES":
		cc := &wire.ConsumedCapacity{TableName: name, CapacityUnits: total, Table: &wire.Capacity{CapacityUnits: res.tableUnits}}
		if r.ix != nil {
			m := map[string]wire.Capacity{r.ix.Name: {CapacityUnits: indexUnits}}
			if r.ix.Local {
				cc.LocalSecondaryIndexes = m
			} else {
				cc.GlobalSecondaryIndexes = m
			}
		}
		out.ConsumedCapacity = cc
	}
	return out
}

// readIndex resolves a Query or Scan IndexName: nil for the
// table, else an index that can serve reads.
func readIndex(t *schema.Table, name *string) (*schema.Index, error) {
	if name == nil {
		return nil, nil
	}
	return t.ReadableIndex(*name)
}

// readCommon holds the parameters Query and Scan share.
type readCommon = readreq.Params

// resolveCommon validates the parameters Query and Scan share (package
// readreq, every backend's rules) and fills in the spec's select mode,
// limit, consistency and capacity mode.
func resolveCommon(h *handle, c readCommon, r *readSpec) error {
	rules, err := readreq.Check(h.Table, c)
	if err != nil {
		return err
	}
	r.limit, r.capacityMode, r.consistent = rules.Limit, rules.CapacityMode, rules.Consistent
	r.sel, r.proj, r.fetchBase = rules.Select, c.Proj, rules.FetchBase
	return nil
}

func errStartKey(format string, args ...any) error {
	return apierr.Validationf("The provided starting key is invalid: %s", fmt.Sprintf(format, args...))
}
