package engine

import (
	"strings"

	"github.com/tenantdb/tenantdb/internal/apierr"
	"github.com/tenantdb/tenantdb/internal/attr"
	"github.com/tenantdb/tenantdb/internal/expr"
	"github.com/tenantdb/tenantdb/internal/wire"
)

// readExprInput is the expression part of a Query or Scan request.
type readExprInput struct {
	query        bool
	keyCondExpr  *string
	keyConds     map[string]wire.Condition
	filterExpr   *string
	legacyFilter map[string]wire.Condition // QueryFilter or ScanFilter
	legacyName   string                    // "QueryFilter" or "ScanFilter"
	condOp       string
	projExpr     *string
	attrsToGet   []string
	names        map[string]string
	values       map[string]attr.Value
}

// readExprs are a request's compiled expressions.
type readExprs struct {
	kc            *expr.KeyCondition // Query only
	filter        expr.Condition
	filterNames   []string
	filterNamesOK bool
	filterParam   string
	proj          expr.Projection
	projParam     string
}

// topNamer is implemented by compiled conditions that can list the
// top-level attributes they read (to reject filters on key attributes and
// on attributes a secondary index does not project, as DynamoDB does).
type topNamer interface{ TopNames() []string }

// compile validates the request's use of expressions and legacy parameters
// and compiles them; hashKey and rangeKey name the key of the table or
// index being queried.
func (in *readExprInput) compile(hashKey, rangeKey string) (*readExprs, error) {
	usesExprs, err := in.validate()
	if err != nil {
		return nil, err
	}
	if usesExprs {
		return in.compileExprs(hashKey, rangeKey)
	}
	return in.compileLegacy(hashKey, rangeKey)
}

// validate applies DynamoDB's rules on combining the parameters and reports
// whether the request uses expressions.
func (in *readExprInput) validate() (bool, error) {
	var legacy, exprs []string
	if len(in.attrsToGet) > 0 {
		legacy = append(legacy, "AttributesToGet")
	}
	if in.legacyFilter != nil {
		legacy = append(legacy, in.legacyName)
	}
	if in.condOp != "" {
		legacy = append(legacy, "ConditionalOperator")
	}
	// NB: KeyConditions combines with the other expression parameters
	// (FilterExpression, ProjectionExpression), as DynamoDB allows; only
	// with KeyConditionExpression is it a mix.
	if in.keyConds != nil && in.keyCondExpr != nil {
		legacy = append(legacy, "KeyConditions")
	}
	if in.attrsToGet != nil && len(in.attrsToGet) == 0 {
		return false, apierr.Validationf("1 validation error detected: Value '[]' at 'attributesToGet' failed to satisfy constraint: Member must have length greater than or equal to 1")
	}
	if in.projExpr != nil {
		exprs = append(exprs, "ProjectionExpression")
	}
	if in.filterExpr != nil {
		exprs = append(exprs, "FilterExpression")
	}
	if in.keyCondExpr != nil {
		exprs = append(exprs, "KeyConditionExpression")
	}
	switch {
	case len(legacy) > 0 && len(exprs) > 0:
		return false, apierr.Validationf("Can not use both expression and non-expression parameters in the same request: Non-expression parameters: {%s} Expression parameters: {%s}",
			strings.Join(legacy, ", "), strings.Join(exprs, ", "))
	case in.names != nil && len(exprs) == 0:
		return false, apierr.Validationf("ExpressionAttributeNames can only be specified when using expressions")
	case in.values != nil && in.filterExpr == nil && in.keyCondExpr == nil:
		return false, apierr.Validationf("ExpressionAttributeValues can only be specified when using expressions: %s", readNullExprs(in.query))
	case in.names != nil && len(in.names) == 0:
		return false, apierr.Validationf("ExpressionAttributeNames must not be empty")
	case in.values != nil && len(in.values) == 0:
		return false, apierr.Validationf("ExpressionAttributeValues must not be empty")
	case in.query && in.keyConds == nil && in.keyCondExpr == nil:
		return false, apierr.Validationf("Either the KeyConditions or KeyConditionExpression parameter must be specified in the request.")
	}
	return len(exprs) > 0, nil
}

// compileExprs compiles the expression parameters.
func (in *readExprInput) compileExprs(hashKey, rangeKey string) (*readExprs, error) {
	out := &readExprs{}
	var err error
	p := expr.NewParams(in.names, in.values)
	if in.keyCondExpr != nil {
		if out.kc, err = p.KeyCondition(*in.keyCondExpr, hashKey, rangeKey); err != nil {
			return nil, err
		}
	} else if in.keyConds != nil {
		if out.kc, err = expr.LegacyKeyConditions(in.keyConds, hashKey, rangeKey); err != nil {
			return nil, err
		}
	}
	if in.filterExpr != nil {
		if out.filter, err = p.Filter(*in.filterExpr); err != nil {
			return nil, err
		}
		out.filterParam = "Filter Expression"
		if tn, ok := out.filter.(topNamer); ok {
			// NB: the names serve the key check only. filterNamesOK stays
			// false: DynamoDB evaluates a filter expression on a GSI
			// against what the index projects (an attribute it does not
			// project is absent, not an error), and an LSI reads the
			// base item for it.
			out.filterNames = tn.TopNames()
		}
	}
	if in.projExpr != nil {
		if out.proj, err = p.Projection(*in.projExpr); err != nil {
			return nil, err
		}
		out.projParam = "ProjectionExpression"
	}
	if err := p.CheckUnused(); err != nil {
		return nil, err
	}
	return out, nil
}

// compileLegacy compiles the legacy parameters.
func (in *readExprInput) compileLegacy(hashKey, rangeKey string) (*readExprs, error) {
	out := &readExprs{}
	var err error
	if in.keyConds != nil {
		if out.kc, err = expr.LegacyKeyConditions(in.keyConds, hashKey, rangeKey); err != nil {
			return nil, err
		}
	}
	if in.legacyFilter != nil {
		if out.filter, err = expr.LegacyFilter(in.legacyFilter, in.condOp); err != nil {
			return nil, err
		}
		out.filterParam = in.legacyName
		out.filterNamesOK = true
		for name := range in.legacyFilter {
			out.filterNames = append(out.filterNames, name)
		}
	}
	if len(in.attrsToGet) > 0 {
		if out.proj, err = expr.LegacyAttributesToGet(in.attrsToGet); err != nil {
			return nil, err
		}
		out.projParam = "AttributesToGet"
	}
	return out, nil
}

func readNullExprs(query bool) string {
	if query {
		return "KeyConditionExpression and FilterExpression are null"
	}
	return "FilterExpression is null"
}
