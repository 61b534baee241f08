package readreq

import (
	"strings"

	"github.com/tenantdb/tenantdb/internal/apierr"
	"github.com/tenantdb/tenantdb/internal/attr"
	"github.com/tenantdb/tenantdb/internal/expr"
	"github.com/tenantdb/tenantdb/internal/wire"
)

// Input is the expression part of a Query or Scan request.
type Input struct {
	Query        bool
	KeyCondExpr  *string
	KeyConds     map[string]wire.Condition
	FilterExpr   *string
	LegacyFilter map[string]wire.Condition // QueryFilter or ScanFilter
	LegacyName   string                    // "QueryFilter" or "ScanFilter"
	CondOp       string
	ProjExpr     *string
	AttrsToGet   []string
	Names        map[string]string
	Values       map[string]attr.Value
}

// Exprs are a request's compiled expressions.
type Exprs struct {
	KC            *expr.KeyCondition // Query only
	Filter        expr.Condition
	FilterNames   []string
	FilterNamesOK bool
	FilterParam   string
	Proj          expr.Projection
	ProjParam     string
}

// topNamer is implemented by compiled conditions that can list the
// top-level attributes they read (to reject filters on key attributes and
// on attributes a secondary index does not project, as DynamoDB does).
type topNamer interface{ TopNames() []string }

// Compile validates the request's use of expressions and legacy parameters
// and compiles them; hashKey and rangeKey name the key of the table or
// index being queried.
func (in Input) Compile(hashKey, rangeKey string) (*Exprs, error) {
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
func (in Input) validate() (bool, error) {
	var legacy, exprs []string
	if len(in.AttrsToGet) > 0 {
		legacy = append(legacy, "AttributesToGet")
	}
	if in.LegacyFilter != nil {
		legacy = append(legacy, in.LegacyName)
	}
	if in.CondOp != "" {
		legacy = append(legacy, "ConditionalOperator")
	}
	// NB: KeyConditions combines with the other expression parameters
	// (FilterExpression, ProjectionExpression), as DynamoDB allows; only
	// with KeyConditionExpression is it a mix.
	if in.KeyConds != nil && in.KeyCondExpr != nil {
		legacy = append(legacy, "KeyConditions")
	}
	if in.AttrsToGet != nil && len(in.AttrsToGet) == 0 {
		return false, apierr.Validationf("1 validation error detected: Value '[]' at 'attributesToGet' failed to satisfy constraint: Member must have length greater than or equal to 1")
	}
	if in.ProjExpr != nil {
		exprs = append(exprs, "ProjectionExpression")
	}
	if in.FilterExpr != nil {
		exprs = append(exprs, "FilterExpression")
	}
	if in.KeyCondExpr != nil {
		exprs = append(exprs, "KeyConditionExpression")
	}
	switch {
	case len(legacy) > 0 && len(exprs) > 0:
		return false, apierr.Validationf("Can not use both expression and non-expression parameters in the same request: Non-expression parameters: {%s} Expression parameters: {%s}",
			strings.Join(legacy, ", "), strings.Join(exprs, ", "))
	case in.Names != nil && len(exprs) == 0:
		return false, apierr.Validationf("ExpressionAttributeNames can only be specified when using expressions")
	case in.Values != nil && in.FilterExpr == nil && in.KeyCondExpr == nil:
		return false, apierr.Validationf("ExpressionAttributeValues can only be specified when using expressions: %s", readNullExprs(in.Query))
	case in.Names != nil && len(in.Names) == 0:
		return false, apierr.Validationf("ExpressionAttributeNames must not be empty")
	case in.Values != nil && len(in.Values) == 0:
		return false, apierr.Validationf("ExpressionAttributeValues must not be empty")
	case in.Query && in.KeyConds == nil && in.KeyCondExpr == nil:
		return false, apierr.Validationf("Either the KeyConditions or KeyConditionExpression parameter must be specified in the request.")
	}
	return len(exprs) > 0, nil
}

// compileExprs compiles the expression parameters.
func (in Input) compileExprs(hashKey, rangeKey string) (*Exprs, error) {
	out := &Exprs{}
	var err error
	p := expr.NewParams(in.Names, in.Values)
	if in.KeyCondExpr != nil {
		if out.KC, err = p.KeyCondition(*in.KeyCondExpr, hashKey, rangeKey); err != nil {
			return nil, err
		}
	} else if in.KeyConds != nil {
		if out.KC, err = expr.LegacyKeyConditions(in.KeyConds, hashKey, rangeKey); err != nil {
			return nil, err
		}
	}
	if in.FilterExpr != nil {
		if out.Filter, err = p.Filter(*in.FilterExpr); err != nil {
			return nil, err
		}
		out.FilterParam = "Filter Expression"
		if tn, ok := out.Filter.(topNamer); ok {
			// NB: the names serve the key check only. filterNamesOK stays
			// false: DynamoDB evaluates a filter expression on a GSI
			// against what the index projects (an attribute it does not
			// project is absent, not an error), and an LSI reads the
			// base item for it.
			out.FilterNames = tn.TopNames()
		}
	}
	if in.ProjExpr != nil {
		if out.Proj, err = p.Projection(*in.ProjExpr); err != nil {
			return nil, err
		}
		out.ProjParam = "ProjectionExpression"
	}
	if err := p.CheckUnused(); err != nil {
		return nil, err
	}
	return out, nil
}

// compileLegacy compiles the legacy parameters.
func (in Input) compileLegacy(hashKey, rangeKey string) (*Exprs, error) {
	out := &Exprs{}
	var err error
	if in.KeyConds != nil {
		if out.KC, err = expr.LegacyKeyConditions(in.KeyConds, hashKey, rangeKey); err != nil {
			return nil, err
		}
	}
	if in.LegacyFilter != nil {
		if out.Filter, err = expr.LegacyFilter(in.LegacyFilter, in.CondOp); err != nil {
			return nil, err
		}
		out.FilterParam = in.LegacyName
		out.FilterNamesOK = true
		for name := range in.LegacyFilter {
			out.FilterNames = append(out.FilterNames, name)
		}
	}
	if len(in.AttrsToGet) > 0 {
		if out.Proj, err = expr.LegacyAttributesToGet(in.AttrsToGet); err != nil {
			return nil, err
		}
		out.ProjParam = "AttributesToGet"
	}
	return out, nil
}

func readNullExprs(query bool) string {
	if query {
		return "KeyConditionExpression and FilterExpression are null"
	}
	return "FilterExpression is null"
}

// QueryInput returns the expression part of a Query.
func QueryInput(in *wire.QueryInput) Input {
	return Input{
		Query:        true,
		KeyCondExpr:  in.KeyConditionExpression,
		KeyConds:     in.KeyConditions,
		FilterExpr:   in.FilterExpression,
		LegacyFilter: in.QueryFilter,
		LegacyName:   "QueryFilter",
		CondOp:       in.ConditionalOperator,
		ProjExpr:     in.ProjectionExpression,
		AttrsToGet:   in.AttributesToGet,
		Names:        in.ExpressionAttributeNames,
		Values:       in.ExpressionAttributeValues,
	}
}

// ScanInput returns the expression part of a Scan.
func ScanInput(in *wire.ScanInput) Input {
	return Input{
		FilterExpr:   in.FilterExpression,
		LegacyFilter: in.ScanFilter,
		LegacyName:   "ScanFilter",
		CondOp:       in.ConditionalOperator,
		ProjExpr:     in.ProjectionExpression,
		AttrsToGet:   in.AttributesToGet,
		Names:        in.ExpressionAttributeNames,
		Values:       in.ExpressionAttributeValues,
	}
}

// Fill copies what Check needs of compiled expressions into p.
func (x *Exprs) Fill(p *Params) {
	p.HasFilter = x.Filter != nil
	p.FilterNames, p.FilterNamesOK, p.FilterParam = x.FilterNames, x.FilterNamesOK, x.FilterParam
	p.Proj, p.ProjParam = x.Proj, x.ProjParam
}
