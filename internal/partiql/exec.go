package partiql

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/binary"
	"errors"

	"github.com/tenantdb/tenantdb/internal/apierr"
	"github.com/tenantdb/tenantdb/internal/attr"
	"github.com/tenantdb/tenantdb/internal/tenancy"
	"github.com/tenantdb/tenantdb/internal/wire"
)

// Items is the item API that statements run on, with the key schemas
// their translation needs. The engine implements it; every call acts for
// the Scope given, so tenancy, isolation and capacity are the item API's.
type Items interface {
	// KeySchema returns the key attributes of table, or of its index, as
	// scope s sees the table, with the errors GetItem and Query give for
	// unknown tables and indexes.
	KeySchema(ctx context.Context, s tenancy.Scope, table, index string) (Keys, error)
	GetItem(context.Context, tenancy.Scope, *wire.GetItemInput) (*wire.GetItemOutput, error)
	Query(context.Context, tenancy.Scope, *wire.QueryInput) (*wire.QueryOutput, error)
	Scan(context.Context, tenancy.Scope, *wire.ScanInput) (*wire.ScanOutput, error)
	PutItem(context.Context, tenancy.Scope, *wire.PutItemInput) (*wire.PutItemOutput, error)
	UpdateItem(context.Context, tenancy.Scope, *wire.UpdateItemInput) (*wire.UpdateItemOutput, error)
	DeleteItem(context.Context, tenancy.Scope, *wire.DeleteItemInput) (*wire.DeleteItemOutput, error)
	TransactWriteItems(context.Context, tenancy.Scope, *wire.TransactWriteItemsInput) (*wire.TransactWriteItemsOutput, error)
	TransactGetItems(context.Context, tenancy.Scope, *wire.TransactGetItemsInput) (*wire.TransactGetItemsOutput, error)
}

// maxStatement is DynamoDB's limit on a statement's length.
const maxStatement = 8192

// errDuplicate is DynamoDB's answer to an INSERT of an existing key.
func errDuplicate() error {
	return apierr.New(apierr.DuplicateItem, "Duplicate primary key exists in table")
}

// prepare parses and translates one statement for scope s, which must
// permit the statement's IAM action (PartiQLSelect, ...; write statements
// need a role that may write: ExecuteStatement is admitted as a read).
// Tables and leading keys are checked under that action.
func prepare(ctx context.Context, s tenancy.Scope, b Items, stmt string, params []attr.Value) (Statement, *Plan, tenancy.Scope, error) {
	if len(stmt) < 1 {
		return nil, nil, s, invalid("1 validation error detected: Value at 'statement' failed to satisfy constraint: Member must have length greater than or equal to 1")
	}
	if len(stmt) > maxStatement {
		return nil, nil, s, invalid("1 validation error detected: Value at 'statement' failed to satisfy constraint: Member must have length less than or equal to %d", maxStatement)
	}
	st, err := Parse(stmt)
	if err != nil {
		return nil, nil, s, err
	}
	action, class := iamAction(st)
	if s, err = s.ForStatement(action, class); err != nil {
		return st, nil, s, err
	}
	plan, err := Translate(st, params, func(table, index string) (Keys, error) {
		return b.KeySchema(ctx, s, table, index)
	})
	if err != nil {
		return nil, nil, s, err
	}
	return st, plan, s, nil
}

// iamAction names the IAM action and class of st.
func iamAction(st Statement) (string, tenancy.ActionClass) {
	switch st.(type) {
	case *Insert:
		return tenancy.ActionPartiQLInsert, tenancy.ClassWrite
	case *Update:
		return tenancy.ActionPartiQLUpdate, tenancy.ClassWrite
	case *Delete:
		return tenancy.ActionPartiQLDelete, tenancy.ClassWrite
	}
	return tenancy.ActionPartiQLSelect, tenancy.ClassRead
}

// ExecuteStatement runs one statement: a SELECT as a GetItem, Query or
// Scan (paged by NextToken and Limit), an INSERT, UPDATE or DELETE as the
// item write it translates to. Errors are those of Parse, Translate and
// the item operation, except that an INSERT of an existing key is a
// DuplicateItemException.
func ExecuteStatement(ctx context.Context, s tenancy.Scope, b Items, in *wire.ExecuteStatementInput) (*wire.ExecuteStatementOutput, error) {
	st, plan, s, err := prepare(ctx, s, b, in.Statement, in.Parameters)
	if err != nil {
		return nil, err
	}
	if _, ok := st.(*Exists); ok {
		return nil, invalid("EXISTS is supported only in ExecuteTransaction")
	}
	return run(ctx, s, b, plan, in)
}

// run executes a plan with the options of in.
func run(ctx context.Context, s tenancy.Scope, b Items, plan *Plan, in *wire.ExecuteStatementInput) (*wire.ExecuteStatementOutput, error) {
	var err error
	out := &wire.ExecuteStatementOutput{Items: []wire.Item{}}
	rcc := in.ReturnConsumedCapacity
	switch {
	case plan.Get != nil:
		g := plan.Get
		g.ConsistentRead, g.ReturnConsumedCapacity = in.ConsistentRead, rcc
		r, err := b.GetItem(ctx, s, g)
		if err != nil {
			return nil, err
		}
		if r.Item != nil {
			out.Items = append(out.Items, r.Item)
		}
		out.ConsumedCapacity, out.U = r.ConsumedCapacity, r.U
	case plan.Queries != nil:
		return runQueries(ctx, s, b, plan.Queries, in)
	case plan.Query != nil, plan.Scan != nil:
		var start attr.Item
		if in.NextToken != nil {
			var part int
			if part, start, err = startKey(s, in.Statement, *in.NextToken); err != nil {
				return nil, err
			}
			if part != 0 || start == nil {
				return nil, errToken()
			}
		}
		var r *wire.QueryOutput
		if q := plan.Query; q != nil {
			q.Limit, q.ConsistentRead, q.ReturnConsumedCapacity, q.ExclusiveStartKey = in.Limit, in.ConsistentRead, rcc, start
			r, err = b.Query(ctx, s, q)
		} else {
			sc := plan.Scan
			sc.Limit, sc.ConsistentRead, sc.ReturnConsumedCapacity, sc.ExclusiveStartKey = in.Limit, in.ConsistentRead, rcc, start
			r, err = b.Scan(ctx, s, sc)
		}
		if err != nil {
			return nil, err
		}
		if r.Items != nil {
			out.Items = r.Items
		}
		if r.LastEvaluatedKey != nil {
			out.NextToken = nextToken(s, in.Statement, 0, r.LastEvaluatedKey)
			out.LastEvaluatedKey = r.LastEvaluatedKey
		}
		out.ConsumedCapacity, out.U = r.ConsumedCapacity, r.U
	case plan.Put != nil:
		p := plan.Put
		p.ReturnConsumedCapacity = rcc
		r, err := b.PutItem(ctx, s, p)
		if apierr.Is(err, apierr.ConditionalCheckFailed) {
			return nil, errDuplicate()
		}
		if err != nil {
			return nil, err
		}
		out.ConsumedCapacity, out.U = r.ConsumedCapacity, r.U
	case plan.Update != nil:
		u := plan.Update
		u.ReturnConsumedCapacity, u.ReturnValuesOnConditionCheckFailure = rcc, in.ReturnValuesOnConditionCheckFailure
		r, err := b.UpdateItem(ctx, s, u)
		if err != nil {
			return nil, err
		}
		if r.Attributes != nil {
			out.Items = append(out.Items, r.Attributes)
		}
		out.ConsumedCapacity, out.U = r.ConsumedCapacity, r.U
	case plan.Delete != nil:
		d := plan.Delete
		d.ReturnConsumedCapacity, d.ReturnValuesOnConditionCheckFailure = rcc, in.ReturnValuesOnConditionCheckFailure
		r, err := b.DeleteItem(ctx, s, d)
		if err != nil {
			return nil, err
		}
		if r.Attributes != nil {
			out.Items = append(out.Items, r.Attributes)
		}
		out.ConsumedCapacity, out.U = r.ConsumedCapacity, r.U
	}
	return out, nil
}

// runQueries reads the partitions of pk IN [...] in turn, as one paged
// read: Limit bounds the items evaluated across them, and a NextToken
// says which partition to resume and where.
func runQueries(ctx context.Context, s tenancy.Scope, b Items, qs []*wire.QueryInput, in *wire.ExecuteStatementInput) (*wire.ExecuteStatementOutput, error) {
	part, start := 0, attr.Item(nil)
	if in.NextToken != nil {
		var err error
		if part, start, err = startKey(s, in.Statement, *in.NextToken); err != nil {
			return nil, err
		}
		if part >= len(qs) {
			return nil, errToken()
		}
	}
	out := &wire.ExecuteStatementOutput{Items: []wire.Item{}}
	limit := in.Limit
	var acc capacity
	for i := part; i < len(qs); i++ {
		q := qs[i]
		q.Limit, q.ConsistentRead, q.ReturnConsumedCapacity, q.ExclusiveStartKey = limit, in.ConsistentRead, in.ReturnConsumedCapacity, start
		start = nil
		r, err := b.Query(ctx, s, q)
		if err != nil {
			return nil, err
		}
		out.Items = append(out.Items, r.Items...)
		acc.add(q.TableName, r.U, r.ConsumedCapacity)
		if r.LastEvaluatedKey != nil {
			out.NextToken = nextToken(s, in.Statement, i, r.LastEvaluatedKey)
			break
		}
		if limit != nil {
			left := *limit - int32(r.ScannedCount)
			if left <= 0 {
				if i+1 < len(qs) {
					out.NextToken = nextToken(s, in.Statement, i+1, nil)
				}
				break
			}
			limit = &left
		}
	}
	out.U = acc.usage(false)
	if len(acc.report) > 0 {
		out.ConsumedCapacity = &acc.report[0]
	}
	return out, nil
}

// Page tokens.
//
// A NextToken is a LastEvaluatedKey (and, for pk IN [...], the partition
// to resume) with a tag that binds it to the tenant, environment and
// statement that produced it; a token presented
// with another is refused. NB: the tag is an integrity check against
// misuse, not a secret: a start key is only ever a seek position inside
// the caller's own namespace (and its partition key is checked against
// leading-keys patterns) in the item API, so a forged token can reach
// nothing that a Scan of one's own could not.

const tagLen = 16

func tokenTag(s tenancy.Scope, stmt string) []byte {
	h := sha256.New()
	h.Write([]byte(s.Tenant().String()))
	h.Write([]byte{0})
	h.Write([]byte(s.Env()))
	h.Write([]byte{0})
	h.Write([]byte(stmt))
	return h.Sum(nil)[:tagLen]
}

// nextToken encodes the tag, the partition part (of pk IN [...]; 0
// otherwise) and the key to start after (nil: the partition's start).
func nextToken(s tenancy.Scope, stmt string, part int, lek attr.Item) string {
	raw := binary.AppendUvarint(tokenTag(s, stmt), uint64(part))
	if lek != nil {
		raw = attr.AppendItemJSON(raw, lek)
	}
	return base64.RawURLEncoding.EncodeToString(raw)
}

func errToken() error {
	return invalid("The provided NextToken is not valid for this statement")
}

// startKey decodes a NextToken of scope s and statement stmt.
func startKey(s tenancy.Scope, stmt, tok string) (part int, start attr.Item, err error) {
	raw, err := base64.RawURLEncoding.DecodeString(tok)
	if err != nil || len(raw) <= tagLen || subtle.ConstantTimeCompare(raw[:tagLen], tokenTag(s, stmt)) != 1 {
		return 0, nil, errToken()
	}
	p, n := binary.Uvarint(raw[tagLen:])
	if n <= 0 || p > maxInKeys {
		return 0, nil, errToken()
	}
	rest := raw[tagLen+n:]
	if len(rest) == 0 {
		return int(p), nil, nil
	}
	it, err := attr.ParseItemJSON(rest)
	if err != nil {
		return 0, nil, errToken()
	}
	return int(p), it, nil
}

// batchCode is the BatchStatementError code of an error.
func batchCode(err error) string {
	switch apierr.KindOf(err) {
	case apierr.ConditionalCheckFailed:
		return "ConditionalCheckFailed"
	case apierr.DuplicateItem:
		return "DuplicateItem"
	case apierr.ItemCollectionSizeLimitExceeded:
		return "ItemCollectionSizeLimitExceeded"
	case apierr.RequestLimitExceeded:
		return "RequestLimitExceeded"
	case apierr.ProvisionedThroughputExceeded:
		return "ProvisionedThroughputExceeded"
	case apierr.TransactionConflict:
		return "TransactionConflict"
	case apierr.Throttling:
		return "ThrottlingError"
	case apierr.ResourceNotFound:
		return "ResourceNotFound"
	case apierr.AccessDenied:
		return "AccessDenied"
	case apierr.Validation, apierr.Serialization:
		return "ValidationError"
	}
	return "InternalServerError"
}

// message is the client-safe message of err.
func message(err error) string {
	var e *apierr.Error
	if errors.As(err, &e) {
		return e.Message
	}
	return apierr.InternalMessage
}
