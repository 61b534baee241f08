//go:build benchbypass

package node_test

import (
	"testing"

	"github.com/tenantdb/tenantdb/internal/node"
)

// TestBenchBypassTenancy: with the option (only in benchbypass builds), a
// known access key id is trusted without its signature after its first,
// verified, request.
func TestBenchBypassTenancy(t *testing.T) {
	var o node.Options
	o.InMemory, o.DefaultTenant, o.BenchBypassTenancy = true, true, true
	n, ep := start(t, o)
	d := n.Bootstrap().Default
	if err := listTables(ep, d.AccessKeyID(), "wrong"+d.Secret); err == nil {
		t.Fatal("the first request was accepted with the wrong secret")
	}
	if err := listTables(ep, d.AccessKeyID(), d.Secret); err != nil {
		t.Fatalf("first signed request: %v", err)
	}
	if err := listTables(ep, d.AccessKeyID(), "wrong"+d.Secret); err != nil {
		t.Errorf("bypass: a known key with the wrong secret was refused: %v", err)
	}
}
