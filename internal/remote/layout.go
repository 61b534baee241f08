package remote

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"hash/fnv"
	"strconv"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/tenantdb/tenantdb/internal/apierr"
	"github.com/tenantdb/tenantdb/internal/attr"
	"github.com/tenantdb/tenantdb/internal/resolve"
	"github.com/tenantdb/tenantdb/internal/schema"
)

// The physical layout (see DESIGN.md): one engine table, <prefix>tenantdb,
// with a string partition key and a binary sort key. A logical table's
// items for one tenant environment live in the item collection
//
//	pk = hex(namespace) "#" table id "#" shard      sk = key(pk) key(sk)
//
// where key() is attr.AppendKey's order-preserving, self-delimiting
// encoding. Definitions live under pk = "meta#def#" hex(namespace) (or
// "meta#def#shared") with the table name as sort key.

// The physical key attributes. Items may not use names beginning with
// tenantdb: (reserved, as it is for tags).
const (
	attrPK = "tenantdb:pk"
	attrSK = "tenantdb:sk"
)

// partitionQuery returns a strongly consistent Query of the engine
// table's partition pk (one item collection, in sort key order), its
// partition key named #p and bound to :p; callers add a filter, a
// projection, a limit or more names and values to it.
func (b *Backend) partitionQuery(pk string) *dynamodb.QueryInput {
	return &dynamodb.QueryInput{
		TableName:                 &b.table,
		KeyConditionExpression:    aws.String("#p = :p"),
		ExpressionAttributeNames:  map[string]string{"#p": attrPK},
		ExpressionAttributeValues: map[string]types.AttributeValue{":p": &types.AttributeValueMemberS{Value: pk}},
		ConsistentRead:            aws.Bool(true),
	}
}

// maxSortKey is DynamoDB's limit on a sort key's size, which bounds the
// encoded logical key (see DESIGN.md, "Limits").
const maxSortKey = 1024

// place is where one Target's items live: the partition keys of its
// item collection's shards (base followed by the shard number), the
// collection's layout (shard count, and a move in progress; shard.go),
// and the table it resolved.
type place struct {
	tg   resolve.Target
	base string
	lay  layout
}

// placeOf is the place of tg under layout lay.
func placeOf(tg resolve.Target, lay layout) place {
	return place{tg: tg, base: collBase(tg.Namespace, tg.Table.ID), lay: lay}
}

// collBase is the partition keys' common beginning of the collection of
// table id in namespace ns: hex(ns) "#" id "#".
func collBase(ns []byte, id uint64) string {
	return hex.EncodeToString(ns) + "#" + strconv.FormatUint(id, 10) + "#"
}

// part is the partition key of shard i.
func (p place) part(i int) string { return p.base + strconv.Itoa(i) }

// shardOf is the shard, among n, of the items whose partition key is hv:
// every item of one logical item collection lives in one shard.
func shardOf(hv attr.Value, n int) int {
	if n <= 1 {
		return 0
	}
	h := fnv.New64a()
	h.Write(attr.AppendKey(nil, hv))
	return int(h.Sum64() % uint64(n))
}

// pkOf is the partition key where the item with key (or item) key is
// written: its shard in the layout's current shard count.
func (p place) pkOf(key attr.Item) string {
	return p.part(shardOf(key[p.tg.Table.Hash.Name], p.lay.n))
}

// sortKey encodes a logical key (validated against the table) as the
// physical sort key. Errors: ValidationException when the encoding
// exceeds the engine's sort-key limit.
func (p place) sortKey(key attr.Item) ([]byte, error) {
	t := p.tg.Table
	sk := attr.AppendKey(nil, key[t.Hash.Name])
	if t.Range.Name != "" {
		sk = attr.AppendKey(sk, key[t.Range.Name])
	}
	if len(sk) > maxSortKey {
		return nil, apierr.Validationf("One or more parameter values were invalid: the key is too large for the remote backend (its encoding exceeds %d bytes)", maxSortKey)
	}
	return sk, nil
}

// physKey returns the engine key of a logical key.
func (p place) physKey(key attr.Item) (map[string]types.AttributeValue, error) {
	sk, err := p.sortKey(key)
	if err != nil {
		return nil, err
	}
	return map[string]types.AttributeValue{
		attrPK: &types.AttributeValueMemberS{Value: p.pkOf(key)},
		attrSK: &types.AttributeValueMemberB{Value: sk},
	}, nil
}

// physItem returns the engine item of a logical item: the item itself
// (its key attributes too, so that expressions naming them work
// unchanged) plus the physical key, the key of each index entry it has
// (indexSlot's attributes) and, on a table with indexes, a new version.
func (p place) physItem(item attr.Item) (map[string]types.AttributeValue, error) {
	if err := checkNames(item); err != nil {
		return nil, err
	}
	sk, err := p.sortKey(item)
	if err != nil {
		return nil, err
	}
	m := toItem(item)
	pk := p.pkOf(item)
	m[attrPK] = &types.AttributeValueMemberS{Value: pk}
	m[attrSK] = &types.AttributeValueMemberB{Value: sk}
	for i, ix := range p.tg.Table.Indexes {
		hv, ok := item[ix.Hash.Name]
		if !ok {
			continue
		}
		xs := attr.AppendKey(nil, hv)
		if ix.Range.Name != "" {
			rv, ok := item[ix.Range.Name]
			if !ok {
				continue // DynamoDB indexes only items with every index key attribute
			}
			xs = attr.AppendKey(xs, rv)
		}
		xs = append(xs, entryTag(sk)...)
		if len(xs) > maxSortKey {
			return nil, apierr.Validationf("One or more parameter values were invalid: the key of index %s is too large for the remote backend (its encoding exceeds %d bytes)", ix.Name, maxSortKey)
		}
		slot := slotOf(i)
		m[slot.pk] = &types.AttributeValueMemberS{Value: indexPart(pk, ix)}
		m[slot.sk] = &types.AttributeValueMemberB{Value: xs}
	}
	if len(p.tg.Table.Indexes) > 0 {
		m[attrVersion] = newVersion()
	}
	p.mirrorTTL(item, m)
	return m, nil
}

// indexPart is the partition key of index ix's entries of the items in
// the shard whose partition key is pk: an item's index entries live in
// its own shard (see DESIGN.md, "Shards").
func indexPart(pk string, ix *schema.Index) string {
	return pk + "#" + strconv.FormatUint(uint64(ix.No), 10)
}

// tagLen is the length of entryTag.
const tagLen = 16

// entryTag follows the encoded index key in an index entry's sort key:
// a digest of the item's table key (its physical sort key sk), so that
// every entry's sort key is unique and one total order (index key, then
// tag) holds in every shard — an index query over several shards merges
// by it and resumes after a page token in any shard (gather.go).
func entryTag(sk []byte) []byte {
	d := sha256.Sum256(sk)
	return d[:tagLen]
}

// indexSlot is one of the engine table's generic global secondary
// indexes: the logical index at position i of a table's Indexes (GSI or
// LSI) is served by slot i+1 of the engine table, whose key attributes
// are tenantdb:x<i+1>p (S) and tenantdb:x<i+1>s (B).
type indexSlot struct{ name, pk, sk string }

func slotOf(i int) indexSlot {
	n := strconv.Itoa(i + 1)
	return indexSlot{name: "tenantdb-x" + n, pk: "tenantdb:x" + n + "p", sk: "tenantdb:x" + n + "s"}
}

// attrVersion is an item's version on a table with indexes: a random
// value every write sets, so that an update computed by the gateway (one
// that moves an index key, see update.go) commits only over the version
// it read.
const attrVersion = "tenantdb:v"

func newVersion() types.AttributeValue {
	var b [8]byte
	rand.Read(b[:])
	return &types.AttributeValueMemberB{Value: b[:]}
}

// logicalKey decodes a physical sort key of p's collection back into the
// logical key (for LastEvaluatedKey).
func (p place) logicalKey(phys map[string]types.AttributeValue) (attr.Item, error) {
	b, ok := phys[attrSK].(*types.AttributeValueMemberB)
	if !ok {
		return nil, apierr.New(apierr.Internal, "the engine answered a page token without a sort key")
	}
	t := p.tg.Table
	hv, n, ok := attr.DecodeKey(t.Hash.Type, b.Value)
	if !ok {
		return nil, apierr.New(apierr.Internal, "corrupt physical sort key")
	}
	key := attr.Item{t.Hash.Name: hv}
	if t.Range.Name != "" {
		rv, _, ok := attr.DecodeKey(t.Range.Type, b.Value[n:])
		if !ok {
			return nil, apierr.New(apierr.Internal, "corrupt physical sort key")
		}
		key[t.Range.Name] = rv
	}
	return key, nil
}

// strip returns the logical item of an engine item: without the
// physical attributes (the reserved tenantdb: names).
func strip(m map[string]types.AttributeValue) attr.Item {
	if m == nil {
		return nil
	}
	for k := range m {
		if strings.HasPrefix(k, reservedPrefix) {
			delete(m, k)
		}
	}
	it, err := fromItem(m)
	if err != nil {
		return nil
	}
	return it
}

// reservedPrefix begins every physical attribute's name.
const reservedPrefix = "tenantdb:"

// checkNames refuses an item that uses the reserved physical names.
func checkNames(item attr.Item) error {
	for k := range item {
		if strings.HasPrefix(k, reservedPrefix) {
			return reservedName(k)
		}
	}
	return nil
}

func reservedName(n string) error {
	return apierr.Validationf("One or more parameter values were invalid: attribute name %s is reserved by tenantdb", n)
}

// pred returns the greatest byte string of at most maxSortKey bytes that
// is less than x: an inclusive upper bound for "less than x".
func pred(x []byte) []byte {
	n := len(x)
	if n == 0 {
		return nil
	}
	if x[n-1] == 0 {
		return append([]byte(nil), x[:n-1]...)
	}
	out := make([]byte, maxSortKey)
	copy(out, x[:n-1])
	out[n-1] = x[n-1] - 1
	for i := n; i < maxSortKey; i++ {
		out[i] = 0xFF
	}
	return out
}

// top returns the greatest byte string of at most maxSortKey bytes that
// begins with prefix: an inclusive upper bound of the prefix's range.
func top(prefix []byte) []byte {
	out := make([]byte, maxSortKey)
	copy(out, prefix)
	for i := len(prefix); i < maxSortKey; i++ {
		out[i] = 0xFF
	}
	return out
}

// Definitions: the catalog's partition keys.
const (
	defShared = "meta#def#shared"
	seqPK     = "meta#seq"
)

func defPK(ns []byte) string { return "meta#def#" + hex.EncodeToString(ns) }

// defKey is the engine key of table t's definition.
func defKey(t *schema.Table, ns []byte) map[string]types.AttributeValue {
	pk := defShared
	if !t.Shared() {
		pk = defPK(ns)
	}
	return map[string]types.AttributeValue{
		attrPK: &types.AttributeValueMemberS{Value: pk},
		attrSK: &types.AttributeValueMemberB{Value: []byte(t.Name)},
	}
}
