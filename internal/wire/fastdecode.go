package wire

import (
	"encoding/json"
	"reflect"
	"strconv"
	"unicode/utf8"

	"github.com/tenantdb/tenantdb/internal/attr"
)

// Hand-written decoders for the requests of the hot paths.
//
// encoding/json reads a request up to four times (validate, skip each
// attribute value to find its end, reflect, then attr's own parse), which
// made decoding the largest part of the server's CPU per PutItem. These
// decoders read the body once, plus attr's parse of each value.
//
// NB: they only ever succeed with exactly what Decode's encoding/json path
// would produce. They accept only members spelled exactly as DynamoDB
// spells them and of the simple shapes listed here; anything else (legacy
// parameters, unknown or oddly cased members, any syntax or type error)
// makes them give up, and Decode falls back to encoding/json, which then
// decides and words the error. FuzzFastDecode checks the two agree.

// fastDecode decodes body into in with the hand-written decoder of in's
// type, if it has one and the body stays within what it handles. When it
// gives up it leaves in zero again, for encoding/json.
//
// NB: the decoder is chosen by the input's type, not by an operation's
// name, so there is no second list of operations to keep in step with
// package dynamo's table (TestFastDecodersNameRealOps checks that each
// decoder is reached from a real operation).
func fastDecode(body []byte, in any) bool {
	r := reader{b: body}
	var ok bool
	switch in := in.(type) {
	case *PutItemInput:
		ok = r.putItem(in)
	case *GetItemInput:
		ok = r.getItem(in)
	case *DeleteItemInput:
		ok = r.deleteItem(in)
	case *UpdateItemInput:
		ok = r.updateItem(in)
	case *QueryInput:
		ok = r.query(in)
	case *BatchWriteItemInput:
		ok = r.batchWrite(in)
	case *BatchGetItemInput:
		ok = r.batchGet(in)
	case *TransactWriteItemsInput:
		ok = r.transactWrite(in)
	case *ExecuteStatementInput:
		ok = r.executeStatement(in)
	default:
		return false
	}
	if ok {
		r.ws()
		ok = r.i == len(r.b)
	}
	if !ok {
		reflect.ValueOf(in).Elem().SetZero()
	}
	return ok
}

// reader is a forward-only JSON reader. Its methods return false when the
// input is not what they handle; the caller then gives up.
type reader struct {
	b []byte
	i int
}

func (r *reader) ws() {
	for r.i < len(r.b) {
		switch r.b[r.i] {
		case ' ', '\t', '\n', '\r':
			r.i++
		default:
			return
		}
	}
}

// next skips white space and returns the next byte (0 at the end).
func (r *reader) next() byte {
	r.ws()
	if r.i < len(r.b) {
		return r.b[r.i]
	}
	return 0
}

// null consumes a null literal if one comes next.
func (r *reader) null() bool {
	if r.next() == 'n' && len(r.b)-r.i >= 4 && string(r.b[r.i:r.i+4]) == "null" {
		r.i += 4
		return true
	}
	return false
}

// object calls member for each member of an object; member reads the
// value. A null object calls nothing.
func (r *reader) object(member func(key string) bool) bool {
	if r.null() {
		return true
	}
	if r.next() != '{' {
		return false
	}
	r.i++
	if r.next() == '}' {
		r.i++
		return true
	}
	for {
		if r.next() != '"' {
			return false
		}
		k, ok := r.str()
		if !ok || r.next() != ':' {
			return false
		}
		r.i++
		if !member(k) {
			return false
		}
		switch r.next() {
		case ',':
			r.i++
		case '}':
			r.i++
			return true
		default:
			return false
		}
	}
}

// fields is object for a structure: a member given twice makes it give
// up, because encoding/json then merges into what the first one set.
func (r *reader) fields(member func(key string) bool) bool {
	var seen [16]string
	n := 0
	return r.object(func(k string) bool {
		for _, s := range seen[:n] {
			if s == k {
				return false
			}
		}
		if n == len(seen) {
			return false
		}
		seen[n] = k
		n++
		return member(k)
	})
}

// array calls elem for each element of an array. A null array calls
// nothing.
func (r *reader) array(elem func() bool) bool {
	if r.null() {
		return true
	}
	if r.next() != '[' {
		return false
	}
	r.i++
	if r.next() == ']' {
		r.i++
		return true
	}
	for {
		if !elem() {
			return false
		}
		switch r.next() {
		case ',':
			r.i++
		case ']':
			r.i++
			return true
		default:
			return false
		}
	}
}

// str reads a string. Plain ASCII is sliced out directly; escapes and
// other UTF-8 go through encoding/json, so the result is exactly its.
func (r *reader) str() (string, bool) {
	if r.next() != '"' {
		return "", false
	}
	start := r.i + 1
	for j := start; j < len(r.b); j++ {
		c := r.b[j]
		if c == '"' {
			r.i = j + 1
			return string(r.b[start:j]), true
		}
		if c == '\\' || c < 0x20 || c >= utf8.RuneSelf {
			break
		}
	}
	end := r.stringEnd(start)
	if end < 0 {
		return "", false
	}
	var s string
	if err := json.Unmarshal(r.b[r.i:end], &s); err != nil {
		return "", false
	}
	r.i = end
	return s, true
}

// stringEnd returns the index after the closing quote of the string whose
// contents start at start, or -1.
func (r *reader) stringEnd(start int) int {
	for j := start; j < len(r.b); j++ {
		switch c := r.b[j]; {
		case c == '\\':
			j++
		case c == '"':
			return j + 1
		case c < 0x20:
			return -1
		}
	}
	return -1
}

// setStr reads a string into *dst; null leaves *dst alone.
func (r *reader) setStr(dst *string) bool {
	if r.null() {
		return true
	}
	s, ok := r.str()
	*dst = s
	return ok
}

// strPtr reads a string or null.
func (r *reader) strPtr(dst **string) bool {
	if r.null() {
		*dst = nil
		return true
	}
	s, ok := r.str()
	*dst = &s
	return ok
}

func (r *reader) boolPtr(dst **bool) bool {
	if r.null() {
		*dst = nil
		return true
	}
	var b bool
	switch {
	case len(r.b)-r.i >= 4 && string(r.b[r.i:r.i+4]) == "true":
		b, r.i = true, r.i+4
	case len(r.b)-r.i >= 5 && string(r.b[r.i:r.i+5]) == "false":
		b, r.i = false, r.i+5
	default:
		return false
	}
	*dst = &b
	return true
}

// int32Ptr reads an integer that fits in 32 bits, or null.
func (r *reader) int32Ptr(dst **int32) bool {
	if r.null() {
		*dst = nil
		return true
	}
	start := r.i
	for r.i < len(r.b) && (r.b[r.i] == '-' || r.b[r.i] >= '0' && r.b[r.i] <= '9') {
		r.i++
	}
	if r.i < len(r.b) {
		switch r.b[r.i] {
		case '.', 'e', 'E', '+':
			return false // a fraction or exponent: encoding/json words the error
		}
	}
	tok := string(r.b[start:r.i])
	if len(tok) > 1 && (tok[0] == '0' || tok[:2] == "-0") {
		return false // leading zeros are not JSON
	}
	n, err := strconv.ParseInt(tok, 10, 32)
	if err != nil {
		return false
	}
	v := int32(n)
	*dst = &v
	return true
}

// strings reads an array of strings.
func (r *reader) strings(dst *[]string) bool {
	if r.null() {
		*dst = nil
		return true
	}
	out := []string{}
	ok := r.array(func() bool {
		s, ok := r.str()
		out = append(out, s)
		return ok
	})
	*dst = out
	return ok
}

// names reads ExpressionAttributeNames.
func (r *reader) names(dst *map[string]string) bool {
	if r.null() {
		*dst = nil
		return true
	}
	m := *dst
	if m == nil {
		m = map[string]string{}
	}
	ok := r.object(func(k string) bool {
		var v string
		if !r.setStr(&v) {
			return false
		}
		m[k] = v
		return true
	})
	*dst = m
	return ok
}

// item reads an attribute map (an item, a key, ExpressionAttributeValues):
// each value is decoded by attr's parser, as attr.Value.UnmarshalJSON
// does under encoding/json.
func (r *reader) item(dst *Item) bool {
	if r.null() {
		*dst = nil
		return true
	}
	it := *dst
	if it == nil {
		it = Item{}
	}
	ok := r.object(func(k string) bool {
		// One pass: attr parses the value in place (what it accepts is
		// valid JSON, so no separate syntax check is needed).
		v, n, err := attr.ParseValuePrefix(r.b[r.i:])
		if err != nil {
			return false
		}
		r.i += n
		it[k] = v
		return true
	})
	*dst = it
	return ok
}

// values reads a list of attribute values (PartiQL's Parameters).
func (r *reader) values(dst *[]attr.Value) bool {
	if r.null() {
		*dst = nil
		return true
	}
	out := []attr.Value{}
	ok := r.array(func() bool {
		r.ws()
		v, n, err := attr.ParseValuePrefix(r.b[r.i:])
		if err != nil {
			return false
		}
		r.i += n
		out = append(out, v)
		return true
	})
	*dst = out
	return ok
}

// skip moves past one JSON value, checking its syntax.
func (r *reader) skip(depth int) bool {
	if depth > 10000 {
		return false
	}
	switch c := r.next(); {
	case c == '{':
		return r.object(func(string) bool { return r.skip(depth + 1) })
	case c == '[':
		return r.array(func() bool { return r.skip(depth + 1) })
	case c == '"':
		end := r.stringEnd(r.i + 1)
		if end < 0 {
			return false
		}
		r.i = end
		return true
	case c == 't':
		return r.literal("true")
	case c == 'f':
		return r.literal("false")
	case c == 'n':
		return r.literal("null")
	case c == '-' || c >= '0' && c <= '9':
		return r.number()
	}
	return false
}

func (r *reader) literal(lit string) bool {
	if len(r.b)-r.i >= len(lit) && string(r.b[r.i:r.i+len(lit)]) == lit {
		r.i += len(lit)
		return true
	}
	return false
}

// number moves past a JSON number.
func (r *reader) number() bool {
	i := r.i
	if i < len(r.b) && r.b[i] == '-' {
		i++
	}
	digits := func() int {
		n := 0
		for i < len(r.b) && r.b[i] >= '0' && r.b[i] <= '9' {
			i++
			n++
		}
		return n
	}
	start := i
	if n := digits(); n == 0 || n > 1 && r.b[start] == '0' {
		return false
	}
	if i < len(r.b) && r.b[i] == '.' {
		i++
		if digits() == 0 {
			return false
		}
	}
	if i < len(r.b) && (r.b[i] == 'e' || r.b[i] == 'E') {
		i++
		if i < len(r.b) && (r.b[i] == '+' || r.b[i] == '-') {
			i++
		}
		if digits() == 0 {
			return false
		}
	}
	r.i = i
	return true
}

func (r *reader) putItem(in *PutItemInput) bool {
	return r.fields(func(k string) bool {
		switch k {
		case "TableName":
			return r.setStr(&in.TableName)
		case "Item":
			return r.item(&in.Item)
		case "ConditionExpression":
			return r.strPtr(&in.ConditionExpression)
		case "ExpressionAttributeNames":
			return r.names(&in.ExpressionAttributeNames)
		case "ExpressionAttributeValues":
			return r.item(&in.ExpressionAttributeValues)
		case "ReturnValues":
			return r.setStr(&in.ReturnValues)
		case "ReturnConsumedCapacity":
			return r.setStr(&in.ReturnConsumedCapacity)
		case "ReturnItemCollectionMetrics":
			return r.setStr(&in.ReturnItemCollectionMetrics)
		case "ReturnValuesOnConditionCheckFailure":
			return r.setStr(&in.ReturnValuesOnConditionCheckFailure)
		}
		return false
	})
}

func (r *reader) getItem(in *GetItemInput) bool {
	return r.fields(func(k string) bool {
		switch k {
		case "TableName":
			return r.setStr(&in.TableName)
		case "Key":
			return r.item(&in.Key)
		case "AttributesToGet":
			return r.strings(&in.AttributesToGet)
		case "ConsistentRead":
			return r.boolPtr(&in.ConsistentRead)
		case "ProjectionExpression":
			return r.strPtr(&in.ProjectionExpression)
		case "ExpressionAttributeNames":
			return r.names(&in.ExpressionAttributeNames)
		case "ReturnConsumedCapacity":
			return r.setStr(&in.ReturnConsumedCapacity)
		}
		return false
	})
}

func (r *reader) deleteItem(in *DeleteItemInput) bool {
	return r.fields(func(k string) bool {
		switch k {
		case "TableName":
			return r.setStr(&in.TableName)
		case "Key":
			return r.item(&in.Key)
		case "ConditionExpression":
			return r.strPtr(&in.ConditionExpression)
		case "ExpressionAttributeNames":
			return r.names(&in.ExpressionAttributeNames)
		case "ExpressionAttributeValues":
			return r.item(&in.ExpressionAttributeValues)
		case "ReturnValues":
			return r.setStr(&in.ReturnValues)
		case "ReturnConsumedCapacity":
			return r.setStr(&in.ReturnConsumedCapacity)
		case "ReturnItemCollectionMetrics":
			return r.setStr(&in.ReturnItemCollectionMetrics)
		case "ReturnValuesOnConditionCheckFailure":
			return r.setStr(&in.ReturnValuesOnConditionCheckFailure)
		}
		return false
	})
}

func (r *reader) updateItem(in *UpdateItemInput) bool {
	return r.fields(func(k string) bool {
		switch k {
		case "TableName":
			return r.setStr(&in.TableName)
		case "Key":
			return r.item(&in.Key)
		case "UpdateExpression":
			return r.strPtr(&in.UpdateExpression)
		case "ConditionExpression":
			return r.strPtr(&in.ConditionExpression)
		case "ExpressionAttributeNames":
			return r.names(&in.ExpressionAttributeNames)
		case "ExpressionAttributeValues":
			return r.item(&in.ExpressionAttributeValues)
		case "ReturnValues":
			return r.setStr(&in.ReturnValues)
		case "ReturnConsumedCapacity":
			return r.setStr(&in.ReturnConsumedCapacity)
		case "ReturnItemCollectionMetrics":
			return r.setStr(&in.ReturnItemCollectionMetrics)
		case "ReturnValuesOnConditionCheckFailure":
			return r.setStr(&in.ReturnValuesOnConditionCheckFailure)
		}
		return false
	})
}

func (r *reader) query(in *QueryInput) bool {
	return r.fields(func(k string) bool {
		switch k {
		case "TableName":
			return r.setStr(&in.TableName)
		case "IndexName":
			return r.strPtr(&in.IndexName)
		case "Select":
			return r.setStr(&in.Select)
		case "AttributesToGet":
			return r.strings(&in.AttributesToGet)
		case "Limit":
			return r.int32Ptr(&in.Limit)
		case "ConsistentRead":
			return r.boolPtr(&in.ConsistentRead)
		case "ScanIndexForward":
			return r.boolPtr(&in.ScanIndexForward)
		case "ExclusiveStartKey":
			return r.item(&in.ExclusiveStartKey)
		case "ReturnConsumedCapacity":
			return r.setStr(&in.ReturnConsumedCapacity)
		case "ProjectionExpression":
			return r.strPtr(&in.ProjectionExpression)
		case "FilterExpression":
			return r.strPtr(&in.FilterExpression)
		case "KeyConditionExpression":
			return r.strPtr(&in.KeyConditionExpression)
		case "ExpressionAttributeNames":
			return r.names(&in.ExpressionAttributeNames)
		case "ExpressionAttributeValues":
			return r.item(&in.ExpressionAttributeValues)
		}
		return false
	})
}

func (r *reader) batchWrite(in *BatchWriteItemInput) bool {
	return r.fields(func(k string) bool {
		switch k {
		case "RequestItems":
			if r.null() {
				in.RequestItems = nil
				return true
			}
			if in.RequestItems == nil {
				in.RequestItems = map[string][]WriteRequest{}
			}
			return r.object(func(table string) bool {
				if r.null() {
					in.RequestItems[table] = nil
					return true
				}
				reqs := []WriteRequest{}
				ok := r.array(func() bool {
					var wr WriteRequest
					ok := r.fields(func(k string) bool {
						switch k {
						case "PutRequest":
							if r.null() {
								wr.PutRequest = nil
								return true
							}
							if wr.PutRequest == nil {
								wr.PutRequest = &PutRequest{}
							}
							return r.fields(func(k string) bool { return k == "Item" && r.item(&wr.PutRequest.Item) })
						case "DeleteRequest":
							if r.null() {
								wr.DeleteRequest = nil
								return true
							}
							if wr.DeleteRequest == nil {
								wr.DeleteRequest = &DeleteRequest{}
							}
							return r.fields(func(k string) bool { return k == "Key" && r.item(&wr.DeleteRequest.Key) })
						}
						return false
					})
					reqs = append(reqs, wr)
					return ok
				})
				in.RequestItems[table] = reqs
				return ok
			})
		case "ReturnConsumedCapacity":
			return r.setStr(&in.ReturnConsumedCapacity)
		case "ReturnItemCollectionMetrics":
			return r.setStr(&in.ReturnItemCollectionMetrics)
		}
		return false
	})
}

func (r *reader) batchGet(in *BatchGetItemInput) bool {
	return r.fields(func(k string) bool {
		switch k {
		case "RequestItems":
			if r.null() {
				in.RequestItems = nil
				return true
			}
			if in.RequestItems == nil {
				in.RequestItems = map[string]KeysAndAttributes{}
			}
			return r.object(func(table string) bool {
				var ka KeysAndAttributes
				ok := r.fields(func(k string) bool {
					switch k {
					case "Keys":
						if r.null() {
							ka.Keys = nil
							return true
						}
						ka.Keys = []Item{}
						return r.array(func() bool {
							var it Item
							ok := r.item(&it)
							ka.Keys = append(ka.Keys, it)
							return ok
						})
					case "AttributesToGet":
						return r.strings(&ka.AttributesToGet)
					case "ConsistentRead":
						return r.boolPtr(&ka.ConsistentRead)
					case "ProjectionExpression":
						return r.strPtr(&ka.ProjectionExpression)
					case "ExpressionAttributeNames":
						return r.names(&ka.ExpressionAttributeNames)
					}
					return false
				})
				in.RequestItems[table] = ka
				return ok
			})
		case "ReturnConsumedCapacity":
			return r.setStr(&in.ReturnConsumedCapacity)
		}
		return false
	})
}

func (r *reader) transactWrite(in *TransactWriteItemsInput) bool {
	return r.fields(func(k string) bool {
		switch k {
		case "TransactItems":
			if r.null() {
				in.TransactItems = nil
				return true
			}
			in.TransactItems = []TransactWriteItem{}
			return r.array(func() bool {
				var ti TransactWriteItem
				ok := r.fields(func(k string) bool { return r.transactWriteItem(&ti, k) })
				in.TransactItems = append(in.TransactItems, ti)
				return ok
			})
		case "ReturnConsumedCapacity":
			return r.setStr(&in.ReturnConsumedCapacity)
		case "ReturnItemCollectionMetrics":
			return r.setStr(&in.ReturnItemCollectionMetrics)
		case "ClientRequestToken":
			return r.strPtr(&in.ClientRequestToken)
		}
		return false
	})
}

// transactWriteItem reads member k of one TransactItems entry.
func (r *reader) transactWriteItem(ti *TransactWriteItem, k string) bool {
	// common reads the members every kind of entry has.
	common := func(k string, table *string, cond **string, names *map[string]string, values *Item, rv *string) (bool, bool) {
		switch k {
		case "TableName":
			return r.setStr(table), true
		case "ConditionExpression":
			return r.strPtr(cond), true
		case "ExpressionAttributeNames":
			return r.names(names), true
		case "ExpressionAttributeValues":
			return r.item(values), true
		case "ReturnValuesOnConditionCheckFailure":
			return r.setStr(rv), true
		}
		return false, false
	}
	switch k {
	case "Put":
		if r.null() {
			ti.Put = nil
			return true
		}
		if ti.Put == nil {
			ti.Put = &TransactPut{}
		}
		p := ti.Put
		return r.fields(func(k string) bool {
			if k == "Item" {
				return r.item(&p.Item)
			}
			ok, known := common(k, &p.TableName, &p.ConditionExpression, &p.ExpressionAttributeNames, &p.ExpressionAttributeValues, &p.ReturnValuesOnConditionCheckFailure)
			return known && ok
		})
	case "Delete":
		if r.null() {
			ti.Delete = nil
			return true
		}
		if ti.Delete == nil {
			ti.Delete = &TransactDelete{}
		}
		d := ti.Delete
		return r.fields(func(k string) bool {
			if k == "Key" {
				return r.item(&d.Key)
			}
			ok, known := common(k, &d.TableName, &d.ConditionExpression, &d.ExpressionAttributeNames, &d.ExpressionAttributeValues, &d.ReturnValuesOnConditionCheckFailure)
			return known && ok
		})
	case "Update":
		if r.null() {
			ti.Update = nil
			return true
		}
		if ti.Update == nil {
			ti.Update = &TransactUpdate{}
		}
		u := ti.Update
		return r.fields(func(k string) bool {
			switch k {
			case "Key":
				return r.item(&u.Key)
			case "UpdateExpression":
				return r.setStr(&u.UpdateExpression)
			}
			ok, known := common(k, &u.TableName, &u.ConditionExpression, &u.ExpressionAttributeNames, &u.ExpressionAttributeValues, &u.ReturnValuesOnConditionCheckFailure)
			return known && ok
		})
	case "ConditionCheck":
		if r.null() {
			ti.ConditionCheck = nil
			return true
		}
		if ti.ConditionCheck == nil {
			ti.ConditionCheck = &ConditionCheck{}
		}
		c := ti.ConditionCheck
		return r.fields(func(k string) bool {
			switch k {
			case "Key":
				return r.item(&c.Key)
			case "ConditionExpression":
				return r.setStr(&c.ConditionExpression)
			case "TableName":
				return r.setStr(&c.TableName)
			case "ExpressionAttributeNames":
				return r.names(&c.ExpressionAttributeNames)
			case "ExpressionAttributeValues":
				return r.item(&c.ExpressionAttributeValues)
			case "ReturnValuesOnConditionCheckFailure":
				return r.setStr(&c.ReturnValuesOnConditionCheckFailure)
			}
			return false
		})
	}
	return false
}

func (r *reader) executeStatement(in *ExecuteStatementInput) bool {
	return r.fields(func(k string) bool {
		switch k {
		case "Statement":
			return r.setStr(&in.Statement)
		case "Parameters":
			return r.values(&in.Parameters)
		case "ConsistentRead":
			return r.boolPtr(&in.ConsistentRead)
		case "NextToken":
			return r.strPtr(&in.NextToken)
		case "Limit":
			return r.int32Ptr(&in.Limit)
		case "ReturnConsumedCapacity":
			return r.setStr(&in.ReturnConsumedCapacity)
		case "ReturnValuesOnConditionCheckFailure":
			return r.setStr(&in.ReturnValuesOnConditionCheckFailure)
		}
		return false
	})
}
