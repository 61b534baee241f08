package wire

import "github.com/tenantdb/tenantdb/internal/apierr"

// The operations table lives above wire, in package dynamo, which wire
// cannot import. ops_test.go (package wire_test, which may import it)
// fills these in from the table before any test runs, so that the tests
// here decode by operation name as the server does.
var (
	// OpNames are the names of all operations, sorted.
	OpNames []string
	// NewInput returns a new input value for the operation named op.
	NewInput func(op string) (any, bool)
)

// decodeOp decodes body as a request for the operation named op, as the
// server does: an unknown name is an UnknownOperation error.
func decodeOp(op string, body []byte) (any, error) {
	in, ok := NewInput(op)
	if !ok {
		return nil, apierr.New(apierr.UnknownOperation, "Unknown operation %s", apierr.Clip(op))
	}
	if err := Decode(body, in); err != nil {
		return nil, err
	}
	return in, nil
}
