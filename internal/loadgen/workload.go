package loadgen

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sort"
	"strconv"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// Op is one kind of DynamoDB request the load generator issues.
type Op int

// The operations. Their String forms are the workload names.
const (
	OpPut Op = iota
	OpGet
	OpQuery
	OpBatchWrite
	OpTransact
	numOps
)

var opNames = [numOps]string{"put", "get", "query", "batchwrite", "transact"}

func (o Op) String() string {
	if o < 0 || o >= numOps {
		return "op(" + strconv.Itoa(int(o)) + ")"
	}
	return opNames[o]
}

// ParseOp returns the Op named s.
func ParseOp(s string) (Op, error) {
	for i, n := range opNames {
		if n == s {
			return Op(i), nil
		}
	}
	return 0, fmt.Errorf("loadgen: unknown operation %q (want one of %s)", s, strings.Join(opNames[:], ", "))
}

// Workloads lists the accepted workload names.
var Workloads = []string{"put", "get", "query", "batchwrite", "transact", "mixed"}

// DefaultMix is the operation mix of the "mixed" workload, in percent.
const DefaultMix = "get=50,put=30,query=10,batchwrite=5,transact=5"

// Mix picks operations with fixed weights.
type Mix struct {
	ops []Op
	cum []int // cumulative weights, parallel to ops
}

// ParseMix parses "op=weight,..." (weights are relative integers).
func ParseMix(s string) (Mix, error) {
	var m Mix
	seen := map[Op]bool{}
	total := 0
	for _, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		name, w, ok := strings.Cut(part, "=")
		if !ok {
			return Mix{}, fmt.Errorf("loadgen: mix entry %q: want op=weight", part)
		}
		op, err := ParseOp(strings.TrimSpace(name))
		if err != nil {
			return Mix{}, err
		}
		n, err := strconv.Atoi(strings.TrimSpace(w))
		if err != nil || n < 0 {
			return Mix{}, fmt.Errorf("loadgen: mix entry %q: weight must be a non-negative integer", part)
		}
		if seen[op] {
			return Mix{}, fmt.Errorf("loadgen: mix names %s twice", op)
		}
		seen[op] = true
		if n == 0 {
			continue
		}
		total += n
		m.ops = append(m.ops, op)
		m.cum = append(m.cum, total)
	}
	if total == 0 {
		return Mix{}, fmt.Errorf("loadgen: mix %q has no operation with a positive weight", s)
	}
	return m, nil
}

// MixFor returns the Mix of a workload name; mix is used for "mixed".
func MixFor(workload, mix string) (Mix, error) {
	if workload == "mixed" {
		if mix == "" {
			mix = DefaultMix
		}
		return ParseMix(mix)
	}
	op, err := ParseOp(workload)
	if err != nil {
		return Mix{}, fmt.Errorf("loadgen: unknown workload %q (want one of %s)", workload, strings.Join(Workloads, ", "))
	}
	return Mix{ops: []Op{op}, cum: []int{1}}, nil
}

// Pick returns an operation drawn with the mix's weights.
func (m Mix) Pick(r *rand.Rand) Op {
	if len(m.ops) == 1 {
		return m.ops[0]
	}
	x := r.IntN(m.cum[len(m.cum)-1])
	return m.ops[sort.SearchInts(m.cum, x+1)]
}

// Ops returns the operations of the mix.
func (m Mix) Ops() []Op { return m.ops }

// CollectionSize is the number of items under one partition key: a Query
// returns one whole collection.
const CollectionSize = 20

// Key layout: item number n lives at pk "p<n/20>", sk "s<n%20>", so items
// 0..N-1 form N/20 collections of 20 items, and Preload, get, query and the
// writes all address the same key space.
func keyOf(n int) (pk, sk string) {
	return fmt.Sprintf("p%08d", n/CollectionSize), fmt.Sprintf("s%02d", n%CollectionSize)
}

// itemOverhead is the DynamoDB size of an item without its payload:
// the names "pk", "sk", "data" plus the key values.
const itemOverhead = len("pk") + len("p00000000") + len("sk") + len("s00") + len("data")

// items builds request items of a fixed DynamoDB item size.
type items struct {
	payload string
}

func newItems(itemSize int) items {
	n := itemSize - itemOverhead
	if n < 1 {
		n = 1
	}
	const alphabet = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
	r := rand.New(rand.NewPCG(1, 2))
	b := make([]byte, n)
	for i := range b {
		b[i] = alphabet[r.IntN(len(alphabet))]
	}
	return items{payload: string(b)}
}

func keyAV(n int) map[string]types.AttributeValue {
	pk, sk := keyOf(n)
	return map[string]types.AttributeValue{
		"pk": &types.AttributeValueMemberS{Value: pk},
		"sk": &types.AttributeValueMemberS{Value: sk},
	}
}

func (it items) item(n int) map[string]types.AttributeValue {
	m := keyAV(n)
	m["data"] = &types.AttributeValueMemberS{Value: it.payload}
	return m
}

// ItemSize returns the DynamoDB size in bytes of the items written for
// itemSize (the payload is at least one byte).
func ItemSize(itemSize int) int { return itemOverhead + len(newItems(itemSize).payload) }

// opRunner issues one operation. It is shared by all workers; per-worker
// state is the *rand.Rand.
type opRunner struct {
	table     string
	items     items
	keyspace  int // items that writes address
	preloaded int // items that reads address
	batchSize int
	txItems   int
}

// distinct returns k distinct item numbers below n, consecutive from a random start.
func distinct(r *rand.Rand, n, k int) []int {
	start := r.IntN(n)
	out := make([]int, k)
	for i := range out {
		out[i] = (start + i) % n
	}
	return out
}

// do issues op and returns the number of unprocessed items (BatchWriteItem).
func (o *opRunner) do(ctx context.Context, c *dynamodb.Client, op Op, r *rand.Rand) (int, error) {
	switch op {
	case OpPut:
		_, err := c.PutItem(ctx, &dynamodb.PutItemInput{
			TableName: &o.table,
			Item:      o.items.item(r.IntN(o.keyspace)),
		})
		return 0, err
	case OpGet:
		out, err := c.GetItem(ctx, &dynamodb.GetItemInput{
			TableName: &o.table,
			Key:       keyAV(r.IntN(o.preloaded)),
		})
		if err == nil && out.Item == nil {
			return 0, errMiss
		}
		return 0, err
	case OpQuery:
		pk, _ := keyOf(r.IntN(o.preloaded/CollectionSize) * CollectionSize)
		out, err := c.Query(ctx, &dynamodb.QueryInput{
			TableName:                 &o.table,
			KeyConditionExpression:    aws.String("pk = :p"),
			ExpressionAttributeValues: map[string]types.AttributeValue{":p": &types.AttributeValueMemberS{Value: pk}},
		})
		if err == nil && len(out.Items) == 0 {
			return 0, errMiss
		}
		return 0, err
	case OpBatchWrite:
		reqs := make([]types.WriteRequest, 0, o.batchSize)
		for _, n := range distinct(r, o.keyspace, o.batchSize) {
			reqs = append(reqs, types.WriteRequest{PutRequest: &types.PutRequest{Item: o.items.item(n)}})
		}
		out, err := c.BatchWriteItem(ctx, &dynamodb.BatchWriteItemInput{
			RequestItems: map[string][]types.WriteRequest{o.table: reqs},
		})
		if err != nil {
			return 0, err
		}
		unprocessed := 0
		for _, w := range out.UnprocessedItems {
			unprocessed += len(w)
		}
		return unprocessed, nil
	case OpTransact:
		tx := make([]types.TransactWriteItem, 0, o.txItems)
		for _, n := range distinct(r, o.keyspace, o.txItems) {
			tx = append(tx, types.TransactWriteItem{Put: &types.Put{TableName: &o.table, Item: o.items.item(n)}})
		}
		_, err := c.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: tx})
		return 0, err
	}
	return 0, fmt.Errorf("loadgen: unknown operation %d", op)
}

// errMiss is reported (as code "ItemNotFound") when a read of a preloaded
// key finds nothing: the table was not preloaded, or lost data.
var errMiss = errors.New("loadgen: read returned no item (was the table preloaded?)")
