package expr

import (
	"sort"
	"strconv"
	"strings"

	"github.com/tenantdb/tenantdb/internal/apierr"
	"github.com/tenantdb/tenantdb/internal/attr"
)

// MaxExpressionLength is DynamoDB's limit on the length of any one
// expression string, in bytes.
const MaxExpressionLength = 4096

// maxAttrNameBytes is DynamoDB's limit on an attribute name.
const maxAttrNameBytes = 65535

// The labels DynamoDB puts in front of an expression's errors, one per
// request parameter.
const (
	labelCondition  = "ConditionExpression"
	labelFilter     = "FilterExpression"
	labelKey        = "KeyConditionExpression"
	labelUpdate     = "UpdateExpression"
	labelProjection = "ProjectionExpression"
)

// invalid returns the Validation error "Invalid <label>: <msg>".
func invalid(label, msg string) error {
	return apierr.Validationf("Invalid %s: %s", label, msg)
}

// name resolves an expression attribute name and marks it used.
func (p *Params) name(key string) (string, bool) {
	n, ok := p.Names[key]
	if ok {
		if p.usedNames == nil {
			p.usedNames = map[string]bool{}
		}
		p.usedNames[key] = true
	}
	return n, ok
}

// value resolves an expression attribute value and marks it used.
func (p *Params) value(key string) (attr.Value, bool) {
	v, ok := p.Values[key]
	if ok {
		if p.usedValues == nil {
			p.usedValues = map[string]bool{}
		}
		p.usedValues[key] = true
	}
	return v, ok
}

// Validate checks the placeholder maps themselves: present maps must not
// be empty, keys must look like #name and :value, and values must be valid.
// Every expression method calls it first, so callers need not; it is
// exported for requests that carry the maps but whose expressions are
// checked elsewhere. The result is remembered: change Names or Values
// after the first call and it is not checked again.
func (p *Params) Validate() error {
	if !p.validated {
		p.validated, p.validateErr = true, p.validate()
	}
	return p.validateErr
}

func (p *Params) validate() error {
	if p.Names != nil && len(p.Names) == 0 {
		return apierr.Validationf("ExpressionAttributeNames must not be empty")
	}
	for _, k := range sortedKeys(p.Names) {
		if !validPlaceholder(k, '#') {
			return apierr.Validationf("ExpressionAttributeNames contains invalid key: Syntax error; key: \"%s\"", k)
		}
		// NB: the limits of any attribute name (schema.CheckAttrName);
		// the wording is ours, DynamoDB does not document it.
		switch n := p.Names[k]; {
		case n == "":
			return apierr.Validationf("ExpressionAttributeNames contains invalid value: An attribute name cannot be empty for key %s", k)
		case len(n) > maxAttrNameBytes:
			return apierr.Validationf("ExpressionAttributeNames contains invalid value: Attribute name has exceeded the maximum size limit of 65535 bytes for key %s", k)
		}
	}
	if p.Values != nil && len(p.Values) == 0 {
		return apierr.Validationf("ExpressionAttributeValues must not be empty")
	}
	for _, k := range sortedKeys(p.Values) {
		if !validPlaceholder(k, ':') {
			return apierr.Validationf("ExpressionAttributeValues contains invalid key: Syntax error; key: \"%s\"", k)
		}
	}
	for _, k := range sortedKeys(p.Values) {
		v := p.Values[k]
		if v.Type == attr.Invalid {
			return apierr.Validationf("ExpressionAttributeValues contains invalid value: Supplied AttributeValue is empty, must contain exactly one of the supported datatypes for key %s", k)
		}
		if err := attr.ValidateSet(v); err != nil {
			return apierr.Validationf("ExpressionAttributeValues contains invalid value: %s for key %s", apierr.Message(err), k)
		}
	}
	return nil
}

func validPlaceholder(k string, prefix byte) bool {
	if len(k) < 2 || k[0] != prefix {
		return false
	}
	for i := 1; i < len(k); i++ {
		if !isIdentPart(k[i]) {
			return false
		}
	}
	return true
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// CheckUnused reports placeholders that no expression of the request used;
// call it after compiling all of a request's expressions. Names are
// checked before values, as DynamoDB does.
func (p *Params) CheckUnused() error {
	if unused := unusedKeys(p.Names, p.usedNames); unused != "" {
		return apierr.Validationf("Value provided in ExpressionAttributeNames unused in expressions: keys: {%s}", unused)
	}
	if unused := unusedKeys(p.Values, p.usedValues); unused != "" {
		return apierr.Validationf("Value provided in ExpressionAttributeValues unused in expressions: keys: {%s}", unused)
	}
	return nil
}

func unusedKeys[V any](m map[string]V, used map[string]bool) string {
	var unused []string
	for _, k := range sortedKeys(m) {
		if !used[k] {
			unused = append(unused, k)
		}
	}
	return strings.Join(unused, ", ")
}

// precheck applies the checks every expression parameter shares: the
// placeholder maps, emptiness and length.
func (p *Params) precheck(label, s string) error {
	if err := p.Validate(); err != nil {
		return err
	}
	if s == "" {
		return invalid(label, "The expression can not be empty;")
	}
	if len(s) > MaxExpressionLength {
		return invalid(label, "Expression size has exceeded the maximum allowed size; expression size: "+strconv.Itoa(len(s)))
	}
	return nil
}

// Condition compiles a ConditionExpression. Errors are Validation errors
// labelled "Invalid ConditionExpression: ...".
func (p *Params) Condition(s string) (Condition, error) {
	return p.condition(labelCondition, s)
}

// Filter compiles a FilterExpression: the condition language, with errors
// labelled "Invalid FilterExpression: ...".
//
// The Condition it returns also has a method TopNames() []string: the
// top-level attributes the filter reads (a Query refuses a filter on key
// attributes).
func (p *Params) Filter(s string) (Condition, error) {
	c, _, err := p.compileCondition(labelFilter, s, true)
	if err != nil {
		return nil, err
	}
	return &filterCondition{compiledCondition: c}, nil
}

func (p *Params) condition(label, s string) (Condition, error) {
	c, _, err := p.compileCondition(label, s, false)
	if err != nil {
		return nil, err
	}
	return c, nil
}

// compileCondition parses and compiles a condition, returning the syntax
// tree too (the key condition analysis works on it); with top, the
// compiled condition records the top-level names its paths start with.
func (p *Params) compileCondition(label, s string, top bool) (*compiledCondition, node, error) {
	if err := p.precheck(label, s); err != nil {
		return nil, nil, err
	}
	n, err := parseCondition(s)
	if err != nil {
		return nil, nil, invalid(label, err.Error())
	}
	c := &compiler{params: p, collectTop: top}
	root := c.cond(n)
	if msg := c.first(conditionOrder); msg != "" {
		return nil, nil, invalid(label, msg)
	}
	return &compiledCondition{root: root, top: c.top}, n, nil
}

// Update compiles an UpdateExpression. Errors are Validation errors
// labelled "Invalid UpdateExpression: ...".
func (p *Params) Update(s string) (Update, error) {
	if err := p.precheck(labelUpdate, s); err != nil {
		return nil, err
	}
	n, err := parseUpdate(s)
	if err != nil {
		return nil, invalid(labelUpdate, err.Error())
	}
	c := &compiler{params: p}
	u := c.update(n)
	if msg := c.first(updateOrder); msg != "" {
		return nil, invalid(labelUpdate, msg)
	}
	return u, nil
}

// Projection compiles a ProjectionExpression. Errors are Validation
// errors labelled "Invalid ProjectionExpression: ...".
func (p *Params) Projection(s string) (Projection, error) {
	if err := p.precheck(labelProjection, s); err != nil {
		return nil, err
	}
	n, err := parseProjection(s)
	if err != nil {
		return nil, invalid(labelProjection, err.Error())
	}
	c := &compiler{params: p}
	paths := make([]Path, len(n.paths))
	allResolved := true
	for i, pn := range n.paths {
		var ok bool
		paths[i], ok = c.path(pn)
		allResolved = allResolved && ok
	}
	if allResolved {
		overlap, conflict := pathsClash(paths)
		c.errorf(catOverlap, "%s", overlap)
		c.errorf(catConflict, "%s", conflict)
	}
	if msg := c.first(projectionOrder); msg != "" {
		return nil, invalid(labelProjection, msg)
	}
	return newProjection(paths), nil
}
