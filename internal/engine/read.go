package engine

import (
	"bytes"
	"context"
	"fmt"
	"strings"

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

// selectMode is a resolved Select.
type selectMode uint8

const (
	selectAll       selectMode = iota // ALL_ATTRIBUTES
	selectProjected                   // ALL_PROJECTED_ATTRIBUTES
	selectSpecific                    // SPECIFIC_ATTRIBUTES
	selectCount                       // COUNT
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
		entry, err := attr.DecodeItem(it.Value())
		if err != nil {
			return nil, apierr.Wrap(apierr.Internal, err, "decoding item")
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
	v, err := snap.Get(itemKey(r.h.Table, r.h.Namespace, r.h.Table.KeyOf(entry)))
	if err == storage.ErrNotFound {
		return nil, nil
	}
	if err != nil {
		return nil, apierr.Wrap(apierr.Internal, err, "reading item")
	}
	it, err := attr.DecodeItem(v)
	if err != nil {
		return nil, apierr.Wrap(apierr.Internal, err, "decoding item")
	}
	return it, nil
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
type readCommon struct {
	ix             *schema.Index
	selectParam    string
	consistent     *bool
	limit          *int32
	capacity       string
	filterNames    []string // top-level attributes the filter reads, if known
	filterNamesOK  bool     // the projection rules apply: the legacy filters
	hasFilter      bool
	filterParam    string // "Filter Expression" or "QueryFilter", for messages
	proj           expr.Projection
	projParam      string // "ProjectionExpression", "AttributesToGet" or ""
	queryKeyFilter bool   // Query: the filter must not name the index's key attributes
}

// resolve validates the parameters Query and Scan share and fills in the
// spec's select mode, limit, consistency and capacity mode.
func (c *readCommon) resolve(h *handle, r *readSpec) error {
	t, ix := h.Table, c.ix
	if c.limit != nil && *c.limit < 1 {
		return apierr.Validationf("1 validation error detected: Value '%d' at 'limit' failed to satisfy constraint: Member must have value greater than or equal to 1", *c.limit)
	}
	if c.limit != nil {
		r.limit = int(*c.limit)
	}
	switch c.capacity {
	case "", "NONE", "TOTAL", "INDEXES":
		r.capacityMode = c.capacity
	default:
		return apierr.Validationf("1 validation error detected: Value '%s' at 'returnConsumedCapacity' failed to satisfy constraint: Member must satisfy enum value set: [INDEXES, TOTAL, NONE]", c.capacity)
	}
	if c.consistent != nil && *c.consistent {
		if ix != nil && !ix.Local {
			return apierr.Validationf("Consistent reads are not supported on global secondary indexes")
		}
		r.consistent = true
	}

	hasProj := c.proj != nil
	sel := c.selectParam
	if sel == "" {
		switch {
		case hasProj:
			sel = "SPECIFIC_ATTRIBUTES"
		case ix != nil:
			sel = "ALL_PROJECTED_ATTRIBUTES"
		default:
			sel = "ALL_ATTRIBUTES"
		}
	}
	switch sel {
	case "COUNT":
		if hasProj {
			return apierr.Validationf("Cannot specify the %s when choosing to get only the Count", c.projParam)
		}
		r.sel = selectCount
	case "ALL_ATTRIBUTES":
		if hasProj {
			return apierr.Validationf("Cannot specify the %s when choosing to get ALL_ATTRIBUTES", c.projParam)
		}
		if ix != nil && !ix.Local && ix.ProjectionType != "ALL" {
			return apierr.Validationf("One or more parameter values were invalid: Select type ALL_ATTRIBUTES is not supported for global secondary index %s because its projection type is not ALL", ix.Name)
		}
		r.sel = selectAll
	case "ALL_PROJECTED_ATTRIBUTES":
		if ix == nil {
			return apierr.Validationf("ALL_PROJECTED_ATTRIBUTES can be used only when Querying using an IndexName")
		}
		if hasProj {
			return apierr.Validationf("Cannot specify the %s when choosing to get ALL_PROJECTED_ATTRIBUTES", c.projParam)
		}
		r.sel = selectProjected
	case "SPECIFIC_ATTRIBUTES":
		if !hasProj {
			return apierr.Validationf("Must specify the AttributesToGet or ProjectionExpression when choosing to get SPECIFIC_ATTRIBUTES")
		}
		r.sel = selectSpecific
	default:
		return apierr.Validationf("1 validation error detected: Value '%s' at 'select' failed to satisfy constraint: Member must satisfy enum value set: [SPECIFIC_ATTRIBUTES, COUNT, ALL_ATTRIBUTES, ALL_PROJECTED_ATTRIBUTES]", sel)
	}
	r.proj = c.proj

	if c.queryKeyFilter { // filterNames: those known, all of them if filterNamesOK
		keys := []schema.KeyAttr{t.Hash, t.Range}
		if ix != nil {
			keys = []schema.KeyAttr{ix.Hash, ix.Range}
		}
		for _, k := range keys {
			for _, n := range c.filterNames {
				if k.Name != "" && n == k.Name {
					return apierr.Validationf("%s can only contain non-primary key attributes: Primary key attribute: %s", c.filterParam, n)
				}
			}
		}
	}

	if ix == nil || ix.ProjectionType == "ALL" {
		return nil
	}
	// A non-ALL index: which attributes must come from the base item?
	var missing []string
	if r.sel == selectSpecific {
		missing = unprojected(t, ix, c.proj.TopNames())
	}
	var filterMissing []string
	if c.hasFilter && c.filterNamesOK {
		filterMissing = unprojected(t, ix, c.filterNames)
	}
	if !ix.Local {
		if len(missing) > 0 {
			return apierr.Validationf("One or more parameter values were invalid: Global secondary index %s does not project [%s]", ix.Name, strings.Join(missing, ", "))
		}
		if len(filterMissing) > 0 {
			return apierr.Validationf("One or more parameter values were invalid: Secondary index %s does not project one or more filter attributes: [%s]", ix.Name, strings.Join(filterMissing, ", "))
		}
		return nil
	}
	r.fetchBase = r.sel == selectAll || len(missing) > 0 || len(filterMissing) > 0 ||
		(c.hasFilter && !c.filterNamesOK)
	return nil
}

// unprojected returns the names that index ix does not hold.
func unprojected(t *schema.Table, ix *schema.Index, names []string) []string {
	var out []string
	for _, n := range names {
		if !t.Projects(ix, n) {
			out = append(out, n)
		}
	}
	return out
}

func errStartKey(format string, args ...any) error {
	return apierr.Validationf("The provided starting key is invalid: %s", fmt.Sprintf(format, args...))
}
