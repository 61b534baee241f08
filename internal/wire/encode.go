package wire

import (
	"encoding/json"
	"strconv"
	"unicode/utf8"

	"github.com/tenantdb/tenantdb/internal/attr"
)

// AppendOutput appends the JSON encoding of an operation's output to dst.
//
// The item-carrying outputs of the hot paths (GetItem, PutItem, UpdateItem,
// DeleteItem, Query, Scan, BatchGetItem, BatchWriteItem, TransactGetItems)
// are written directly with attr.AppendItemJSON; everything else goes
// through encoding/json. Item maps are written when non-nil, so an engine
// returns nil for "no item" and an empty map for "an item with no
// attributes left after projection"; Query's Items likewise (nil for
// Select COUNT). The error is non-nil only for an output encoding/json
// cannot encode, which is a bug.
func AppendOutput(dst []byte, out any) ([]byte, error) {
	switch o := out.(type) {
	case *GetItemOutput:
		return appendGetItem(dst, o)
	case *PutItemOutput:
		return appendWriteOutput(dst, o.Attributes, o.ConsumedCapacity, o.ItemCollectionMetrics)
	case *UpdateItemOutput:
		return appendWriteOutput(dst, o.Attributes, o.ConsumedCapacity, o.ItemCollectionMetrics)
	case *DeleteItemOutput:
		return appendWriteOutput(dst, o.Attributes, o.ConsumedCapacity, o.ItemCollectionMetrics)
	case *QueryOutput:
		return appendQuery(dst, o)
	case *BatchGetItemOutput:
		return appendBatchGet(dst, o)
	case *BatchWriteItemOutput:
		return appendBatchWrite(dst, o)
	case *TransactGetItemsOutput:
		return appendTransactGet(dst, o)
	case *ExecuteStatementOutput:
		return appendExecuteStatement(dst, o)
	case *EmptyOutput:
		return dst, nil // DynamoDB answers TagResource and UntagResource with no body
	case nil:
		return append(dst, "{}"...), nil
	}
	return appendMarshal(dst, out)
}

func appendMarshal(dst []byte, v any) ([]byte, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return dst, err
	}
	return append(dst, b...), nil
}

// object tracks whether a member needs a leading comma.
type object struct {
	dst []byte
	n   int
	err error
}

func (o *object) key(k string) {
	if o.n > 0 {
		o.dst = append(o.dst, ',')
	}
	o.n++
	o.dst = append(o.dst, '"')
	o.dst = append(o.dst, k...)
	o.dst = append(o.dst, `":`...)
}

func (o *object) marshal(k string, v any) {
	o.key(k)
	if o.err == nil {
		o.dst, o.err = appendMarshal(o.dst, v)
	}
}

func (o *object) end() ([]byte, error) { return append(o.dst, '}'), o.err }

func begin(dst []byte) object { return object{dst: append(dst, '{')} }

func appendGetItem(dst []byte, o *GetItemOutput) ([]byte, error) {
	ob := begin(dst)
	if o.Item != nil {
		ob.key("Item")
		ob.dst = appendItem(ob.dst, o.Item)
	}
	if o.ConsumedCapacity != nil {
		ob.marshal("ConsumedCapacity", o.ConsumedCapacity)
	}
	return ob.end()
}

func appendWriteOutput(dst []byte, attrs Item, cc *ConsumedCapacity, icm *ItemCollectionMetrics) ([]byte, error) {
	ob := begin(dst)
	if len(attrs) > 0 {
		ob.key("Attributes")
		ob.dst = appendItem(ob.dst, attrs)
	}
	if cc != nil {
		ob.marshal("ConsumedCapacity", cc)
	}
	if icm != nil {
		ob.marshal("ItemCollectionMetrics", icm)
	}
	return ob.end()
}

func appendQuery(dst []byte, o *QueryOutput) ([]byte, error) {
	ob := begin(dst)
	if o.Items != nil {
		ob.key("Items")
		ob.dst = appendItems(ob.dst, o.Items)
	}
	ob.key("Count")
	ob.dst = appendInt(ob.dst, int64(o.Count))
	ob.key("ScannedCount")
	ob.dst = appendInt(ob.dst, int64(o.ScannedCount))
	if len(o.LastEvaluatedKey) > 0 {
		ob.key("LastEvaluatedKey")
		ob.dst = appendItem(ob.dst, o.LastEvaluatedKey)
	}
	if o.ConsumedCapacity != nil {
		ob.marshal("ConsumedCapacity", o.ConsumedCapacity)
	}
	return ob.end()
}

// appendExecuteStatement writes Items always, as DynamoDB does (an empty
// list for a write statement or no match).
func appendExecuteStatement(dst []byte, o *ExecuteStatementOutput) ([]byte, error) {
	ob := begin(dst)
	ob.key("Items")
	ob.dst = appendItems(ob.dst, o.Items)
	if o.NextToken != "" {
		ob.key("NextToken")
		ob.dst = appendString(ob.dst, o.NextToken)
	}
	if len(o.LastEvaluatedKey) > 0 {
		ob.key("LastEvaluatedKey")
		ob.dst = appendItem(ob.dst, o.LastEvaluatedKey)
	}
	if o.ConsumedCapacity != nil {
		ob.marshal("ConsumedCapacity", o.ConsumedCapacity)
	}
	return ob.end()
}

func appendBatchGet(dst []byte, o *BatchGetItemOutput) ([]byte, error) {
	ob := begin(dst)
	ob.key("Responses")
	ob.dst = append(ob.dst, '{')
	first := true
	for table, items := range o.Responses {
		if !first {
			ob.dst = append(ob.dst, ',')
		}
		first = false
		ob.dst = appendString(ob.dst, table)
		ob.dst = append(ob.dst, ':')
		ob.dst = appendItems(ob.dst, items)
	}
	ob.dst = append(ob.dst, '}')
	ob.key("UnprocessedKeys")
	if len(o.UnprocessedKeys) == 0 {
		ob.dst = append(ob.dst, "{}"...)
	} else if ob.err == nil {
		ob.dst, ob.err = appendMarshal(ob.dst, o.UnprocessedKeys)
	}
	if o.ConsumedCapacity != nil {
		ob.marshal("ConsumedCapacity", o.ConsumedCapacity)
	}
	return ob.end()
}

func appendBatchWrite(dst []byte, o *BatchWriteItemOutput) ([]byte, error) {
	ob := begin(dst)
	ob.key("UnprocessedItems")
	if len(o.UnprocessedItems) == 0 {
		ob.dst = append(ob.dst, "{}"...)
	} else if ob.err == nil {
		ob.dst, ob.err = appendMarshal(ob.dst, o.UnprocessedItems)
	}
	if len(o.ItemCollectionMetrics) > 0 {
		ob.marshal("ItemCollectionMetrics", o.ItemCollectionMetrics)
	}
	if o.ConsumedCapacity != nil {
		ob.marshal("ConsumedCapacity", o.ConsumedCapacity)
	}
	return ob.end()
}

func appendTransactGet(dst []byte, o *TransactGetItemsOutput) ([]byte, error) {
	ob := begin(dst)
	ob.key("Responses")
	ob.dst = append(ob.dst, '[')
	for i, r := range o.Responses {
		if i > 0 {
			ob.dst = append(ob.dst, ',')
		}
		if r.Item != nil {
			ob.dst = append(ob.dst, `{"Item":`...)
			ob.dst = appendItem(ob.dst, r.Item)
			ob.dst = append(ob.dst, '}')
		} else {
			ob.dst = append(ob.dst, "{}"...)
		}
	}
	ob.dst = append(ob.dst, ']')
	if o.ConsumedCapacity != nil {
		ob.marshal("ConsumedCapacity", o.ConsumedCapacity)
	}
	return ob.end()
}

func appendItems(dst []byte, items []Item) []byte {
	dst = append(dst, '[')
	for i, it := range items {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = appendItem(dst, it)
	}
	return append(dst, ']')
}

func appendItem(dst []byte, it Item) []byte { return attr.AppendItemJSON(dst, it) }

func appendInt(dst []byte, n int64) []byte { return strconv.AppendInt(dst, n, 10) }

const hexDigits = "0123456789abcdef"

// appendString appends s as a JSON string. Invalid UTF-8 becomes U+FFFD,
// as encoding/json does.
func appendString(dst []byte, s string) []byte {
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' {
				i++
				continue
			}
			dst = append(dst, s[start:i]...)
			switch c {
			case '"', '\\':
				dst = append(dst, '\\', c)
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			dst = append(dst, s[start:i]...)
			dst = append(dst, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			dst = append(dst, s[start:i]...)
			dst = append(dst, '\\', 'u', '2', '0', '2', hexDigits[r&0xF])
			i += size
			start = i
			continue
		}
		i += size
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}
