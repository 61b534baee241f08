package engine

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"errors"
	"hash"
	"sort"
	"time"

	"github.com/tenantdb/tenantdb/internal/apierr"
	"github.com/tenantdb/tenantdb/internal/attr"
	"github.com/tenantdb/tenantdb/internal/keyspace"
	"github.com/tenantdb/tenantdb/internal/storage"
	"github.com/tenantdb/tenantdb/internal/wire"
)

// tokenTTL is how long a TransactWriteItems ClientRequestToken is
// remembered after the transaction committed.
const tokenTTL = 10 * time.Minute

// tokenKey returns the key of a ClientRequestToken record of namespace ns.
//
// NB: table id 0 is never allocated, so the "items of table 0" range of a
// namespace is free for the engine's per-namespace metadata. Keeping the
// record inside the namespace keeps tokens per tenant (one tenant cannot
// collide with or probe another's tokens) and inside the tenant's range
// (tenant deletion removes them).
func tokenKey(ns []byte, token string) []byte {
	return append(keyspace.Items(ns, 0), token...)
}

// tokenRecord is a committed transaction remembered for idempotency.
type tokenRecord struct {
	Hash    []byte `json:"h"`
	Expires int64  `json:"x"` // unix nanoseconds
}

// readToken returns the live record of token in ns, or nil.
func (e *Engine) readToken(ns []byte, token string) (*tokenRecord, error) {
	v, err := e.db.Get(tokenKey(ns, token))
	if errors.Is(err, storage.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, apierr.Wrap(apierr.Internal, err, "reading client request token")
	}
	var r tokenRecord
	if err := json.Unmarshal(v, &r); err != nil {
		return nil, apierr.Wrap(apierr.Internal, err, "corrupt client request token")
	}
	if e.opts.Now().UnixNano() >= r.Expires {
		return nil, nil
	}
	return &r, nil
}

// sweepTokens deletes the expired token records of namespace ns.
func (e *Engine) sweepTokens(ns []byte) error {
	p := keyspace.Items(ns, 0)
	it := e.db.NewIter(p, keyspace.PrefixEnd(p))
	defer it.Close()
	now := e.opts.Now().UnixNano()
	b := e.db.NewBatch()
	defer b.Close()
	for ok := it.First(); ok; ok = it.Next() {
		var r tokenRecord
		if err := json.Unmarshal(it.Value(), &r); err != nil || now >= r.Expires {
			b.Delete(it.Key())
		}
	}
	if err := it.Error(); err != nil {
		return err
	}
	if b.Len() == 0 {
		return nil
	}
	return e.db.Apply(b)
}

// txHash returns a digest of a TransactWriteItems request's items, to
// recognise a retry of the same request.
func txHash(items []wire.TransactWriteItem) []byte {
	h := canonHasher{sha256.New()}
	for _, ti := range items {
		switch {
		case ti.ConditionCheck != nil:
			c := ti.ConditionCheck
			h.str("check", c.TableName, c.ConditionExpression, c.ReturnValuesOnConditionCheckFailure)
			h.item(c.Key)
			h.names(c.ExpressionAttributeNames)
			h.item(c.ExpressionAttributeValues)
		case ti.Put != nil:
			c := ti.Put
			h.str("put", c.TableName, c.ReturnValuesOnConditionCheckFailure)
			h.opt(c.ConditionExpression)
			h.item(c.Item)
			h.names(c.ExpressionAttributeNames)
			h.item(c.ExpressionAttributeValues)
		case ti.Delete != nil:
			c := ti.Delete
			h.str("delete", c.TableName, c.ReturnValuesOnConditionCheckFailure)
			h.opt(c.ConditionExpression)
			h.item(c.Key)
			h.names(c.ExpressionAttributeNames)
			h.item(c.ExpressionAttributeValues)
		case ti.Update != nil:
			c := ti.Update
			h.str("update", c.TableName, c.UpdateExpression, c.ReturnValuesOnConditionCheckFailure)
			h.opt(c.ConditionExpression)
			h.item(c.Key)
			h.names(c.ExpressionAttributeNames)
			h.item(c.ExpressionAttributeValues)
		default:
			h.str("none")
		}
	}
	return h.Sum(nil)
}

// canonHasher feeds values to a hash in a canonical, unambiguous form
// (length-prefixed strings, map keys sorted).
type canonHasher struct{ hash.Hash }

func (h canonHasher) str(ss ...string) {
	for _, s := range ss {
		var n [binary.MaxVarintLen64]byte
		h.Write(n[:binary.PutUvarint(n[:], uint64(len(s)))])
		h.Write([]byte(s))
	}
}

func (h canonHasher) opt(s *string) {
	if s == nil {
		h.str("\x00nil")
		return
	}
	h.str(*s)
}

func (h canonHasher) names(m map[string]string) {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	h.str("names")
	for _, k := range keys {
		h.str(k, m[k])
	}
}

func (h canonHasher) item(it attr.Item) {
	h.str("item")
	for _, k := range attr.SortedNames(it) {
		h.str(k)
		h.value(it[k])
	}
	h.str("end")
}

func (h canonHasher) value(v attr.Value) {
	h.str(v.Type.String())
	switch v.Type {
	case attr.M:
		h.item(v.M)
	case attr.L:
		for _, e := range v.L {
			h.value(e)
		}
		h.str("end")
	default:
		h.Write(attr.AppendBinary(nil, v))
	}
}
