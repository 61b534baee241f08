package engine

import (
	"fmt"
	"testing"

	"github.com/tenantdb/tenantdb/internal/apierr"
	"github.com/tenantdb/tenantdb/internal/tenancy"
	"github.com/tenantdb/tenantdb/internal/wire"
)

// A tenant environment may own at most MaxTenantTables tables; other
// tenants, other environments and the operator are not affected, and a
// deleted table frees its slot.
func TestMaxTenantTables(t *testing.T) {
	env := openEnv(t)
	env.opts.MaxTenantTables = 3
	env.reopen()

	a := env.tenant(tenancy.RoleAdmin)
	for i := 0; i < 3; i++ {
		a.create(tableInput(fmt.Sprintf("own%d", i), false))
	}
	_, err := env.e.CreateTable(testCtx, a.scope("CreateTable"), tableInput("own3", false))
	wantErr(t, err, apierr.LimitExceeded, "Subscriber limit exceeded: the number of tables exceeds the limit of 3 tables")

	test := a
	test.p.Env = "test"
	test.create(tableInput("own3", false))
	env.tenant(tenancy.RoleAdmin).create(tableInput("own3", false))
	for i := 0; i < 4; i++ {
		env.operator().create(tableInput(fmt.Sprintf("shared%d", i), false))
	}

	if _, err := env.e.DeleteTable(testCtx, a.scope("DeleteTable"), &wire.DeleteTableInput{TableName: "own0"}); err != nil {
		t.Fatalf("DeleteTable: %v", err)
	}
	a.create(tableInput("own3", false))
}
