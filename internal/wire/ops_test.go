package wire_test

import (
	"github.com/tenantdb/tenantdb/internal/dynamo"
	"github.com/tenantdb/tenantdb/internal/wire"
)

func init() {
	wire.OpNames = dynamo.Names()
	wire.NewInput = func(name string) (any, bool) {
		op, ok := dynamo.Lookup(name)
		if !ok {
			return nil, false
		}
		return op.New(), true
	}
}
