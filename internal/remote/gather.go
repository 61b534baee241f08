package remote

import (
	"bytes"
	"context"
	"slices"
	"strings"
	"sync"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/tenantdb/tenantdb/internal/attr"
	"github.com/tenantdb/tenantdb/internal/readreq"
	"github.com/tenantdb/tenantdb/internal/wire"
)

// A read of several partitions (a Scan or an index query of a sharded
// collection, or any read of a collection being resharded) is gathered
// by the gateway: every partition is queried in parallel for the same
// sort-key range, and the answers are merged by the physical sort key —
// the logical key on the table, the index key and then the entry tag on
// an index (layout.go) — which is one total order in every shard and in
// both layouts of a move. So a page is the first Limit items of the merge,
// the page token stays the logical key of the last item evaluated, and
// the next page resumes after its position in every partition: the token
// names no shard, and a client can only bound the reads of its own
// partitions (the token is validated as on one partition).
//
// The engine evaluates no filter, projection or COUNT here: Limit bounds
// the items evaluated, as in DynamoDB, and only the merge knows which ones
// those are; the gateway filters, projects and counts them (as for a
// filter on a GSI that does not project everything).

// gatherReq is what a gathered read needs of the client's request.
type gatherReq struct {
	forward    bool
	limit      *int32
	consistent *bool
	table      string // the logical table's name
	want       string // ReturnConsumedCapacity
	project    bool   // cut items down to the index's projection
	ex         *readreq.Exprs
	count      bool // Select COUNT
}

// maxPage is DynamoDB's bound on the data one Query or Scan page reads.
const maxPage = 1 << 20

// partAnswer is one partition's answer.
type partAnswer struct {
	items []map[string]types.AttributeValue
	more  bool // the partition has items after its last one
	units float64
	err   error
}

// gather reads parts (the partitions of c) within the inclusive sort-key
// bounds lo and hi (nil: unbounded), after the client's page token esk.
func (b *Backend) gather(ctx context.Context, c coll, parts []string, lo, hi []byte, esk attr.Item, r gatherReq) (*wire.QueryOutput, error) {
	_, pos, err := c.startKey(esk, parts[0])
	if err != nil {
		return nil, err
	}
	if pos != nil {
		if r.forward {
			if after := append(slices.Clone(pos), 0); lo == nil || bytes.Compare(after, lo) > 0 {
				lo = after
			}
		} else if before := pred(pos); hi == nil || bytes.Compare(before, hi) < 0 {
			hi = before
		}
	}
	out := &wire.QueryOutput{}
	if lo != nil && hi != nil && bytes.Compare(lo, hi) > 0 {
		return out, nil // nothing after the token in the range
	}
	// During a move the partitions items move out of are read first, then
	// the others (move.go): an item moved in between is read twice (and
	// kept once), never missed. The others come first in answers, so that
	// the copy kept is the moved one.
	srcs := c.p.sources()
	parts = slices.Clone(parts)
	slices.SortStableFunc(parts, func(x, y string) int {
		return boolInt(srcs[c.shardOfPart(x)]) - boolInt(srcs[c.shardOfPart(y)])
	})
	answers := make([]partAnswer, len(parts))
	read := func(src bool) {
		var wg sync.WaitGroup
		for i, part := range parts {
			if srcs[c.shardOfPart(part)] != src {
				continue
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				answers[i] = b.readPart(ctx, c, part, lo, hi, r)
			}()
		}
		wg.Wait()
	}
	read(true)
	read(false)
	var total float64
	for _, a := range answers {
		if a.err != nil {
			return nil, a.err
		}
		total += a.units
	}
	// Only items up to the nearest partition frontier are known to be
	// every item in that stretch of the order.
	before := func(x, y []byte) bool { // x comes before y in the read's order
		if r.forward {
			return bytes.Compare(x, y) < 0
		}
		return bytes.Compare(x, y) > 0
	}
	var bound []byte
	more := false
	for _, a := range answers {
		if a.more && len(a.items) > 0 {
			more = true
			if p := c.pos(a.items[len(a.items)-1]); bound == nil || before(p, bound) {
				bound = p
			}
		}
	}
	type entry struct {
		pos  []byte
		item map[string]types.AttributeValue
	}
	var all []entry
	for _, a := range answers {
		for _, it := range a.items {
			p := c.pos(it)
			if bound != nil && before(bound, p) {
				continue
			}
			all = append(all, entry{p, it})
		}
	}
	slices.SortStableFunc(all, func(x, y entry) int {
		if r.forward {
			return bytes.Compare(x.pos, y.pos)
		}
		return bytes.Compare(y.pos, x.pos)
	})
	// NB: during a move an item read in its old shard may be read again
	// in its new one (old is read first; an item only moves from old to
	// new): the same position twice is one item.
	all = slices.CompactFunc(all, func(x, y entry) bool { return bytes.Equal(x.pos, y.pos) })
	t := c.p.tg.Table
	gwFilter := c.ix != nil && !c.ix.Local && c.ix.ProjectionType != "ALL"
	size := 0
	for _, e := range all {
		if (r.limit != nil && out.ScannedCount >= int(*r.limit)) || size >= maxPage {
			more = true // items of the merge are left for the next page
			break
		}
		lek, err := c.lastKey(e.item) // before strip removes the physical key
		if err != nil {
			return nil, err
		}
		item := strip(e.item)
		out.LastEvaluatedKey = lek
		out.ScannedCount++
		size += attr.ItemSize(item)
		if r.project || gwFilter {
			for n := range item {
				if !t.Projects(c.ix, n) {
					delete(item, n)
				}
			}
		}
		if r.ex.Filter != nil {
			ok, err := r.ex.Filter.Eval(item)
			if err != nil {
				return nil, err
			}
			if !ok {
				continue
			}
		}
		out.Count++
		if r.count {
			continue
		}
		if r.ex.Proj != nil {
			item = r.ex.Proj.Apply(item)
		}
		out.Items = append(out.Items, item)
	}
	// As DynamoDB, a page that reached Limit has a token even if nothing
	// follows.
	if !more && (r.limit == nil || out.ScannedCount < int(*r.limit)) {
		out.LastEvaluatedKey = nil
	}
	out.ConsumedCapacity = capacity(&types.ConsumedCapacity{CapacityUnits: aws.Float64(total)}, r.table, r.want)
	out.U = wire.Usage{ReadUnits: total, Table: r.table}
	return out, nil
}

// pos is an engine item's position in c's order: its physical sort key
// in c (the entry's, on an index).
func (c coll) pos(it map[string]types.AttributeValue) []byte {
	b, _ := it[c.skAttr].(*types.AttributeValueMemberB)
	if b == nil {
		return nil
	}
	return b.Value
}

// readPart reads one partition's first page of the range.
func (b *Backend) readPart(ctx context.Context, c coll, part string, lo, hi []byte, r gatherReq) partAnswer {
	names, values := map[string]string{}, map[string]types.AttributeValue{}
	cond := c.keyCond(part, lo, hi, names, values)
	res, err := b.db.Query(ctx, &dynamodb.QueryInput{
		TableName:                 &b.table,
		IndexName:                 str(&c.index),
		KeyConditionExpression:    &cond,
		ExpressionAttributeNames:  names,
		ExpressionAttributeValues: values,
		Limit:                     r.limit,
		ConsistentRead:            r.consistent,
		ScanIndexForward:          aws.Bool(r.forward),
		ReturnConsumedCapacity:    types.ReturnConsumedCapacityTotal,
	})
	if err != nil {
		return partAnswer{err: engineErr(err, strip)}
	}
	return partAnswer{items: res.Items, more: len(res.LastEvaluatedKey) > 0, units: units(res.ConsumedCapacity)}
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// shardOfPart returns the shard partition key of one of c's partitions.
func (c coll) shardOfPart(part string) string {
	if c.ix == nil {
		return part
	}
	return part[:strings.LastIndexByte(part, '#')]
}
