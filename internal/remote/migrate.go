package remote

import (
	"context"
	"encoding/binary"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/tenantdb/tenantdb/client"
	"github.com/tenantdb/tenantdb/internal/apierr"
	"github.com/tenantdb/tenantdb/internal/resolve"
	"github.com/tenantdb/tenantdb/internal/schema"
	"github.com/tenantdb/tenantdb/internal/tenancy"
)

// Changing a collection's shard count from m to n, online (see
// DESIGN.md, "Changing the shard count"):
//
//  1. SetShards writes {shards: n, from: m, phase: prep} to the registry
//     entry (conditional on the layout it read). Gateways learn it within
//     the layout TTL; until then some still use m alone, which is why
//     missing items are still created in the old layout in this phase.
//  2. After the TTL the migrator sets phase move (now no gateway uses m
//     alone), and after the TTL again (no gateway is still in prep) it
//     reads every shard items leave and moves each item whose shard
//     differs with one engine transaction (delete in the old partition on
//     condition of the version read, put in the new one on condition it is
//     absent), recording its progress (cursor, moved) after every page.
//  3. When every source shard is read, it writes {shards: n} alone.
//
// The migrator is crash-safe and resumable: every step is conditional and
// idempotent, the cursor says where to resume, and any gateway resumes a
// change it finds under way (SetShards again, or Open). Two migrators of
// one collection are safe (a move of a moved item fails its condition).

// shardEntry is a registry entry of a collection.
type shardEntry struct {
	sk    []byte
	ns    []byte
	id    uint64
	lay   layout
	moved int64
	shard int    // the shard the migrator reads
	after []byte // and the sort key it read last there
}

func entryFrom(it map[string]types.AttributeValue) (shardEntry, bool) {
	b, ok := it[attrSK].(*types.AttributeValueMemberB)
	if !ok || len(b.Value) <= 8 {
		return shardEntry{}, false
	}
	e := shardEntry{sk: b.Value, ns: b.Value[:len(b.Value)-8], id: binary.BigEndian.Uint64(b.Value[len(b.Value)-8:]), lay: layoutFrom(it)}
	e.moved = int64(numAttr(it, "moved"))
	if c, ok := it["cursor"].(*types.AttributeValueMemberB); ok && len(c.Value) >= 4 {
		e.shard = int(binary.BigEndian.Uint32(c.Value))
		e.after = c.Value[4:]
	}
	return e, e.id != 0
}

// tenantEntries lists the registry entries of s's tenant's collections
// (every environment).
func (b *Backend) tenantEntries(ctx context.Context, s tenancy.Scope) ([]shardEntry, error) {
	in := &dynamodb.QueryInput{
		TableName:                &b.table,
		KeyConditionExpression:   aws.String("#p = :p AND begins_with(#s, :s)"),
		ExpressionAttributeNames: map[string]string{"#p": attrPK, "#s": attrSK},
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":p": &types.AttributeValueMemberS{Value: regPK},
			":s": &types.AttributeValueMemberB{Value: resolve.TenantPrefix(s)},
		},
		ConsistentRead: aws.Bool(true),
	}
	var out []shardEntry
	for {
		res, err := b.db.Query(ctx, in)
		if err != nil {
			return nil, engineErr(err, strip)
		}
		for _, it := range res.Items {
			if e, ok := entryFrom(it); ok {
				out = append(out, e)
			}
		}
		if len(res.LastEvaluatedKey) == 0 {
			return out, nil
		}
		in.ExclusiveStartKey = res.LastEvaluatedKey
	}
}

// Shards lists the shard layouts of s's tenant's tables.
func (b *Backend) Shards(ctx context.Context, s tenancy.Scope) (client.ShardsResult, error) {
	if err := check(ctx, s); err != nil {
		return client.ShardsResult{}, err
	}
	es, err := b.tenantEntries(ctx, s)
	if err != nil {
		return client.ShardsResult{}, err
	}
	out := client.ShardsResult{Tables: []client.ShardStatus{}}
	for _, e := range es {
		t, err := b.res.TableByID(ctx, e.id, e.ns)
		if err != nil {
			return client.ShardsResult{}, err
		}
		if t == nil {
			continue // dropped
		}
		out.Tables = append(out.Tables, b.status(s, e, t))
	}
	return out, nil
}

func (b *Backend) status(s tenancy.Scope, e shardEntry, t *schema.Table) client.ShardStatus {
	st := client.ShardStatus{Table: t.Name, Shards: e.lay.n, From: e.lay.from, Phase: e.lay.phase, Moved: e.moved}
	if e.lay.moving() {
		st.Shard = e.shard
	}
	if p := len(resolve.TenantPrefix(s)); len(e.ns) > p+1 {
		st.Env = string(e.ns[p+1 : len(e.ns)-1])
	}
	return st
}

// SetShards changes the shard count of s's tenant's collections of table
// name (every table if name is ""), online; it returns the layouts as the
// change begins. Changes already under way to n are resumed; one under
// way to another count is refused.
func (b *Backend) SetShards(ctx context.Context, s tenancy.Scope, name string, n int) (client.ShardsResult, error) {
	if err := check(ctx, s); err != nil {
		return client.ShardsResult{}, err
	}
	if n < 1 || n > MaxShards {
		return client.ShardsResult{}, apierr.Validationf("shards must be between 1 and %d, not %d", MaxShards, n)
	}
	// Collections the tenant writes to first from now on get n shards
	// from the start (register).
	if _, err := b.db.PutItem(ctx, &dynamodb.PutItemInput{TableName: &b.table, Item: map[string]types.AttributeValue{
		attrPK:   &types.AttributeValueMemberS{Value: shardsPK},
		attrSK:   &types.AttributeValueMemberB{Value: defaultSK(resolve.TenantPrefix(s), name)},
		"shards": num(n),
	}}); err != nil {
		return client.ShardsResult{}, engineErr(err, strip)
	}
	es, err := b.tenantEntries(ctx, s)
	if err != nil {
		return client.ShardsResult{}, err
	}
	out := client.ShardsResult{Tables: []client.ShardStatus{}}
	for _, e := range es {
		t, err := b.res.TableByID(ctx, e.id, e.ns)
		if err != nil {
			return client.ShardsResult{}, err
		}
		if t == nil || (name != "" && t.Name != name) {
			continue
		}
		switch {
		case e.lay.moving() && e.lay.n != n:
			return client.ShardsResult{}, apierr.New(apierr.ResourceInUse, "the shards of table %s are changing from %d to %d; wait until the change ends", t.Name, e.lay.from, e.lay.n)
		case e.lay.moving():
		case e.lay.n == n:
			out.Tables = append(out.Tables, b.status(s, e, t))
			continue
		default:
			if err := checkShards(e.lay.n, n); err != nil {
				return client.ShardsResult{}, err
			}
			if err := b.beginChange(ctx, e, n); err != nil {
				return client.ShardsResult{}, err
			}
			e.lay = layout{n: n, from: e.lay.n, phase: phasePrep}
			e.moved = 0
		}
		go b.migrate(b.bg, e.sk, resolve.Background(t, e.ns))
		out.Tables = append(out.Tables, b.status(s, e, t))
	}
	return out, nil
}

// beginChange writes phase prep of a change to n shards, on condition
// that the layout is still e's.
func (b *Backend) beginChange(ctx context.Context, e shardEntry, n int) error {
	cond := "attribute_not_exists(#f) AND (attribute_not_exists(#n) OR #n = :cur)"
	_, err := b.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName: &b.table, Key: regKey(e.sk),
		UpdateExpression:         aws.String("SET #n = :n, #f = :cur, #ph = :ph, #m = :zero REMOVE #c"),
		ConditionExpression:      &cond,
		ExpressionAttributeNames: map[string]string{"#n": "shards", "#f": "from", "#ph": "phase", "#m": "moved", "#c": "cursor"},
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":n": num(n), ":cur": num(e.lay.n), ":ph": &types.AttributeValueMemberS{Value: phasePrep}, ":zero": num(0),
		},
	})
	if err != nil {
		if apierr.Is(engineErr(err, strip), apierr.ConditionalCheckFailed) {
			return apierr.New(apierr.ResourceInUse, "the table's shard layout changed concurrently; retry")
		}
		return engineErr(err, strip)
	}
	b.lays.m.Delete(string(e.sk))
	return nil
}

// The shard counts set for a tenant's collections not written yet:
// pk shardsPK, sk tenant prefix 0x00 table name ("" for every table).
const shardsPK = "meta#shards"

func defaultSK(tenant []byte, name string) []byte {
	return append(append(append([]byte(nil), tenant...), 0), name...)
}

// defaultShards returns the shard count set for table name of the
// tenant whose key prefix is tenant (1 if none).
func (b *Backend) defaultShards(ctx context.Context, tenant []byte, name string) (int, error) {
	for _, n := range []string{name, ""} {
		out, err := b.db.GetItem(ctx, &dynamodb.GetItemInput{TableName: &b.table, ConsistentRead: aws.Bool(true), Key: map[string]types.AttributeValue{
			attrPK: &types.AttributeValueMemberS{Value: shardsPK},
			attrSK: &types.AttributeValueMemberB{Value: defaultSK(tenant, n)},
		}})
		if err != nil {
			return 0, engineErr(err, strip)
		}
		if v := numAttr(out.Item, "shards"); v > 0 {
			return v, nil
		}
	}
	return 1, nil
}

func num(n int) types.AttributeValue { return &types.AttributeValueMemberN{Value: uitoa(uint64(n))} }

// resumeChanges resumes every change of shard count under way (a gateway
// that ran one may have ended): run by Open in the background.
func (b *Backend) resumeChanges(ctx context.Context) {
	in := b.partitionQuery(regPK)
	in.FilterExpression, in.ExpressionAttributeNames["#f"] = aws.String("attribute_exists(#f)"), "from"
	for {
		res, err := b.db.Query(ctx, in)
		if err != nil {
			b.log.Warn("listing shard changes to resume", "err", err)
			return
		}
		for _, it := range res.Items {
			e, ok := entryFrom(it)
			if !ok || !e.lay.moving() {
				continue
			}
			t, err := b.res.TableByID(ctx, e.id, e.ns)
			if err != nil || t == nil {
				continue
			}
			go b.migrate(ctx, e.sk, resolve.Background(t, e.ns))
		}
		if len(res.LastEvaluatedKey) == 0 {
			return
		}
		in.ExclusiveStartKey = res.LastEvaluatedKey
	}
}

// migrate runs the change of shard count of the collection whose registry
// key is sk to its end (see above).
//
// An engine error (throttling by the partitions it moves items between,
// most likely: the collection is hot) is retried with backoff from the
// recorded progress, until the gateway closes.
func (b *Backend) migrate(ctx context.Context, sk []byte, tg resolve.Target) {
	backoff := 100 * time.Millisecond
	for {
		res, err := b.db.GetItem(ctx, &dynamodb.GetItemInput{TableName: &b.table, Key: regKey(sk), ConsistentRead: aws.Bool(true)})
		if err != nil {
			b.log.Warn("shard change: reading the layout", "table", tg.Table.ID, "err", err)
			if sleep(ctx, backoff) != nil {
				return
			}
			backoff = min(2*backoff, 5*time.Second)
			continue
		}
		e, ok := entryFrom(res.Item)
		if !ok || !e.lay.moving() {
			b.lays.m.Delete(string(sk))
			return
		}
		// NB: waiting a whole TTL after reading a phase is always safe:
		// every gateway has seen the phase by then, however late the
		// write of it was.
		if err := sleep(ctx, b.layoutTTL()+b.layoutTTL()/4); err != nil {
			return
		}
		switch e.lay.phase {
		case phasePrep:
			err = b.setPhase(ctx, sk, "SET #ph = :to", phasePrep, phaseMove, e.lay.from)
		default:
			p := placeOf(tg, e.lay)
			if err = b.moveAll(ctx, p, e); err == nil {
				err = b.setPhase(ctx, sk, "SET #n = :n REMOVE #f, #ph, #c", phaseMove, "", e.lay.from, e.lay.n)
			}
		}
		if err != nil {
			b.log.Warn("shard change", "table", tg.Table.ID, "err", err)
			if sleep(ctx, backoff) != nil {
				return
			}
			backoff = min(2*backoff, 5*time.Second)
			continue
		}
		backoff = 100 * time.Millisecond
		b.lays.m.Delete(string(sk))
	}
}

func sleep(ctx context.Context, d time.Duration) error {
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(d):
		return nil
	}
}

// setPhase applies upd to the entry if it is still in phase from of a
// change from shards "from" (another migrator may have gone on already).
func (b *Backend) setPhase(ctx context.Context, sk []byte, upd, from, to string, old int, n ...int) error {
	names := map[string]string{"#ph": "phase", "#f": "from"}
	values := map[string]types.AttributeValue{":from": &types.AttributeValueMemberS{Value: from}, ":old": num(old)}
	if to != "" {
		values[":to"] = &types.AttributeValueMemberS{Value: to}
	}
	if len(n) > 0 {
		names["#n"], names["#c"] = "shards", "cursor"
		values[":n"] = num(n[0])
	}
	_, err := b.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName: &b.table, Key: regKey(sk), UpdateExpression: &upd,
		ConditionExpression:      aws.String("#ph = :from AND #f = :old"),
		ExpressionAttributeNames: names, ExpressionAttributeValues: values,
	})
	if err != nil && !apierr.Is(engineErr(err, strip), apierr.ConditionalCheckFailed) {
		return engineErr(err, strip)
	}
	return nil
}

// moveAll reads every shard items leave, from e's cursor, and moves each
// item whose shard differs in the new layout.
func (b *Backend) moveAll(ctx context.Context, p place, e shardEntry) error {
	srcs := p.sources()
	for j := range max(p.lay.n, p.lay.from) {
		part := p.part(j)
		if !srcs[part] || j < e.shard {
			continue
		}
		var start map[string]types.AttributeValue
		if j == e.shard {
			start = e.cursorKey(part)
		}
		for {
			in := b.partitionQuery(part)
			in.Limit, in.ExclusiveStartKey = aws.Int32(100), start
			res, err := b.db.Query(ctx, in)
			if err != nil {
				return engineErr(err, strip)
			}
			moved := 0
			for _, raw := range res.Items {
				ok, err := b.moveItem(ctx, p, raw)
				if err != nil {
					return err
				}
				if ok {
					moved++
				}
			}
			start = res.LastEvaluatedKey
			if err := b.progress(ctx, p, j, start, moved, e.lay.from); err != nil {
				return err
			}
			if len(start) == 0 {
				break
			}
		}
	}
	return nil
}

// cursorKey is the engine key to resume reading shard part after.
func (e shardEntry) cursorKey(part string) map[string]types.AttributeValue {
	if len(e.after) == 0 {
		return nil
	}
	return map[string]types.AttributeValue{attrPK: &types.AttributeValueMemberS{Value: part}, attrSK: &types.AttributeValueMemberB{Value: e.after}}
}

// progress records the migrator's position (shard j, after key start;
// nil start: the shard is done) and the items it moved.
func (b *Backend) progress(ctx context.Context, p place, j int, start map[string]types.AttributeValue, moved, from int) error {
	cur := binary.BigEndian.AppendUint32(nil, uint32(j))
	if len(start) == 0 {
		cur = binary.BigEndian.AppendUint32(nil, uint32(j+1))
	} else if sk, ok := start[attrSK].(*types.AttributeValueMemberB); ok {
		cur = append(cur, sk.Value...)
	}
	_, err := b.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName: &b.table, Key: regKey(regSK(p.tg.Namespace, p.tg.Table.ID)),
		UpdateExpression:         aws.String("SET #c = :c ADD #m :k"),
		ConditionExpression:      aws.String("#f = :from"),
		ExpressionAttributeNames: map[string]string{"#c": "cursor", "#m": "moved", "#f": "from"},
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":c": &types.AttributeValueMemberB{Value: cur}, ":k": num(moved), ":from": num(from),
		},
	})
	if err != nil {
		return engineErr(err, strip)
	}
	return nil
}

// moveItem moves the engine item raw (read in its old shard) to its new
// shard, if that differs, marking both copies so that no stream shows
// the move (streammove.go). A concurrent write makes it read the item
// again.
func (b *Backend) moveItem(ctx context.Context, p place, raw map[string]types.AttributeValue) (bool, error) {
	return b.markedMove(ctx, p, raw)
}
