package remote

import (
	"context"
	"strconv"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/tenantdb/tenantdb/internal/apierr"
	"github.com/tenantdb/tenantdb/internal/attr"
)

// Shards (see DESIGN.md, "Shards"). A collection — a logical table's
// items of one tenant environment — spreads over n partition keys of the
// engine, base "#" shard, an item's shard being hash(its partition key)
// mod n. Its layout lives in its registry entry (tenants.go): the
// attribute "shards" (absent: 1) and, while a change of the count is
// under way, "from" (the old count) and "phase" (phasePrep, phaseMove),
// with the migrator's progress in "cursor" and "moved".

// Phases of a change of shard count from m to n (see DESIGN.md).
const (
	phasePrep = "prep" // writes of new items still go to the old layout
	phaseMove = "move" // writes go to the new layout; the migrator moves
)

// MaxShards bounds the shard count of one collection.
const MaxShards = 256

// layout is a collection's shard layout.
type layout struct {
	n     int    // shards of the (new) layout
	from  int    // shards of the old layout during a change; 0 when stable
	phase string // phasePrep or phaseMove during a change
	// fence names the in-place tenant restore the collection is being
	// restored by ("": none; rewind.go), fenceAt the time it restores to.
	fence   string
	fenceAt int64
}

// moving reports whether a change of shard count is under way.
func (l layout) moving() bool { return l.from > 0 && l.from != l.n }

// shardPKs returns the partition keys of every shard a read of the
// whole collection consults: both layouts' during a change, the
// partitions items move out of first (gather.go, move.go).
func (p place) shardPKs() []string {
	var out []string
	if !p.lay.moving() {
		for i := range p.lay.n {
			out = append(out, p.part(i))
		}
		return out
	}
	// NB: n is a multiple or a divisor of from (SetShards), so an item
	// only ever moves from a shard below min(n, from)... to one at or
	// above it: sources and destinations are disjoint, and sources come
	// first.
	for i := range max(p.lay.n, p.lay.from) {
		out = append(out, p.part(i))
	}
	return out
}

// sources returns the partition keys of the shards items move out of
// during a change of shard count (none when stable).
func (p place) sources() map[string]bool {
	out := map[string]bool{}
	if !p.lay.moving() {
		return out
	}
	for i := range max(p.lay.n, p.lay.from) {
		if (p.lay.n > p.lay.from && i < p.lay.from) || (p.lay.n < p.lay.from && i >= p.lay.n) {
			out[p.part(i)] = true
		}
	}
	return out
}

// keyPKs returns the partition keys that may hold the items whose
// partition key is hv: its shard, and during a change its shard in the
// old layout first.
func (p place) keyPKs(hv attr.Value) []string {
	cur := p.part(shardOf(hv, p.lay.n))
	if !p.lay.moving() {
		return []string{cur}
	}
	old := p.part(shardOf(hv, p.lay.from))
	if old == cur {
		return []string{cur}
	}
	return []string{old, cur}
}

// layoutTTL bounds how long a gateway uses a layout it read (Options
// .ShardCacheTTL): a change of phase takes effect on every gateway within
// it, and the migrator waits for it before relying on the new phase.
func (b *Backend) layoutTTL() time.Duration {
	if b.opts.ShardCacheTTL > 0 {
		return b.opts.ShardCacheTTL
	}
	return 2 * time.Second
}

// cachedLayout is a layout as read at a time (before the read was sent).
type cachedLayout struct {
	lay layout
	at  time.Time
}

// layouts caches collections' layouts by registry key.
type layouts struct{ m sync.Map }

// layoutOf returns the layout of the collection of table id in
// namespace ns, from the cache while it is fresh.
func (b *Backend) layoutOf(ctx context.Context, ns []byte, id uint64) (layout, error) {
	if ns == nil {
		return layout{n: 1}, nil // the operator holds no items
	}
	sk := string(regSK(ns, id))
	if v, ok := b.lays.m.Load(sk); ok {
		c := v.(cachedLayout)
		if time.Since(c.at) < b.layoutTTL() {
			return c.lay, nil
		}
	}
	at := time.Now()
	out, err := b.db.GetItem(ctx, &dynamodb.GetItemInput{TableName: &b.table, Key: regKey([]byte(sk)), ConsistentRead: aws.Bool(true)})
	if err != nil {
		return layout{}, engineErr(err, strip)
	}
	lay := layoutFrom(out.Item)
	b.lays.m.Store(sk, cachedLayout{lay: lay, at: at})
	return lay, nil
}

// layoutFrom reads a registry entry's layout.
func layoutFrom(it map[string]types.AttributeValue) layout {
	lay := layout{n: numAttr(it, "shards"), from: numAttr(it, "from")}
	if lay.n < 1 {
		lay.n = 1
	}
	if s, ok := it["phase"].(*types.AttributeValueMemberS); ok {
		lay.phase = s.Value
	}
	if !lay.moving() {
		lay.from, lay.phase = 0, ""
	}
	if s, ok := it[attrRewind].(*types.AttributeValueMemberS); ok {
		lay.fence, lay.fenceAt = s.Value, num64Attr(it, attrRewindAt)
	}
	return lay
}

func numAttr(it map[string]types.AttributeValue, name string) int {
	v, ok := it[name].(*types.AttributeValueMemberN)
	if !ok {
		return 0
	}
	n, err := strconv.Atoi(v.Value)
	if err != nil {
		return 0
	}
	return n
}

func regKey(sk []byte) map[string]types.AttributeValue {
	return map[string]types.AttributeValue{
		attrPK: &types.AttributeValueMemberS{Value: regPK},
		attrSK: &types.AttributeValueMemberB{Value: sk},
	}
}

// checkShards validates a requested shard count against the current one.
func checkShards(cur, n int) error {
	if n < 1 || n > MaxShards {
		return apierr.Validationf("shards must be between 1 and %d, not %d", MaxShards, n)
	}
	if n%cur != 0 && cur%n != 0 {
		return apierr.Validationf("shards must be a multiple or a divisor of the current count %d (an item then only moves between disjoint sets of shards), not %d", cur, n)
	}
	return nil
}

// notMoving refuses a transaction's item whose shard is changing that
// txMoving did not plan (the layout changed between the two reads of it):
// the error is DynamoDB's retryable throttling error.
func (p place) notMoving(key attr.Item) error {
	if len(p.keyPKs(key[p.tg.Table.Hash.Name])) > 1 {
		return apierr.New(apierr.ProvisionedThroughputExceeded, "The table's shard count is changing: a transaction on an item being moved is refused until the move ends; retry")
	}
	return nil
}
