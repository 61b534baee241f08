package remote_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/tenantdb/tenantdb/client"
	"github.com/tenantdb/tenantdb/tests/harness"
)

// createIndexed creates table name with a sort key, a GSI on (g, gs)
// projecting KEYS_ONLY plus "v", and an LSI on (pk, ls).
func createIndexed(t *testing.T, c *dynamodb.Client, name string) {
	t.Helper()
	_, err := c.CreateTable(context.Background(), &dynamodb.CreateTableInput{
		TableName: aws.String(name),
		AttributeDefinitions: []types.AttributeDefinition{
			{AttributeName: aws.String("pk"), AttributeType: types.ScalarAttributeTypeS},
			{AttributeName: aws.String("sk"), AttributeType: types.ScalarAttributeTypeN},
			{AttributeName: aws.String("g"), AttributeType: types.ScalarAttributeTypeS},
			{AttributeName: aws.String("gs"), AttributeType: types.ScalarAttributeTypeN},
			{AttributeName: aws.String("ls"), AttributeType: types.ScalarAttributeTypeS},
		},
		KeySchema: []types.KeySchemaElement{
			{AttributeName: aws.String("pk"), KeyType: types.KeyTypeHash},
			{AttributeName: aws.String("sk"), KeyType: types.KeyTypeRange},
		},
		GlobalSecondaryIndexes: []types.GlobalSecondaryIndex{{
			IndexName: aws.String("byg"),
			KeySchema: []types.KeySchemaElement{
				{AttributeName: aws.String("g"), KeyType: types.KeyTypeHash},
				{AttributeName: aws.String("gs"), KeyType: types.KeyTypeRange},
			},
			Projection: &types.Projection{ProjectionType: types.ProjectionTypeInclude, NonKeyAttributes: []string{"v"}},
		}},
		LocalSecondaryIndexes: []types.LocalSecondaryIndex{{
			IndexName: aws.String("byls"),
			KeySchema: []types.KeySchemaElement{
				{AttributeName: aws.String("pk"), KeyType: types.KeyTypeHash},
				{AttributeName: aws.String("ls"), KeyType: types.KeyTypeRange},
			},
			Projection: &types.Projection{ProjectionType: types.ProjectionTypeAll},
		}},
		BillingMode: types.BillingModePayPerRequest,
	})
	if err != nil {
		t.Fatal(err)
	}
}

// setShards sets tenant's shard count of table through the admin API and
// waits until the change has ended.
func setShards(t *testing.T, srv *harness.Server, tenant, table string, n int) {
	t.Helper()
	ctx := context.Background()
	if _, err := srv.Admin().SetShards(ctx, tenant, client.ShardRequest{Shards: n, Table: table}); err != nil {
		t.Fatal(err)
	}
	waitShards(t, srv, tenant, table, n)
}

func waitShards(t *testing.T, srv *harness.Server, tenant, table string, n int) client.ShardStatus {
	t.Helper()
	deadline := patience(t)
	for {
		out, err := srv.Admin().Shards(context.Background(), tenant)
		if err != nil {
			t.Fatal(err)
		}
		for _, st := range out.Tables {
			if st.Table == table && st.Shards == n && st.From == 0 {
				return st
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("the shard change of %s did not end: %+v", table, out)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// patience is how long a test waits for background work that has no
// stated time bound (a shard change, moving items at a per-key write
// limit): until shortly before the test binary's -timeout, so that a
// loaded machine (-race, beside other packages) slows it down without
// failing it, and a hang still fails with the state it was in.
func patience(t *testing.T) time.Time {
	if d, ok := t.Deadline(); ok {
		return d.Add(-time.Minute)
	}
	return time.Now().Add(10 * time.Minute)
}

// item is a test item: pk p<i%17>, sk i, an index key on most items.
func item(i int) map[string]types.AttributeValue {
	it := map[string]types.AttributeValue{"pk": s(fmt.Sprintf("p%d", i%17)), "sk": n(fmt.Sprint(i)), "v": n(fmt.Sprint(i % 5)), "x": s("extra")}
	if i%7 != 0 {
		it["g"], it["gs"] = s(fmt.Sprintf("g%d", i%3)), n(fmt.Sprint(i%11))
	}
	if i%2 == 0 {
		it["ls"] = s(fmt.Sprintf("l%03d", 300-i))
	}
	return it
}

// transcript runs the same reads and writes through c and returns what
// they answered, in order, for comparing two layouts.
func transcript(t *testing.T, c *dynamodb.Client, table string, transactions bool) []string {
	ctx := context.Background()
	var out []string
	rec := func(label string, v any, err error) {
		if err != nil {
			var ae interface{ ErrorCode() string }
			if errors.As(err, &ae) {
				out = append(out, label+" error "+ae.ErrorCode())
				return
			}
			t.Fatalf("%s: %v", label, err)
		}
		var m any
		switch o := v.(type) {
		case *dynamodb.QueryOutput:
			m = []any{dump(o.Items), o.Count, o.ScannedCount, dumpItem(o.LastEvaluatedKey)}
		case *dynamodb.ScanOutput:
			m = []any{dump(o.Items), o.Count, o.ScannedCount, dumpItem(o.LastEvaluatedKey)}
		case *dynamodb.GetItemOutput:
			m = dumpItem(o.Item)
		case *dynamodb.PutItemOutput:
			m = dumpItem(o.Attributes)
		case *dynamodb.UpdateItemOutput:
			m = dumpItem(o.Attributes)
		case *dynamodb.TransactGetItemsOutput:
			var items []string
			for _, r := range o.Responses {
				items = append(items, dumpItem(r.Item))
			}
			m = items
		default:
			m = fmt.Sprintf("%T", v)
		}
		b, _ := json.Marshal(m)
		out = append(out, label+" "+string(b))
	}
	tbl := aws.String(table)
	for i := range 200 {
		_, err := c.PutItem(ctx, &dynamodb.PutItemInput{TableName: tbl, Item: item(i)})
		if err != nil {
			t.Fatal(err)
		}
	}
	// Paged reads: every page's items, counts and token.
	page := func(label string, q *dynamodb.QueryInput) {
		for p := 0; ; p++ {
			o, err := c.Query(ctx, q)
			rec(fmt.Sprintf("%s page %d", label, p), o, err)
			if err != nil || o.LastEvaluatedKey == nil {
				return
			}
			q.ExclusiveStartKey = o.LastEvaluatedKey
		}
	}
	scan := func(label string, q *dynamodb.ScanInput) {
		for p := 0; ; p++ {
			o, err := c.Scan(ctx, q)
			rec(fmt.Sprintf("%s page %d", label, p), o, err)
			if err != nil || o.LastEvaluatedKey == nil {
				return
			}
			q.ExclusiveStartKey = o.LastEvaluatedKey
		}
	}
	vals := func(kv ...any) map[string]types.AttributeValue {
		m := map[string]types.AttributeValue{}
		for i := 0; i < len(kv); i += 2 {
			m[kv[i].(string)] = kv[i+1].(types.AttributeValue)
		}
		return m
	}
	page("query", &dynamodb.QueryInput{TableName: tbl, KeyConditionExpression: aws.String("pk = :p"), ExpressionAttributeValues: vals(":p", s("p3")), Limit: aws.Int32(4)})
	page("query back", &dynamodb.QueryInput{TableName: tbl, KeyConditionExpression: aws.String("pk = :p AND sk > :s"), ExpressionAttributeValues: vals(":p", s("p5"), ":s", n("40")), Limit: aws.Int32(3), ScanIndexForward: aws.Bool(false)})
	page("query filter", &dynamodb.QueryInput{TableName: tbl, KeyConditionExpression: aws.String("pk = :p"), FilterExpression: aws.String("v = :v"), ExpressionAttributeValues: vals(":p", s("p1"), ":v", n("2")), Limit: aws.Int32(5)})
	page("query count", &dynamodb.QueryInput{TableName: tbl, KeyConditionExpression: aws.String("pk = :p"), ExpressionAttributeValues: vals(":p", s("p2")), Select: types.SelectCount})
	page("gsi", &dynamodb.QueryInput{TableName: tbl, IndexName: aws.String("byg"), KeyConditionExpression: aws.String("g = :g"), ExpressionAttributeValues: vals(":g", s("g1")), Limit: aws.Int32(7)})
	page("gsi range back", &dynamodb.QueryInput{TableName: tbl, IndexName: aws.String("byg"), KeyConditionExpression: aws.String("g = :g AND gs BETWEEN :a AND :b"), ExpressionAttributeValues: vals(":g", s("g2"), ":a", n("3"), ":b", n("8")), Limit: aws.Int32(4), ScanIndexForward: aws.Bool(false)})
	page("gsi eq", &dynamodb.QueryInput{TableName: tbl, IndexName: aws.String("byg"), KeyConditionExpression: aws.String("g = :g AND gs = :a"), ExpressionAttributeValues: vals(":g", s("g0"), ":a", n("5")), Limit: aws.Int32(2)})
	page("gsi le", &dynamodb.QueryInput{TableName: tbl, IndexName: aws.String("byg"), KeyConditionExpression: aws.String("g = :g AND gs <= :a"), ExpressionAttributeValues: vals(":g", s("g0"), ":a", n("2"))})
	page("gsi gt", &dynamodb.QueryInput{TableName: tbl, IndexName: aws.String("byg"), KeyConditionExpression: aws.String("g = :g AND gs > :a"), ExpressionAttributeValues: vals(":g", s("g0"), ":a", n("9"))})
	page("gsi filter", &dynamodb.QueryInput{TableName: tbl, IndexName: aws.String("byg"), KeyConditionExpression: aws.String("g = :g"), FilterExpression: aws.String("v < :v"), ExpressionAttributeValues: vals(":g", s("g1"), ":v", n("2")), Limit: aws.Int32(6)})
	page("gsi count", &dynamodb.QueryInput{TableName: tbl, IndexName: aws.String("byg"), KeyConditionExpression: aws.String("g = :g"), ExpressionAttributeValues: vals(":g", s("g2")), Select: types.SelectCount})
	page("lsi", &dynamodb.QueryInput{TableName: tbl, IndexName: aws.String("byls"), KeyConditionExpression: aws.String("pk = :p AND begins_with(ls, :l)"), ExpressionAttributeValues: vals(":p", s("p4"), ":l", s("l1")), Limit: aws.Int32(3)})
	scan("scan", &dynamodb.ScanInput{TableName: tbl, Limit: aws.Int32(23)})
	scan("scan filter", &dynamodb.ScanInput{TableName: tbl, FilterExpression: aws.String("v = :v"), ExpressionAttributeValues: vals(":v", n("1")), Limit: aws.Int32(17), ProjectionExpression: aws.String("pk, sk")})
	scan("scan count", &dynamodb.ScanInput{TableName: tbl, Select: types.SelectCount})
	scan("scan gsi", &dynamodb.ScanInput{TableName: tbl, IndexName: aws.String("byg"), Limit: aws.Int32(31)})
	// A parallel scan's segments together read every item once.
	var seg []string
	for i := range int32(3) {
		q := &dynamodb.ScanInput{TableName: tbl, Segment: aws.Int32(i), TotalSegments: aws.Int32(3), Limit: aws.Int32(40)}
		for {
			o, err := c.Scan(ctx, q)
			if err != nil {
				t.Fatal(err)
			}
			for _, it := range o.Items {
				seg = append(seg, dumpItem(it))
			}
			if o.LastEvaluatedKey == nil {
				break
			}
			q.ExclusiveStartKey = o.LastEvaluatedKey
		}
	}
	sort.Strings(seg)
	out = append(out, fmt.Sprintf("segments %d %v", len(seg), seg))

	// Writes: conditions, updates, transactions.
	key := func(i int) map[string]types.AttributeValue {
		return map[string]types.AttributeValue{"pk": s(fmt.Sprintf("p%d", i%17)), "sk": n(fmt.Sprint(i))}
	}
	o1, err := c.PutItem(ctx, &dynamodb.PutItemInput{TableName: tbl, Item: item(5), ConditionExpression: aws.String("attribute_not_exists(pk)"),
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld})
	rec("conditional put", o1, err)
	o2, err := c.UpdateItem(ctx, &dynamodb.UpdateItemInput{TableName: tbl, Key: key(6), UpdateExpression: aws.String("SET gs = gs + :one, v = :v"),
		ExpressionAttributeValues: vals(":one", n("1"), ":v", n("9")), ReturnValues: types.ReturnValueAllNew})
	rec("update index key", o2, err)
	o3, err := c.UpdateItem(ctx, &dynamodb.UpdateItemInput{TableName: tbl, Key: key(7), UpdateExpression: aws.String("ADD c :one"),
		ExpressionAttributeValues: vals(":one", n("1")), ReturnValues: types.ReturnValueUpdatedNew})
	rec("update", o3, err)
	if !transactions {
		goto after
	}
	{
		o4, err := c.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: []types.TransactWriteItem{
			{Put: &types.Put{TableName: tbl, Item: item(500), ConditionExpression: aws.String("attribute_not_exists(pk)")}},
			{Update: &types.Update{TableName: tbl, Key: key(8), UpdateExpression: aws.String("SET v = :v"), ExpressionAttributeValues: vals(":v", n("7"))}},
			{ConditionCheck: &types.ConditionCheck{TableName: tbl, Key: key(9), ConditionExpression: aws.String("attribute_exists(pk)")}},
			{Delete: &types.Delete{TableName: tbl, Key: key(10)}},
		}})
		rec("transaction", o4, err)
		o5, err := c.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: []types.TransactWriteItem{
			{Put: &types.Put{TableName: tbl, Item: item(501)}},
			{ConditionCheck: &types.ConditionCheck{TableName: tbl, Key: key(10), ConditionExpression: aws.String("attribute_exists(pk)")}},
		}})
		rec("cancelled transaction", o5, err)
		o6, err := c.TransactGetItems(ctx, &dynamodb.TransactGetItemsInput{TransactItems: []types.TransactGetItem{
			{Get: &types.Get{TableName: tbl, Key: key(500)}}, {Get: &types.Get{TableName: tbl, Key: key(8)}},
			{Get: &types.Get{TableName: tbl, Key: key(10)}}, {Get: &types.Get{TableName: tbl, Key: key(501)}},
		}})
		rec("transact get", o6, err)
	}
after:
	for _, i := range []int{6, 7, 8, 9, 10, 500, 501} {
		o, err := c.GetItem(ctx, &dynamodb.GetItemInput{TableName: tbl, Key: key(i), ConsistentRead: aws.Bool(true)})
		rec(fmt.Sprintf("get %d", i), o, err)
	}
	bg, err := c.BatchGetItem(ctx, &dynamodb.BatchGetItemInput{RequestItems: map[string]types.KeysAndAttributes{table: {Keys: []map[string]types.AttributeValue{key(1), key(2), key(10), key(3)}}}})
	if err != nil {
		t.Fatal(err)
	}
	out = append(out, fmt.Sprintf("batch get %v", sortedDump(bg.Responses[table])))
	scan("scan after", &dynamodb.ScanInput{TableName: tbl, Limit: aws.Int32(50)})
	page("gsi after", &dynamodb.QueryInput{TableName: tbl, IndexName: aws.String("byg"), KeyConditionExpression: aws.String("g = :g"), ExpressionAttributeValues: vals(":g", s("g0"))})
	d, err := c.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: tbl})
	if err != nil {
		t.Fatal(err)
	}
	out = append(out, fmt.Sprintf("describe %d items, gsi %d", *d.Table.ItemCount, *d.Table.GlobalSecondaryIndexes[0].ItemCount))
	return out
}

func dumpItem(it map[string]types.AttributeValue) string {
	if it == nil {
		return "nil"
	}
	b, _ := json.Marshal(plain(&types.AttributeValueMemberM{Value: it})) // json sorts map keys
	return string(b)
}

// plain returns an attribute value as plain Go values, for comparing.
func plain(av types.AttributeValue) any {
	switch v := av.(type) {
	case *types.AttributeValueMemberS:
		return "S:" + v.Value
	case *types.AttributeValueMemberN:
		return "N:" + v.Value
	case *types.AttributeValueMemberB:
		return v.Value
	case *types.AttributeValueMemberBOOL:
		return v.Value
	case *types.AttributeValueMemberNULL:
		return nil
	case *types.AttributeValueMemberM:
		m := map[string]any{}
		for k, e := range v.Value {
			m[k] = plain(e)
		}
		return m
	case *types.AttributeValueMemberL:
		l := []any{}
		for _, e := range v.Value {
			l = append(l, plain(e))
		}
		return l
	case *types.AttributeValueMemberSS:
		return slices.Sorted(slices.Values(v.Value))
	case *types.AttributeValueMemberNS:
		return slices.Sorted(slices.Values(v.Value))
	}
	return fmt.Sprintf("%T", av)
}

func dump(items []map[string]types.AttributeValue) []string {
	out := []string{}
	for _, it := range items {
		out = append(out, dumpItem(it))
	}
	return out
}

func sortedDump(items []map[string]types.AttributeValue) []string {
	out := dump(items)
	slices.Sort(out)
	return out
}

// TestShardsGiveIdenticalResults runs the same reads and writes against a
// table in 1 shard and in 8: every answer, page and token is the same.
func TestShardsGiveIdenticalResults(t *testing.T) {
	for name, start := range engines(t, false) {
		t.Run(name, func(t *testing.T) { shardsGiveIdenticalResults(t, start(t), name != "dynalite") })
	}
}

// shardsGiveIdenticalResults compares the transcripts of a table in 1
// shard and in 8 (transactions: whether the engine has them).
func shardsGiveIdenticalResults(t *testing.T, srv *harness.Server, transactions bool) {
	one := srv.Client(srv.Default)
	cred := srv.NewTenant(t, "sharded", "admin")
	eight := srv.Client(cred)
	createIndexed(t, one, "tbl")
	createIndexed(t, eight, "tbl")
	// Set before the first write: the collection is created in 8 shards.
	if _, err := srv.Admin().SetShards(context.Background(), cred.TenantID, client.ShardRequest{Shards: 8, Table: "tbl"}); err != nil {
		t.Fatal(err)
	}
	a, b := transcript(t, one, "tbl", transactions), transcript(t, eight, "tbl", transactions)
	if len(a) != len(b) {
		t.Fatalf("%d answers with 1 shard, %d with 8", len(a), len(b))
	}
	for i := range a {
		if a[i] != b[i] {
			t.Errorf("1 shard:  %s\n8 shards: %s", a[i], b[i])
		}
	}
	if st := waitShards(t, srv, cred.TenantID, "tbl", 8); st.Shards != 8 {
		t.Fatalf("status %+v", st)
	}
}

// TestReshardOnlineLosesNothing changes a table's shard count from 1 to 8
// and then to 2 while writers put new items, race to create the same
// items with attribute_not_exists, add to counters and delete: every
// acknowledged write is there after, each contested item was created
// exactly once, counters are exact, and no item is in two shards.
func TestReshardOnlineLosesNothing(t *testing.T) {
	srv := harness.Start(t, harness.Options{Remote: true})
	cred := srv.NewTenant(t, "hot", "admin")
	c := srv.Client(cred)
	ctx := context.Background()
	createIndexed(t, c, "hot")
	tbl := aws.String("hot")
	for i := range 300 {
		if _, err := c.PutItem(ctx, &dynamodb.PutItemInput{TableName: tbl, Item: item(i)}); err != nil {
			t.Fatal(err)
		}
	}
	// An item no writer deletes, for transactional reads.
	if _, err := c.PutItem(ctx, &dynamodb.PutItemInput{TableName: tbl, Item: map[string]types.AttributeValue{"pk": s("keep"), "sk": n("0")}}); err != nil {
		t.Fatal(err)
	}
	var (
		mu      sync.Mutex
		acked   = map[string]bool{} // keys put, acknowledged
		deleted = map[string]bool{}
		created = map[string]int{} // contested keys: successful creations
		adds    atomic.Int64
		txAdds  atomic.Int64
		stop    atomic.Bool
		retry   = func(err error) bool {
			return err != nil && (strings.Contains(err.Error(), "ProvisionedThroughputExceeded") || strings.Contains(err.Error(), "TransactionConflict"))
		}
		wg       sync.WaitGroup
		failures atomic.Int64
	)
	counter := func(k int) map[string]types.AttributeValue {
		return map[string]types.AttributeValue{"pk": s(fmt.Sprintf("c%d", k)), "sk": n("0")}
	}
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; !stop.Load(); i++ {
				// A new item.
				k := 1000 + w*100000 + i
				it := item(k)
				if _, err := c.PutItem(ctx, &dynamodb.PutItemInput{TableName: tbl, Item: it}); err == nil {
					mu.Lock()
					acked[dumpItem(map[string]types.AttributeValue{"pk": it["pk"], "sk": it["sk"]})] = true
					mu.Unlock()
				} else if !retry(err) {
					t.Error(err)
					failures.Add(1)
				}
				// A contested creation: every writer tries the same key.
				ck := map[string]types.AttributeValue{"pk": s(fmt.Sprintf("once%d", i%40)), "sk": n(fmt.Sprint(i / 40))}
				_, err := c.PutItem(ctx, &dynamodb.PutItemInput{TableName: tbl, Item: map[string]types.AttributeValue{"pk": ck["pk"], "sk": ck["sk"], "by": n(fmt.Sprint(w))},
					ConditionExpression: aws.String("attribute_not_exists(pk)")})
				switch {
				case err == nil:
					mu.Lock()
					created[dumpItem(ck)]++
					mu.Unlock()
				case strings.Contains(err.Error(), "ConditionalCheckFailed"), retry(err):
				default:
					t.Error(err)
				}
				// A transaction: a counter and a new item, or neither.
				tk := map[string]types.AttributeValue{"pk": s(fmt.Sprintf("tx%d-%d", w, i)), "sk": n("0")}
				_, err = c.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: []types.TransactWriteItem{
					{Update: &types.Update{TableName: tbl, Key: counter(100 + i%5), UpdateExpression: aws.String("ADD n :one"),
						ExpressionAttributeValues: map[string]types.AttributeValue{":one": n("1")}}},
					{Put: &types.Put{TableName: tbl, Item: tk, ConditionExpression: aws.String("attribute_not_exists(pk)")}},
				}})
				switch {
				case err == nil:
					txAdds.Add(1)
					mu.Lock()
					acked[dumpItem(tk)] = true
					mu.Unlock()
				case retry(err):
				default:
					t.Error(err)
				}
				// A transactional read of an item that exists.
				if i%5 == 0 {
					o, err := c.TransactGetItems(ctx, &dynamodb.TransactGetItemsInput{TransactItems: []types.TransactGetItem{
						{Get: &types.Get{TableName: tbl, Key: map[string]types.AttributeValue{"pk": s("keep"), "sk": n("0")}}}}})
					if err == nil && o.Responses[0].Item == nil {
						t.Error("TransactGetItems missed an item that exists")
					} else if err != nil && !retry(err) {
						t.Error(err)
					}
				}
				// A counter.
				if _, err := c.UpdateItem(ctx, &dynamodb.UpdateItemInput{TableName: tbl, Key: counter(i % 13), UpdateExpression: aws.String("ADD n :one"),
					ExpressionAttributeValues: map[string]types.AttributeValue{":one": n("1")}}); err == nil {
					adds.Add(1)
				} else if !retry(err) {
					t.Error(err)
				}
				// A delete of a preloaded item.
				if i%3 == 0 {
					d := (w*75 + i/3) % 300
					if _, err := c.DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: tbl, Key: map[string]types.AttributeValue{"pk": item(d)["pk"], "sk": item(d)["sk"]}}); err == nil {
						mu.Lock()
						deleted[dumpItem(map[string]types.AttributeValue{"pk": item(d)["pk"], "sk": item(d)["sk"]})] = true
						mu.Unlock()
					} else if !retry(err) {
						t.Error(err)
					}
				}
			}
		}()
	}
	defer func() { stop.Store(true); wg.Wait() }()
	time.Sleep(300 * time.Millisecond)
	setShards(t, srv, cred.TenantID, "hot", 8)
	st := waitShards(t, srv, cred.TenantID, "hot", 8)
	if st.Moved == 0 {
		t.Errorf("the change to 8 shards moved no item: %+v", st)
	}
	setShards(t, srv, cred.TenantID, "hot", 2)
	time.Sleep(300 * time.Millisecond)
	stop.Store(true)
	wg.Wait()
	if t.Failed() {
		return
	}

	// Every key once in a scan (no item in two shards), every acknowledged
	// put there, every acknowledged delete gone.
	seen := map[string]map[string]types.AttributeValue{}
	q := &dynamodb.ScanInput{TableName: tbl, ConsistentRead: aws.Bool(true), Limit: aws.Int32(97)}
	for {
		o, err := c.Scan(ctx, q)
		if err != nil {
			t.Fatal(err)
		}
		for _, it := range o.Items {
			k := dumpItem(map[string]types.AttributeValue{"pk": it["pk"], "sk": it["sk"]})
			if seen[k] != nil {
				t.Errorf("item %s twice", k)
			}
			seen[k] = it
		}
		if o.LastEvaluatedKey == nil {
			break
		}
		q.ExclusiveStartKey = o.LastEvaluatedKey
	}
	for k := range acked {
		if seen[k] == nil {
			t.Errorf("acknowledged put %s lost", k)
		}
	}
	for k := range deleted {
		if seen[k] != nil {
			t.Errorf("acknowledged delete %s is back", k)
		}
	}
	for k, n := range created {
		if n != 1 {
			t.Errorf("%s created %d times", k, n)
		}
		if seen[k] == nil {
			t.Errorf("created %s lost", k)
		}
	}
	var total int64
	for k := range 13 {
		o, err := c.GetItem(ctx, &dynamodb.GetItemInput{TableName: tbl, Key: counter(k), ConsistentRead: aws.Bool(true)})
		if err != nil {
			t.Fatal(err)
		}
		if v, ok := o.Item["n"].(*types.AttributeValueMemberN); ok {
			var x int64
			fmt.Sscan(v.Value, &x)
			total += x
		}
	}
	if total != adds.Load() {
		t.Errorf("counters total %d, %d acknowledged adds", total, adds.Load())
	}
	var txTotal int64
	for k := range 5 {
		o, err := c.GetItem(ctx, &dynamodb.GetItemInput{TableName: tbl, Key: counter(100 + k), ConsistentRead: aws.Bool(true)})
		if err != nil {
			t.Fatal(err)
		}
		if v, ok := o.Item["n"].(*types.AttributeValueMemberN); ok {
			var x int64
			fmt.Sscan(v.Value, &x)
			txTotal += x
		}
	}
	if txTotal != txAdds.Load() {
		t.Errorf("transactional counters total %d, %d acknowledged transactions", txTotal, txAdds.Load())
	}
	// A transaction's item is there exactly when its counter was added.
	txItems := 0
	for k := range seen {
		if strings.Contains(k, `"S:tx`) {
			txItems++
		}
	}
	if int64(txItems) != txAdds.Load() {
		t.Errorf("%d transactions' items, %d acknowledged transactions", txItems, txAdds.Load())
	}
	// The index agrees with the items.
	var gsi int
	gq := &dynamodb.ScanInput{TableName: tbl, IndexName: aws.String("byg")}
	for {
		o, err := c.Scan(ctx, gq)
		if err != nil {
			t.Fatal(err)
		}
		gsi += int(o.Count)
		if o.LastEvaluatedKey == nil {
			break
		}
		gq.ExclusiveStartKey = o.LastEvaluatedKey
	}
	want := 0
	for _, it := range seen {
		if it["g"] != nil && it["gs"] != nil {
			want++
		}
	}
	if gsi != want {
		t.Errorf("index holds %d entries, items with index keys: %d", gsi, want)
	}
	t.Logf("%d items, %d acknowledged puts, %d deletes, %d contested keys, %d adds, %d transactions, %d moved to 8 shards", len(seen), len(acked), len(deleted), len(created), adds.Load(), txAdds.Load(), st.Moved)
}

// TestAutoShardFromThrottling: a hot tenant writing into an engine with a
// per-partition-key write limit is throttled; the gateway doubles its
// table's shard count online (autoshard.go), and every acknowledged
// write is there after.
//
// NB: the writers exceed the limit on a loaded machine too: under -race
// beside other packages they made 12 to 24 writes a second through the
// gateway, which items of 1 unit never got throttled for (the limit is
// 100 units a second); items of 41 units (40 KB) are, from 3 writes a
// second, and a move of one (a transaction: 2 units a KB, plus its mark)
// still fits the bucket of 100. (A lower limit would throttle the
// gateway's own records, whose transactions take up to tens of units of
// one partition key.)
func TestAutoShardFromThrottling(t *testing.T) {
	srv := harness.Start(t, harness.Options{Remote: true, RemoteWriteLimit: 100, RemoteAutoShard: true})
	cred := srv.NewTenant(t, "hot", "admin")
	c := srv.Client(cred)
	ctx := context.Background()
	createTable(t, c, "auto")
	var (
		stop  atomic.Bool
		wg    sync.WaitGroup
		mu    sync.Mutex
		acked []string

		throttledN atomic.Int64
		began      = time.Now()
		pad        = strings.Repeat("x", 40<<10)
	)
	defer func() { stop.Store(true); wg.Wait() }()
	for w := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; !stop.Load(); i++ {
				pk := fmt.Sprintf("w%d-%d", w, i)
				_, err := c.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String("auto"), Item: map[string]types.AttributeValue{"pk": s(pk), "sk": n("1"), "pad": s(pad)}})
				switch {
				case err == nil:
					mu.Lock()
					acked = append(acked, pk)
					mu.Unlock()
				case strings.Contains(err.Error(), "ProvisionedThroughputExceeded"), strings.Contains(err.Error(), "TransactionConflict"):
					throttledN.Add(1)
				default:
					t.Error(err)
					return
				}
			}
		}()
	}
	// The writers stop once the gateway has begun raising the count (the
	// migrator's moves share the hot partition's limit with them).
	deadline := patience(t)
	var st client.ShardsResult
	for {
		var err error
		if st, err = srv.Admin().Shards(ctx, cred.TenantID); err != nil {
			t.Fatal(err)
		}
		if len(st.Tables) == 1 && st.Tables[0].Shards >= 2 {
			break
		}
		if time.Now().After(deadline) {
			mu.Lock()
			n := len(acked)
			mu.Unlock()
			t.Fatalf("the shard count was not raised: %+v (%d acknowledged writes, %d refused as throttled, in %v)", st, n, throttledN.Load(), time.Since(began).Round(time.Millisecond))
		}
		time.Sleep(100 * time.Millisecond)
	}
	stop.Store(true)
	wg.Wait()
	final := waitShards(t, srv, cred.TenantID, "auto", st.Tables[0].Shards)
	for _, pk := range acked {
		o, err := c.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String("auto"), Key: map[string]types.AttributeValue{"pk": s(pk), "sk": n("1")}, ConsistentRead: aws.Bool(true)})
		if err != nil {
			t.Fatal(err)
		}
		if o.Item == nil {
			t.Errorf("acknowledged %s lost", pk)
		}
	}
	t.Logf("raised to %d shards (%d items moved) after %d writes refused as throttled; %d acknowledged writes", final.Shards, final.Moved, throttledN.Load(), len(acked))
}

// TestReshardAcrossGateways changes a table's shard count through one
// gateway of two while writers alternate between both (each gateway
// learns the phases from the engine within its layout TTL): contested
// creations happen once, counters and transactional counters are exact,
// every acknowledged put is there.
func TestReshardAcrossGateways(t *testing.T) {
	gws := harness.StartCluster(t, 2, harness.Options{}).Gateways
	cred := gws[0].NewTenant(t, "fleet-hot", "admin")
	cs := []*dynamodb.Client{gws[0].Client(cred), gws[1].Client(cred)}
	ctx := context.Background()
	createIndexed(t, cs[0], "hot")
	tbl := aws.String("hot")
	for i := range 200 {
		if _, err := cs[i%2].PutItem(ctx, &dynamodb.PutItemInput{TableName: tbl, Item: item(i)}); err != nil {
			t.Fatal(err)
		}
	}
	var (
		mu      sync.Mutex
		acked   []map[string]types.AttributeValue
		created = map[string]int{}
		adds    atomic.Int64
		stop    atomic.Bool
		wg      sync.WaitGroup
	)
	retry := func(err error) bool {
		return strings.Contains(err.Error(), "ProvisionedThroughputExceeded") || strings.Contains(err.Error(), "TransactionConflict")
	}
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; !stop.Load(); i++ {
				c := cs[(w+i)%2]
				k := map[string]types.AttributeValue{"pk": s(fmt.Sprintf("f%d", i%23)), "sk": n(fmt.Sprint(w*1000000 + i))}
				if _, err := c.PutItem(ctx, &dynamodb.PutItemInput{TableName: tbl, Item: k}); err == nil {
					mu.Lock()
					acked = append(acked, k)
					mu.Unlock()
				} else if !retry(err) {
					t.Error(err)
					return
				}
				ck := map[string]types.AttributeValue{"pk": s(fmt.Sprintf("once%d", i%31)), "sk": n(fmt.Sprint(i / 31))}
				_, err := c.PutItem(ctx, &dynamodb.PutItemInput{TableName: tbl, Item: ck, ConditionExpression: aws.String("attribute_not_exists(pk)")})
				if err == nil {
					mu.Lock()
					created[dumpItem(ck)]++
					mu.Unlock()
				} else if !strings.Contains(err.Error(), "ConditionalCheckFailed") && !retry(err) {
					t.Error(err)
					return
				}
				_, err = c.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: []types.TransactWriteItem{
					{Update: &types.Update{TableName: tbl, Key: map[string]types.AttributeValue{"pk": s(fmt.Sprintf("c%d", i%7)), "sk": n("0")},
						UpdateExpression: aws.String("ADD n :one"), ExpressionAttributeValues: map[string]types.AttributeValue{":one": n("1")}}},
					{Update: &types.Update{TableName: tbl, Key: map[string]types.AttributeValue{"pk": s(fmt.Sprintf("d%d", i%5)), "sk": n("0")},
						UpdateExpression: aws.String("ADD n :one"), ExpressionAttributeValues: map[string]types.AttributeValue{":one": n("1")}}},
				}})
				if err == nil {
					adds.Add(1)
				} else if !retry(err) {
					t.Error(err)
					return
				}
			}
		}()
	}
	defer func() { stop.Store(true); wg.Wait() }()
	time.Sleep(300 * time.Millisecond)
	if _, err := gws[1].Admin().SetShards(ctx, cred.TenantID, client.ShardRequest{Shards: 4, Table: "hot"}); err != nil {
		t.Fatal(err)
	}
	waitShards(t, gws[0], cred.TenantID, "hot", 4)
	time.Sleep(300 * time.Millisecond)
	stop.Store(true)
	wg.Wait()
	if t.Failed() {
		return
	}
	for _, k := range acked {
		o, err := cs[1].GetItem(ctx, &dynamodb.GetItemInput{TableName: tbl, Key: k, ConsistentRead: aws.Bool(true)})
		if err != nil {
			t.Fatal(err)
		}
		if o.Item == nil {
			t.Errorf("acknowledged put %v lost", k)
		}
	}
	for k, c := range created {
		if c != 1 {
			t.Errorf("%s created %d times", k, c)
		}
	}
	for _, prefix := range []string{"c", "d"} {
		var total int64
		for j := range 7 {
			o, err := cs[0].GetItem(ctx, &dynamodb.GetItemInput{TableName: tbl, Key: map[string]types.AttributeValue{"pk": s(fmt.Sprintf("%s%d", prefix, j)), "sk": n("0")}, ConsistentRead: aws.Bool(true)})
			if err != nil {
				t.Fatal(err)
			}
			if v, ok := o.Item["n"].(*types.AttributeValueMemberN); ok {
				var x int64
				fmt.Sscan(v.Value, &x)
				total += x
			}
		}
		if total != adds.Load() {
			t.Errorf("counters %s* total %d, %d acknowledged transactions", prefix, total, adds.Load())
		}
	}
	t.Logf("%d puts, %d contested keys, %d transactions across 2 gateways", len(acked), len(created), adds.Load())
}
