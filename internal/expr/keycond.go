package expr

import (
	"github.com/tenantdb/tenantdb/internal/apierr"
	"github.com/tenantdb/tenantdb/internal/attr"
)

// A KeyConditionExpression is parsed and validated as a condition first
// (so it gets the same syntax, placeholder and reserved-word errors, with
// the KeyConditionExpression label), then its shape is checked: a
// conjunction of at most one condition per key attribute, each a
// comparison, BETWEEN or begins_with on a top-level attribute. Shape
// errors carry no label, as in DynamoDB.

// keyTerm is one attribute's condition.
type keyTerm struct {
	name   string
	op     KeyOp
	values []attr.Value
}

var keyOps = map[string]KeyOp{"=": KeyEQ, "<": KeyLT, "<=": KeyLE, ">": KeyGT, ">=": KeyGE}

// flipped is the operator with its operands swapped (:v < k is k > :v).
var flipped = map[KeyOp]KeyOp{KeyEQ: KeyEQ, KeyLT: KeyGT, KeyLE: KeyGE, KeyGT: KeyLT, KeyGE: KeyLE}

// KeyCondition compiles a KeyConditionExpression against the key schema
// of the table or index queried (rangeKey "" when it has none). Errors are
// Validation errors: "Invalid KeyConditionExpression: ..." for syntax and
// placeholders, and DynamoDB's unlabelled messages for the shape, such as
// "Query condition missed key schema element: pk" and "Query key condition
// not supported". Value types are not checked against the schema.
func (p *Params) KeyCondition(s string, hashKey, rangeKey string) (*KeyCondition, error) {
	_, n, err := p.compileCondition(labelKey, s, false)
	if err != nil {
		return nil, err
	}
	var terms []keyTerm
	if msg := p.keyTerms(n, &terms); msg != "" {
		return nil, apierr.Validationf("%s", msg)
	}
	return keySchemaCheck(terms, hashKey, rangeKey)
}

// keyTerms flattens the AND tree of n into terms, or returns the message
// for the first disallowed construct.
func (p *Params) keyTerms(n node, terms *[]keyTerm) string {
	for {
		paren, ok := n.(*parenNode)
		if !ok {
			break
		}
		n = paren.x
	}
	switch n := n.(type) {
	case *logicNode:
		if n.op == "OR" {
			return "Invalid operator used in KeyConditionExpression: OR"
		}
		if msg := p.keyTerms(n.l, terms); msg != "" {
			return msg
		}
		return p.keyTerms(n.r, terms)
	case *notNode:
		return "Invalid operator used in KeyConditionExpression: NOT"
	case *inNode:
		return "Invalid operator used in KeyConditionExpression: IN"
	case *compareNode:
		if n.op == "<>" {
			return "Invalid operator used in KeyConditionExpression: <>"
		}
		return p.keyTerm(keyOps[n.op], "", []node{n.l, n.r}, terms)
	case *betweenNode:
		if _, ok := unparenNode(n.x).(*pathNode); !ok {
			return "Invalid condition in KeyConditionExpression: BETWEEN operator must have the key attribute as its first operand"
		}
		return p.keyTerm(KeyBetween, "", []node{n.x, n.lo, n.hi}, terms)
	case *callNode:
		switch n.name {
		case "begins_with":
			if _, ok := unparenNode(n.args[0]).(*pathNode); !ok {
				return "Invalid condition in KeyConditionExpression: begins_with operator must have the key attribute as its first operand"
			}
			return p.keyTerm(KeyBeginsWith, n.name, n.args, terms)
		case "size":
			return "KeyConditionExpressions cannot contain nested operations"
		default:
			return "Invalid operator used in KeyConditionExpression: " + n.name
		}
	}
	return "Query key condition not supported"
}

func unparenNode(n node) node {
	for {
		p, ok := n.(*parenNode)
		if !ok {
			return n
		}
		n = p.x
	}
}

// keyTerm turns one comparison into a term: exactly one operand is a
// top-level attribute, the others are values.
func (p *Params) keyTerm(op KeyOp, fn string, args []node, terms *[]keyTerm) string {
	t := keyTerm{op: op}
	attrIx := -1
	for i, a := range args {
		switch a := unparenNode(a).(type) {
		case *pathNode:
			if attrIx >= 0 {
				return "Invalid condition in KeyConditionExpression: Multiple attribute names used in one condition"
			}
			if len(a.elems) > 1 {
				return "KeyConditionExpressions cannot have conditions on nested attributes"
			}
			attrIx = i
			t.name = a.elems[0].name
			if a.elems[0].isPlaceholder() {
				t.name = p.Names[t.name]
			}
		case *valueNode:
			t.values = append(t.values, p.Values[a.name])
		case *callNode:
			return "KeyConditionExpressions cannot contain nested operations"
		}
	}
	if attrIx < 0 {
		return "Invalid condition in KeyConditionExpression: No key attribute specified"
	}
	for _, prev := range *terms {
		if prev.name == t.name {
			return "KeyConditionExpressions must only contain one condition per key"
		}
	}
	if attrIx != 0 && op != KeyBetween && fn == "" {
		t.op = flipped[op]
	}
	*terms = append(*terms, t)
	return ""
}

// keySchemaCheck matches terms against the key schema with DynamoDB's
// messages and order of checks.
func keySchemaCheck(terms []keyTerm, hashKey, rangeKey string) (*KeyCondition, error) {
	if len(terms) > 2 {
		return nil, apierr.Validationf("Conditions can be of length 1 or 2 only")
	}
	if rangeKey == "" && len(terms) > 1 {
		return nil, apierr.Validationf("Query key condition not supported")
	}
	var hash, rng *keyTerm
	for i := range terms {
		switch terms[i].name {
		case hashKey:
			hash = &terms[i]
		case rangeKey:
			rng = &terms[i]
		}
	}
	if hash == nil {
		return nil, apierr.Validationf("Query condition missed key schema element: %s", hashKey)
	}
	if hash.op != KeyEQ {
		return nil, apierr.Validationf("Query key condition not supported")
	}
	kc := &KeyCondition{HashName: hashKey, HashValue: hash.values[0]}
	if rng == nil {
		if len(terms) > 1 {
			return nil, apierr.Validationf("Query condition missed key schema element: %s", rangeKey)
		}
		return kc, nil
	}
	kc.RangeName, kc.RangeOp, kc.RangeValues = rangeKey, rng.op, rng.values
	return kc, nil
}
