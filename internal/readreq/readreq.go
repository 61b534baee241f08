// Package readreq holds DynamoDB's rules on the parameters of a Query or
// Scan that do not depend on where the items are stored: Limit,
// ReturnConsumedCapacity, ConsistentRead on an index, Select and its
// combinations with a projection, filters naming a Query's key
// attributes, and what a secondary index must project. Every backend
// checks a read with Check, so the embedded engine and a gateway over a
// DynamoDB-API engine refuse the same requests with the same messages.
package readreq

import (
	"strings"

	"github.com/tenantdb/tenantdb/internal/apierr"
	"github.com/tenantdb/tenantdb/internal/expr"
	"github.com/tenantdb/tenantdb/internal/schema"
)

// Select is a resolved Select parameter.
type Select uint8

const (
	All       Select = iota // ALL_ATTRIBUTES
	Projected               // ALL_PROJECTED_ATTRIBUTES
	Specific                // SPECIFIC_ATTRIBUTES
	Count                   // COUNT
)

// Params are the parameters of one Query or Scan that Check validates.
type Params struct {
	Index      *schema.Index // nil: the base table
	Select     string        // the request's Select ("" if absent)
	Consistent *bool
	Limit      *int32
	Capacity   string // ReturnConsumedCapacity

	HasFilter     bool
	FilterNames   []string // top-level attributes the filter reads, if known
	FilterNamesOK bool     // FilterNames lists them all (index projection rules apply)
	FilterParam   string   // "Filter Expression", "QueryFilter" or "ScanFilter", for messages
	Proj          expr.Projection
	ProjParam     string // "ProjectionExpression" or "AttributesToGet", for messages
	// QueryKeyFilter: a Query's filter must not name the key attributes of
	// the table or index it reads.
	QueryKeyFilter bool
}

// Rules is what Check resolved.
type Rules struct {
	Limit        int // 0: none
	CapacityMode string
	Consistent   bool
	Select       Select
	// FetchBase: a read of a local secondary index must read each base
	// item, for attributes the index does not project (Select
	// ALL_ATTRIBUTES, or a projection or filter naming them), as DynamoDB
	// does.
	FetchBase bool
}

// Check validates p for a read of table t as DynamoDB does. Errors are
// ValidationExceptions with DynamoDB's messages.
func Check(t *schema.Table, p Params) (Rules, error) {
	var r Rules
	ix := p.Index
	if p.Limit != nil && *p.Limit < 1 {
		return r, apierr.Validationf("1 validation error detected: Value '%d' at 'limit' failed to satisfy constraint: Member must have value greater than or equal to 1", *p.Limit)
	}
	if p.Limit != nil {
		r.Limit = int(*p.Limit)
	}
	switch p.Capacity {
	case "", "NONE", "TOTAL", "INDEXES":
		r.CapacityMode = p.Capacity
	default:
		return r, apierr.Validationf("1 validation error detected: Value '%s' at 'returnConsumedCapacity' failed to satisfy constraint: Member must satisfy enum value set: [INDEXES, TOTAL, NONE]", p.Capacity)
	}
	if p.Consistent != nil && *p.Consistent {
		if ix != nil && !ix.Local {
			return r, apierr.Validationf("Consistent reads are not supported on global secondary indexes")
		}
		r.Consistent = true
	}

	hasProj := p.Proj != nil
	sel := p.Select
	if sel == "" {
		switch {
		case hasProj:
			sel = "SPECIFIC_ATTRIBUTES"
		case ix != nil:
			sel = "ALL_PROJECTED_ATTRIBUTES"
		default:
			sel = "ALL_ATTRIBUTES"
		}
	}
	switch sel {
	case "COUNT":
		if hasProj {
			return r, apierr.Validationf("Cannot specify the %s when choosing to get only the Count", p.ProjParam)
		}
		r.Select = Count
	case "ALL_ATTRIBUTES":
		if hasProj {
			return r, apierr.Validationf("Cannot specify the %s when choosing to get ALL_ATTRIBUTES", p.ProjParam)
		}
		if ix != nil && !ix.Local && ix.ProjectionType != "ALL" {
			return r, apierr.Validationf("One or more parameter values were invalid: Select type ALL_ATTRIBUTES is not supported for global secondary index %s because its projection type is not ALL", ix.Name)
		}
		r.Select = All
	case "ALL_PROJECTED_ATTRIBUTES":
		if ix == nil {
			return r, apierr.Validationf("ALL_PROJECTED_ATTRIBUTES can be used only when Querying using an IndexName")
		}
		if hasProj {
			return r, apierr.Validationf("Cannot specify the %s when choosing to get ALL_PROJECTED_ATTRIBUTES", p.ProjParam)
		}
		r.Select = Projected
	case "SPECIFIC_ATTRIBUTES":
		if !hasProj {
			return r, apierr.Validationf("Must specify the AttributesToGet or ProjectionExpression when choosing to get SPECIFIC_ATTRIBUTES")
		}
		r.Select = Specific
	default:
		return r, apierr.Validationf("1 validation error detected: Value '%s' at 'select' failed to satisfy constraint: Member must satisfy enum value set: [SPECIFIC_ATTRIBUTES, COUNT, ALL_ATTRIBUTES, ALL_PROJECTED_ATTRIBUTES]", sel)
	}

	if p.QueryKeyFilter { // FilterNames: those known, all of them if FilterNamesOK
		keys := []schema.KeyAttr{t.Hash, t.Range}
		if ix != nil {
			keys = []schema.KeyAttr{ix.Hash, ix.Range}
		}
		for _, k := range keys {
			for _, n := range p.FilterNames {
				if k.Name != "" && n == k.Name {
					return r, apierr.Validationf("%s can only contain non-primary key attributes: Primary key attribute: %s", p.FilterParam, n)
				}
			}
		}
	}

	if ix == nil || ix.ProjectionType == "ALL" {
		return r, nil
	}
	// A non-ALL index: which attributes must come from the base item?
	var missing []string
	if r.Select == Specific {
		missing = unprojected(t, ix, p.Proj.TopNames())
	}
	var filterMissing []string
	if p.HasFilter && p.FilterNamesOK {
		filterMissing = unprojected(t, ix, p.FilterNames)
	}
	if !ix.Local {
		if len(missing) > 0 {
			return r, apierr.Validationf("One or more parameter values were invalid: Global secondary index %s does not project [%s]", ix.Name, strings.Join(missing, ", "))
		}
		if len(filterMissing) > 0 {
			return r, apierr.Validationf("One or more parameter values were invalid: Secondary index %s does not project one or more filter attributes: [%s]", ix.Name, strings.Join(filterMissing, ", "))
		}
		return r, nil
	}
	r.FetchBase = r.Select == All || len(missing) > 0 || len(filterMissing) > 0 ||
		(p.HasFilter && !p.FilterNamesOK)
	return r, nil
}

// unprojected returns the names that index ix does not hold.
func unprojected(t *schema.Table, ix *schema.Index, names []string) []string {
	var out []string
	for _, n := range names {
		if !t.Projects(ix, n) {
			out = append(out, n)
		}
	}
	return out
}
