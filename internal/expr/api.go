// Package expr implements DynamoDB's expression languages: key condition,
// condition/filter, update and projection expressions, with a real lexer,
// parser and AST, placeholder resolution and validation as DynamoDB does
// it, evaluation against items, and translation of the legacy parameters
// (Expected, KeyConditions, QueryFilter, ScanFilter, AttributesToGet,
// AttributeUpdates) into the same AST.
package expr

import (
	"github.com/tenantdb/tenantdb/internal/attr"
)

// Params holds one request's ExpressionAttributeNames and
// ExpressionAttributeValues and tracks which were used, because DynamoDB
// rejects unused or undefined placeholders across all of a request's
// expressions.
type Params struct {
	Names  map[string]string
	Values map[string]attr.Value

	usedNames  map[string]bool
	usedValues map[string]bool

	validated   bool  // Validate has run
	validateErr error // and returned this
}

// NewParams returns Params for one request.
func NewParams(names map[string]string, values map[string]attr.Value) *Params {
	return &Params{Names: names, Values: values} // the used sets are made on first use
}

// Path is a document path: a top-level attribute name followed by map keys
// and list indexes (a.b[3].c).
type Path []PathElem

// PathElem is one step of a Path: a name (Index < 0) or a list index.
type PathElem struct {
	Name  string
	Index int
}

// Top returns the top-level attribute name of p.
func (p Path) Top() string { return p[0].Name }

// KeyOp is a key condition operator on the sort key.
type KeyOp uint8

// The key condition operators.
const (
	KeyEQ KeyOp = iota + 1
	KeyLT
	KeyLE
	KeyGT
	KeyGE
	KeyBetween
	KeyBeginsWith
)

// KeyCondition is a resolved key condition: equality on the partition key
// and an optional condition on the sort key.
type KeyCondition struct {
	HashName  string
	HashValue attr.Value
	// RangeName is "" when the condition has no sort key part.
	RangeName   string
	RangeOp     KeyOp
	RangeValues []attr.Value // 1 value, or 2 for KeyBetween
}

// Condition is a compiled condition or filter expression.
type Condition interface {
	// Eval reports whether item (nil or empty for a missing item) satisfies
	// the condition. An error is a ValidationException that only the item's
	// content can reveal (rare; most errors are found at compile time).
	Eval(item attr.Item) (bool, error)
}

// Projection is a compiled projection expression or AttributesToGet.
type Projection interface {
	// Apply returns a new item holding only the projected paths.
	Apply(item attr.Item) attr.Item
	// TopNames returns the distinct top-level attribute names projected.
	TopNames() []string
}

// Update is a compiled update expression or AttributeUpdates.
type Update interface {
	// Apply returns the updated copy of item (item itself is not changed)
	// and the paths that were set or removed, for ReturnValues UPDATED_*.
	// Errors are ValidationExceptions such as an ADD to a non-number or an
	// invalid list index on the item.
	Apply(item attr.Item) (attr.Item, []Path, error)
	// Paths returns every path the update writes, to check that no key
	// attribute is changed.
	Paths() []Path
}

// The functions below are implemented in the package's other files:
//
//	func (p *Params) KeyCondition(s string, hashKey, rangeKey string) (*KeyCondition, error)
//	    parses a KeyConditionExpression and resolves it against the given key
//	    names (rangeKey "" if the table/index has none), with DynamoDB's errors
//	    ("Query condition missed key schema element: pk", ...).
//	func (p *Params) Condition(s string) (Condition, error)       // ConditionExpression
//	func (p *Params) Filter(s string) (Condition, error)          // FilterExpression (same language, its own error label)
//	func (p *Params) Update(s string) (Update, error)             // UpdateExpression
//	func (p *Params) Projection(s string) (Projection, error)     // ProjectionExpression
//	func (p *Params) CheckUnused() error
//	    "Value provided in ExpressionAttributeValues unused in expressions: keys: {:v}"
//	    "Value provided in ExpressionAttributeNames unused in expressions: keys: {#n}"
//
//	func LegacyExpected(exp map[string]wire.ExpectedAttributeValue, op string) (Condition, error)
//	func LegacyFilter(conds map[string]wire.Condition, op string) (Condition, error)   // QueryFilter, ScanFilter
//	func LegacyKeyConditions(conds map[string]wire.Condition, hashKey, rangeKey string) (*KeyCondition, error)
//	func LegacyAttributesToGet(names []string) (Projection, error)
//	func LegacyAttributeUpdates(upd map[string]wire.AttributeValueUpdate) (Update, error)
//	func ProjectPaths(item attr.Item, paths []Path) attr.Item  // for UPDATED_OLD/UPDATED_NEW
//
// Also: (*Params).Validate checks the placeholder maps themselves (every
// expression method calls it), NamePath builds a top-level Path, and
// Path has String, Equal and Get.
//
// Errors are *apierr.Error of kind Validation with DynamoDB's messages,
// e.g. "Invalid ConditionExpression: Syntax error; token: \"=\", near: \"== :v\"" for "a == :v".
