package expr

import (
	"github.com/tenantdb/tenantdb/internal/apierr"
	"github.com/tenantdb/tenantdb/internal/attr"
	"github.com/tenantdb/tenantdb/internal/wire"
)

// The legacy (pre-expression) parameters compile to the same evaluable
// forms as expressions: Expected, QueryFilter and ScanFilter to a cond,
// KeyConditions to a KeyCondition, AttributesToGet to a projection and
// AttributeUpdates to a compiledUpdate. Attribute names in them are plain
// top-level names: no placeholders, no paths, no reserved words.

// The operators of the legacy Condition type.
const (
	opEQ          = "EQ"
	opNE          = "NE"
	opLE          = "LE"
	opLT          = "LT"
	opGE          = "GE"
	opGT          = "GT"
	opNotNull     = "NOT_NULL"
	opNull        = "NULL"
	opContains    = "CONTAINS"
	opNotContains = "NOT_CONTAINS"
	opBeginsWith  = "BEGINS_WITH"
	opIn          = "IN"
	opBetween     = "BETWEEN"
)

// legacyArgs is how many values each operator takes (-1: one or more).
var legacyArgs = map[string]int{
	opEQ: 1, opNE: 1, opLE: 1, opLT: 1, opGE: 1, opGT: 1,
	opNotNull: 0, opNull: 0,
	opContains: 1, opNotContains: 1, opBeginsWith: 1,
	opIn: -1, opBetween: 2,
}

// legacyTypes restricts the value types of some operators; EQ and NE take
// any type.
var legacyTypes = map[string][]attr.Type{
	opLE: {attr.S, attr.N, attr.B}, opLT: {attr.S, attr.N, attr.B},
	opGE: {attr.S, attr.N, attr.B}, opGT: {attr.S, attr.N, attr.B},
	opContains: {attr.S, attr.N, attr.B}, opNotContains: {attr.S, attr.N, attr.B},
	opBeginsWith: {attr.S, attr.B},
	opIn:         {attr.S, attr.N, attr.B}, opBetween: {attr.S, attr.N, attr.B},
}

func badOperator(op string) error {
	return apierr.Validationf("1 validation error detected: Value '%s' at 'comparisonOperator' failed to satisfy constraint: Member must satisfy enum value set: [IN, NULL, BETWEEN, LT, NOT_CONTAINS, EQ, GT, NOT_NULL, NE, LE, BEGINS_WITH, GE, CONTAINS]", op)
}

func badArgCount(op string) error {
	return apierr.Validationf("One or more parameter values were invalid: Invalid number of argument(s) for the %s ComparisonOperator", op)
}

// checkLegacyValues validates the values of one legacy condition; countErr
// builds the error for a wrong number of values.
func checkLegacyValues(op string, vals []attr.Value, countErr func(op string) error) error {
	want, ok := legacyArgs[op]
	if !ok {
		return badOperator(op)
	}
	if want >= 0 && len(vals) != want || want < 0 && len(vals) == 0 {
		return countErr(op)
	}
	for _, v := range vals {
		if v.Type == attr.Invalid {
			return apierr.Validationf("One or more parameter values were invalid: An AttributeValue may not contain an empty value")
		}
		if err := attr.ValidateSet(v); err != nil {
			return err
		}
	}
	for _, v := range vals[min(1, len(vals)):] {
		if v.Type != vals[0].Type {
			return apierr.Validationf("One or more parameter values were invalid: AttributeValues inside AttributeValueList must be of same type")
		}
	}
	if types, ok := legacyTypes[op]; ok {
		for _, v := range vals {
			valid := false
			for _, t := range types {
				valid = valid || v.Type == t
			}
			if !valid {
				return apierr.Validationf("One or more parameter values were invalid: ComparisonOperator %s is not valid for %s AttributeValue type", op, v.Type)
			}
		}
	}
	if op == opBetween {
		if c, ok := attr.Compare(vals[0], vals[1]); ok && c > 0 {
			return apierr.Validationf("The BETWEEN condition was provided a range where the lower bound is greater than the upper bound")
		}
	}
	return nil
}

// legacyCond builds the condition "name op vals".
func legacyCond(name, op string, vals []attr.Value) cond {
	x := pathOperand{NamePath(name)}
	c := func(i int) operand { return constOperand{vals[i]} }
	switch op {
	case opEQ:
		return cmpCond{op: "=", l: x, r: c(0)}
	case opNE:
		return cmpCond{op: "<>", l: x, r: c(0)}
	case opLE:
		return cmpCond{op: "<=", l: x, r: c(0)}
	case opLT:
		return cmpCond{op: "<", l: x, r: c(0)}
	case opGE:
		return cmpCond{op: ">=", l: x, r: c(0)}
	case opGT:
		return cmpCond{op: ">", l: x, r: c(0)}
	case opNotNull:
		return existsCond{path: x.path}
	case opNull:
		return existsCond{path: x.path, not: true}
	case opContains:
		return containsCond{x, c(0)}
	case opNotContains:
		// NB: unlike NE, NOT_CONTAINS is false for a missing attribute.
		return andCond{existsCond{path: x.path}, notCond{containsCond{x, c(0)}}}
	case opBeginsWith:
		return beginsCond{x, c(0)}
	case opIn:
		list := make([]operand, len(vals))
		for i := range vals {
			list[i] = c(i)
		}
		return inCond{x: x, list: list}
	default: // BETWEEN
		return betweenCond{x, c(0), c(1)}
	}
}

// combine joins conditions, in attribute name order so that the result
// does not depend on map iteration, with AND or OR.
func combine(conds []cond, conditionalOp string) (Condition, error) {
	or := false
	switch conditionalOp {
	case "", "AND":
	case "OR":
		or = true
	default:
		return nil, apierr.Validationf("1 validation error detected: Value '%s' at 'conditionalOperator' failed to satisfy constraint: Member must satisfy enum value set: [AND, OR]", conditionalOp)
	}
	if conditionalOp != "" && len(conds) < 2 {
		return nil, apierr.Validationf("ConditionalOperator can only be used when Filter or Expected has two or more elements")
	}
	if len(conds) == 0 {
		return &compiledCondition{root: trueCond{}}, nil
	}
	root := conds[0]
	for _, c := range conds[1:] {
		if or {
			root = orCond{root, c}
		} else {
			root = andCond{root, c}
		}
	}
	return &compiledCondition{root: root}, nil
}

// LegacyExpected compiles the Expected parameter of PutItem, UpdateItem and
// DeleteItem with its ConditionalOperator ("", "AND" or "OR"; given with
// fewer than two conditions it is an error, as in DynamoDB). Both the
// Value/Exists form and the ComparisonOperator form are accepted. An empty
// map yields a condition that is always true.
func LegacyExpected(exp map[string]wire.ExpectedAttributeValue, op string) (Condition, error) {
	var conds []cond
	for _, name := range sortedKeys(exp) {
		e := exp[name]
		if e.Value != nil && e.AttributeValueList != nil {
			return nil, apierr.Validationf("One or more parameter values were invalid: Value and AttributeValueList cannot be used together for Attribute: %s", name)
		}
		if e.ComparisonOperator != "" {
			if e.Exists != nil {
				return nil, apierr.Validationf("One or more parameter values were invalid: Exists and ComparisonOperator cannot be used together for Attribute: %s", name)
			}
			vals := e.AttributeValueList
			if e.Value != nil {
				vals = []attr.Value{*e.Value}
			}
			if _, ok := legacyArgs[e.ComparisonOperator]; !ok {
				return nil, badOperator(e.ComparisonOperator)
			}
			if e.ComparisonOperator != opNull && e.ComparisonOperator != opNotNull && e.Value == nil && e.AttributeValueList == nil {
				return nil, apierr.Validationf("One or more parameter values were invalid: Value or AttributeValueList must be used with ComparisonOperator: %s for Attribute: %s", e.ComparisonOperator, name)
			}
			if err := checkLegacyValues(e.ComparisonOperator, vals, badArgCount); err != nil {
				return nil, err
			}
			conds = append(conds, legacyCond(name, e.ComparisonOperator, vals))
			continue
		}
		if e.AttributeValueList != nil {
			return nil, apierr.Validationf("One or more parameter values were invalid: AttributeValueList can only be used with a ComparisonOperator for Attribute: %s", name)
		}
		exists := e.Exists == nil || *e.Exists
		switch {
		case exists && e.Value == nil:
			state := "null"
			if e.Exists != nil {
				state = "true"
			}
			return nil, apierr.Validationf("One or more parameter values were invalid: Value must be provided when Exists is %s for Attribute: %s", state, name)
		case !exists && e.Value != nil:
			return nil, apierr.Validationf("One or more parameter values were invalid: Value cannot be used when Exists is false for Attribute: %s", name)
		case exists:
			if err := checkLegacyValues(opEQ, []attr.Value{*e.Value}, badArgCount); err != nil {
				return nil, err
			}
			conds = append(conds, legacyCond(name, opEQ, []attr.Value{*e.Value}))
		default:
			conds = append(conds, existsCond{path: NamePath(name), not: true})
		}
	}
	return combine(conds, op)
}

// badFilterArgCount is the count error of QueryFilter, ScanFilter and
// KeyConditions: BETWEEN has its own message.
func badFilterArgCount(op string) error {
	if op == opBetween {
		return apierr.Validationf("The attempted filter operation is not supported for the provided filter argument count")
	}
	return badArgCount(op)
}

// LegacyFilter compiles QueryFilter or ScanFilter with its
// ConditionalOperator (see LegacyExpected). An empty map yields a
// condition that is always true.
func LegacyFilter(conds map[string]wire.Condition, op string) (Condition, error) {
	var out []cond
	for _, name := range sortedKeys(conds) {
		c := conds[name]
		if err := checkLegacyValues(c.ComparisonOperator, c.AttributeValueList, badFilterArgCount); err != nil {
			return nil, err
		}
		out = append(out, legacyCond(name, c.ComparisonOperator, c.AttributeValueList))
	}
	return combine(out, op)
}

// LegacyKeyConditions compiles Query's KeyConditions against the key
// schema queried (rangeKey "" when there is none), with the same checks
// and messages as KeyCondition. Value types are not checked against the
// schema.
func LegacyKeyConditions(conds map[string]wire.Condition, hashKey, rangeKey string) (*KeyCondition, error) {
	if len(conds) != 1 && len(conds) != 2 {
		return nil, apierr.Validationf("Conditions can be of length 1 or 2 only")
	}
	var terms []keyTerm
	for _, name := range sortedKeys(conds) {
		c := conds[name]
		if err := checkLegacyValues(c.ComparisonOperator, c.AttributeValueList, badFilterArgCount); err != nil {
			return nil, err
		}
		var op KeyOp
		switch c.ComparisonOperator {
		case opEQ:
			op = KeyEQ
		case opLE:
			op = KeyLE
		case opLT:
			op = KeyLT
		case opGE:
			op = KeyGE
		case opGT:
			op = KeyGT
		case opBeginsWith:
			op = KeyBeginsWith
		case opBetween:
			op = KeyBetween
		default:
			if name == hashKey || name == rangeKey {
				return nil, apierr.Validationf("Attempted conditional constraint is not an indexable operation")
			}
		}
		terms = append(terms, keyTerm{name: name, op: op, values: c.AttributeValueList})
	}
	// Hash key first, so that its problems are reported before the range
	// key's.
	for i := range terms {
		if terms[i].name == hashKey {
			terms[0], terms[i] = terms[i], terms[0]
		}
	}
	return keySchemaCheck(terms, hashKey, rangeKey)
}

// LegacyAttributesToGet compiles AttributesToGet into a projection of
// top-level attributes.
func LegacyAttributesToGet(names []string) (Projection, error) {
	if len(names) == 0 {
		return nil, apierr.Validationf("1 validation error detected: Value '[]' at 'attributesToGet' failed to satisfy constraint: Member must have length greater than or equal to 1")
	}
	seen := make(map[string]bool, len(names))
	paths := make([]Path, len(names))
	for i, n := range names {
		if seen[n] {
			return nil, apierr.Validationf("One or more parameter values were invalid: Duplicate value in attribute name: %s", n)
		}
		seen[n] = true
		paths[i] = NamePath(n)
	}
	return newProjection(paths), nil
}

// LegacyAttributeUpdates compiles UpdateItem's AttributeUpdates. Actions
// are PUT (the default), DELETE (without a value: remove the attribute;
// with a set: remove its members) and ADD (numbers, sets, and lists,
// which are appended to).
func LegacyAttributeUpdates(upd map[string]wire.AttributeValueUpdate) (Update, error) {
	u := &compiledUpdate{legacy: true}
	for _, name := range sortedKeys(upd) {
		a := upd[name]
		act := action{path: NamePath(name)}
		var v attr.Value
		if a.Value != nil {
			v = *a.Value
			if v.Type == attr.Invalid {
				return nil, apierr.Validationf("One or more parameter values were invalid: An AttributeValue may not contain an empty value")
			}
			if err := attr.ValidateSet(v); err != nil {
				return nil, err
			}
		}
		switch a.Action {
		case "", "PUT", "ADD":
			if a.Value == nil {
				return nil, apierr.Validationf("One or more parameter values were invalid: Only DELETE action is allowed when no attribute value is specified")
			}
			if a.Action == "ADD" {
				if v.Type != attr.N && v.Type != attr.L && !v.Type.IsSet() {
					return nil, apierr.Validationf("One or more parameter values were invalid: ADD action is not supported for the type %s", v.Type)
				}
				act.kind, act.arg = actAdd, v
			} else {
				act.kind, act.value = actSet, constValue{v}
			}
		case "DELETE":
			act.kind = actRemove
			if a.Value != nil {
				if !v.Type.IsSet() {
					return nil, apierr.Validationf("One or more parameter values were invalid: DELETE action with value is not supported for the type %s", v.Type)
				}
				act.kind, act.arg = actDelete, v
			}
		default:
			return nil, apierr.Validationf("1 validation error detected: Value '%s' at 'attributeUpdates.%s.member.action' failed to satisfy constraint: Member must satisfy enum value set: [ADD, PUT, DELETE]", a.Action, name)
		}
		u.actions = append(u.actions, act)
	}
	return u, nil
}
