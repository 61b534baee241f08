package remote

import (
	"strconv"
	"strings"

	"github.com/tenantdb/tenantdb/internal/apierr"
	"github.com/tenantdb/tenantdb/internal/expr"
)

// The legacy parameters the gateway translates into expressions before
// the engine sees them (AttributesToGet, KeyConditions); the others
// (Expected, QueryFilter, ScanFilter, AttributeUpdates) are not served
// yet (README).

// projection returns the projection expression of a request that has
// AttributesToGet or ProjectionExpression, and its names (the client's,
// or the gateway's placeholders for AttributesToGet). Errors:
// ValidationException as DynamoDB's for mixing the two kinds.
func projection(atg []string, pe *string, names map[string]string) (*string, map[string]string, error) {
	if atg == nil {
		return pe, names, nil
	}
	if pe != nil {
		return nil, nil, apierr.Validationf("Can not use both expression and non-expression parameters in the same request: Non-expression parameters: {AttributesToGet} Expression parameters: {ProjectionExpression}")
	}
	if names != nil {
		return nil, nil, apierr.Validationf("ExpressionAttributeNames can only be specified when using expressions")
	}
	if _, err := expr.LegacyAttributesToGet(atg); err != nil {
		return nil, nil, err
	}
	out := make(map[string]string, len(atg))
	var b strings.Builder
	for i, n := range atg {
		ph := phPrefixName + "a" + strconv.Itoa(i)
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(ph)
		out[ph] = n
	}
	s := b.String()
	return &s, out, nil
}
